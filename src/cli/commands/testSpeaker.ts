// `speaker-agent test-speaker`: plays a tone (default) or a spoken phrase (offline espeak) on the playback
// device, to check the speaker without the server.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { sineWave } from '../../common/audio/signal.js';
import { SAMPLE_RATE } from '../../protocol/media.js';
import { settings } from '../cliContext.js';
import { audioBackend } from '../../agent/device.js';
import { emit } from '../output.js';
import { playClip } from '../player.js';
import { speakOffline } from '../speakOffline.js';

export function registerTestSpeaker(program: Command): void {
  program
    .command('test-speaker')
    .description('play a test tone or a spoken phrase on the speaker')
    .option('--phrase [text]', 'speak a phrase (offline espeak) instead of a tone')
    .option('--freq <hz>', 'tone frequency', (v) => Number(v), 440)
    .option('--seconds <s>', 'tone length', (v) => Number(v), 1.5)
    .option('--device <name>', 'playback device (default: the configured one)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  speaker-agent test-speaker\n  speaker-agent test-speaker --phrase "Testing one two three"\n  speaker-agent test-speaker --freq 1000 --seconds 3 --device pulse')
    .action(async (o: { phrase?: string | true; freq: number; seconds: number; device?: string; json?: boolean }) => {
      if (!(o.freq >= 20 && o.freq <= 20_000)) throw new AgentError('usage', `--freq must be 20..20000 Hz, got ${o.freq}`);
      if (!(o.seconds > 0 && o.seconds <= 30)) throw new AgentError('usage', `--seconds must be in (0, 30], got ${o.seconds}`);
      const device = o.device ?? settings().settings.audio.playbackDevice;
      const phrase = o.phrase === true ? 'This is the speaker agent. If you can hear me, the speaker works.' : o.phrase;
      const clip = phrase !== undefined ? await speakOffline(phrase) : { pcm: sineWave(o.freq, SAMPLE_RATE, o.seconds, 0.4), sampleRate: SAMPLE_RATE };
      const { playedMs } = await playClip(await audioBackend(), device, clip.pcm, clip.sampleRate);
      emit(o, { device, kind: phrase !== undefined ? 'phrase' : 'tone', ...(phrase !== undefined ? { phrase } : { freqHz: o.freq }), playedMs }, (r) =>
        `played ${r.kind === 'tone' ? `a ${o.freq} Hz tone` : `"${phrase}"`} on ${device} (${(playedMs / 1000).toFixed(1)} s)`,
      );
    });
}
