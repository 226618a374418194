// `speaker-agent say "text"`: speech with word timestamps from the service (REST), played on the speaker
// while the words are shown as they are spoken.
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { decodeWav } from '../../common/audio/wav.js';
import { serviceAccess, type ServiceAccess } from '../cliContext.js';
import { audioBackend } from '../../agent/device.js';
import { printJson, printLine } from '../output.js';
import { writeOut } from '../stdio.js';
import { playClip } from '../player.js';
import { listVoices } from './voices.js';
import { positiveNumber } from '../numberOption.js';

export interface SpeechResult {
  audio_url: string;
  expires_in: number;
  duration_seconds: number;
  timestamps: { word: string; start_ms: number; end_ms: number }[];
  full_text: string;
}

/** Fetches a signed audio URL of the service (relative URLs resolve against the server) as a WAV clip: a long
 *  clip over slow Wi-Fi may take as long as it keeps flowing. */
export async function fetchWav(access: ServiceAccess, url: string): Promise<{ pcm: Int16Array; sampleRate: number }> {
  const abs = new URL(url, access.loaded.settings.server.url).toString();
  const res = await access.client.download(abs);
  const wav = decodeWav(res.body);
  if (wav.channels !== 1) throw new AgentError('protocol', `expected mono audio, got ${wav.channels} channels`);
  return { pcm: wav.pcm, sampleRate: wav.sampleRate };
}

export function registerSay(program: Command): void {
  program
    .command('say')
    .description('speak a text through the service\'s text-to-speech (with word timestamps) on the speaker')
    .argument('<text>', 'what to say (up to 15,000 characters)')
    .option('--voice <voice_id>', 'voice to use (default: the first voice of `speaker-agent voices`)')
    .option('--speed <n>', 'speaking speed factor (1 = normal; the service sets the bounds)', positiveNumber)
    .option('--no-play', 'only synthesise and print, do not play')
    .option('--json', 'print the timestamped result as JSON')
    .addHelpText('after', '\nExamples:\n  speaker-agent say "Dinner is ready"\n  speaker-agent say --json --no-play "Hello there" | jq .timestamps')
    .action(async (text: string, o: { voice?: string; speed?: number; play: boolean; json?: boolean }) => {
      if (text.trim() === '') throw new AgentError('usage', 'nothing to say: the text is empty');
      const access = await serviceAccess();
      let voiceId = o.voice;
      if (!voiceId) {
        const voices = await listVoices();
        if (voices.length === 0) throw new AgentError('config_invalid', 'the workspace has no voices: create one in the dashboard (or `speaker-agent companion voice design`)');
        voiceId = voices[0].voice_id;
      }
      const body: Record<string, unknown> = { text, output_format: 'wav' };
      if (o.speed !== undefined) body.speed = o.speed;
      // up to 15,000 characters are synthesised before the answer: not within the 10 s of an ordinary request
      const res = await access.client.requestApp('POST', `/v1/app/text-to-speech/${encodeURIComponent(voiceId)}/with-timestamps`, body, { longAnswer: true });
      const result = res.json as SpeechResult;
      if (o.play) {
        const clip = await fetchWav(access, result.audio_url);
        const backend = await audioBackend();
        let shown = 0;
        const words = result.timestamps;
        await playClip(backend, access.loaded.settings.audio.playbackDevice, clip.pcm, clip.sampleRate, {
          onPosition: (ms) => {
            if (o.json) return;
            while (shown < words.length && words[shown].start_ms <= ms) writeOut((shown ? ' ' : '') + words[shown++].word);
          },
        });
        if (!o.json) {
          while (shown < words.length) writeOut((shown ? ' ' : '') + words[shown++].word);
          printLine(`\n(${result.duration_seconds.toFixed(2)} s, ${words.length} words, voice ${voiceId})`);
        }
      } else if (!o.json) {
        for (const w of result.timestamps) printLine(`${String(w.start_ms).padStart(6)} - ${String(w.end_ms).padStart(6)} ms  ${w.word}`);
      }
      if (o.json) printJson({ voice_id: voiceId, ...result });
    });
}
