// `speaker-agent volume [get | set N | up | down | mute | unmute]`: the speaker's volume through the same
// mixer (card + control) the agent's device functions use.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { MixerError, type MixerState } from '../../agent/mixer/mixer.js';
import { VOLUME_STEP_PERCENT } from '../../protocol/functions.js';
import { settings } from '../cliContext.js';
import { openMixer } from '../../agent/device.js';
import { emit } from '../output.js';

const ACTIONS = ['get', 'set', 'up', 'down', 'mute', 'unmute'] as const;
type Action = (typeof ACTIONS)[number];

export function registerVolume(program: Command): void {
  program
    .command('volume')
    .description('read or change the speaker volume')
    .argument('[action]', `${ACTIONS.join(' | ')}`, 'get')
    .argument('[percent]', 'for set: 0..100')
    .option('--json', 'print JSON {volumePercent, muted, mixer}')
    .addHelpText(
      'after',
      `\nup/down change the volume by ${VOLUME_STEP_PERCENT} % (like the assistant's adjust_device_volume).\n\nExamples:\n  speaker-agent volume\n  speaker-agent volume set 40\n  speaker-agent volume up --json\n  speaker-agent volume mute`,
    )
    .action(async (action: string, percent: string | undefined, o: { json?: boolean }) => {
      if (!(ACTIONS as readonly string[]).includes(action)) {
        throw new AgentError('usage', `unknown volume action "${action}": use ${ACTIONS.join(', ')}`);
      }
      const mixer = await openMixer(settings().settings);
      let state: MixerState;
      try {
        state = await apply(mixer, action as Action, percent);
      } catch (err) {
        if (err instanceof MixerError) throw new AgentError('mixer', `${err.message}`, { cause: err });
        throw err;
      }
      emit(o, { ...state, mixer: mixer.description }, (r) => `volume ${r.volumePercent}%${r.muted ? ' (muted)' : ''}   [${r.mixer}]`);
    });
}

async function apply(mixer: Awaited<ReturnType<typeof openMixer>>, action: Action, percent: string | undefined): Promise<MixerState> {
  switch (action) {
    case 'get':
      return mixer.get();
    case 'set': {
      const n = Number(percent);
      if (percent === undefined || percent.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100) {
        throw new AgentError('usage', `volume set needs a level from 0 to 100, got ${percent === undefined ? 'nothing' : JSON.stringify(percent)}`);
      }
      return mixer.setVolume(n);
    }
    case 'up':
    case 'down': {
      const now = await mixer.get();
      return mixer.setVolume(now.volumePercent + (action === 'up' ? VOLUME_STEP_PERCENT : -VOLUME_STEP_PERCENT));
    }
    case 'mute':
      return mixer.setMuted(true);
    case 'unmute':
      return mixer.setMuted(false);
  }
}
