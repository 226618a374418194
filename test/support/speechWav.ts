// Spoken test audio from flite's natural-sounding "slt" voice (Debian package flite), resampled to the call's
// 48 kHz and padded with silence, so tests and benchmarks know exactly where speech ends.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { resample } from '../../src/common/audio/resample.js';
import { decodeWav, encodeWav } from '../../src/common/audio/wav.js';

const root = path.resolve(import.meta.dirname, '../..');
const cacheDir = path.join(root, '.test-runtime', 'speech');

export interface SpeechClip {
  /** 48 kHz mono s16 */
  pcm: Int16Array;
  sampleRate: 48000;
  /** where the spoken words end, ms from the start of the clip */
  speechEndMs: number;
  /** the clip as a WAV file (for Chromium's fake microphone) */
  file: string;
}

export function speechClip(text: string, opts: { padBeforeMs?: number; padAfterMs?: number; voice?: string } = {}): SpeechClip {
  const before = opts.padBeforeMs ?? 500;
  const after = opts.padAfterMs ?? 1500;
  const voice = opts.voice ?? 'slt';
  mkdirSync(cacheDir, { recursive: true });
  const key = createHash('sha1').update(`${voice}|${text}|${before}|${after}`).digest('hex').slice(0, 12);
  const raw = path.join(cacheDir, `${key}.flite.wav`);
  const file = path.join(cacheDir, `${key}.48k.wav`);
  if (!existsSync(raw)) execFileSync('flite', ['-voice', voice, '-t', text, '-o', raw]);
  const w = decodeWav(readFileSync(raw));
  const speech = resample(w.pcm, w.sampleRate, 48_000);
  // flite's own leading/trailing silence is short; trim to the last sample above -50 dBFS to know the end
  let last = speech.length - 1;
  while (last > 0 && Math.abs(speech[last]) < 100) last--;
  const pre = Math.round((before * 48_000) / 1000);
  const pcm = new Int16Array(pre + last + 1 + Math.round((after * 48_000) / 1000));
  pcm.set(speech.subarray(0, last + 1), pre);
  if (!existsSync(file)) writeFileSync(file, encodeWav(pcm, 48_000));
  return { pcm, sampleRate: 48_000, speechEndMs: ((pre + last + 1) * 1000) / 48_000, file };
}
