// `speaker-agent mic [off|on]`: the privacy mute. Through the running daemon (POST /mic/off, /mic/on): the
// capture device is closed, nothing is sent, and the mute is kept across restarts (<state dir>/mic.json).
// With no daemon running, the file is written directly, so the agent starts muted (or not) next time.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import type { ListeningStatus } from '../../agent/agent.js';
import { micStatePath, readMicMuted, writeMicMuted } from '../../agent/micMute.js';
import { statusSocketCandidates } from '../../agent/statusServer.js';
import { settings } from '../cliContext.js';
import { emit } from '../output.js';
import { readStatus, sendCommand } from '../statusClient.js';

export function registerMic(program: Command): void {
  program
    .command('mic')
    .description('privacy mute: `mic off` closes the microphone (kept across restarts), `mic on` opens it; no action shows it')
    .argument('[action]', 'off | on')
    .option('--json', 'print JSON {micMuted, running}')
    .option('--socket <path>', 'status socket of the daemon (default: found automatically)')
    .addHelpText('after', '\nExamples:\n  speaker-agent mic off\n  speaker-agent mic on\n  speaker-agent mic --json')
    .action(async (action: string | undefined, o: { json?: boolean; socket?: string }) => {
      if (action !== undefined && action !== 'off' && action !== 'on') throw new AgentError('usage', `unknown mic action "${action}": use off or on`);
      const loaded = settings();
      const candidates = o.socket ? [o.socket] : statusSocketCandidates(loaded.stateDir);
      const file = micStatePath(loaded.stateDir);
      let result: { micMuted: boolean; running: boolean; state?: string; kept?: boolean; problem?: string };
      try {
        if (action === undefined) {
          const { status } = await readStatus(candidates);
          const l = (status as { listening?: ListeningStatus }).listening;
          result = { micMuted: l?.micMuted ?? readMicMuted(file).muted, running: true, state: l?.state };
        } else {
          const { answer } = await sendCommand(candidates, action === 'off' ? '/mic/off' : '/mic/on');
          const a = answer as { listening: ListeningStatus; kept?: boolean; problem?: string };
          result = { micMuted: a.listening.micMuted, running: true, state: a.listening.state };
          if (a.kept === false) Object.assign(result, { kept: false, problem: a.problem });
        }
      } catch (err) {
        if (!(err instanceof AgentError) || err.code !== 'network' || o.socket) throw err;
        if (action !== undefined) await writeMicMuted(file, action === 'off');
        result = { micMuted: action === undefined ? readMicMuted(file).muted : action === 'off', running: false };
      }
      emit(o, result, (r) =>
        `microphone ${r.micMuted ? 'MUTED (not read, nothing sent)' : 'on'}${r.running ? '' : ' (the agent is not running; it starts so)'}` +
          (r.kept === false ? `\nnot kept across a restart: ${r.problem ?? 'the state file could not be written'}` : ''),
      );
    });
}
