// Real speech for the speech-engine tests: flite (natural-ish diphone voices) renders text to WAV, the project's
// own decoder and resampler bring it to the rate a test needs. Files are cached per run under .test-runtime.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { decodeWav } from '../../../src/common/audio/wav.js';
import { resample } from '../../../src/common/audio/resample.js';
import { concatPcm as concatAll } from '../../../src/common/audio/signal.js';

export const FIXTURE_DIR = path.resolve(import.meta.dirname, '../../../.test-runtime/speech-fixtures');

/** Path of a WAV of `text` spoken by flite voice (slt = female US, kal/rms/awb = male). */
export function fliteWav(text: string, voice = 'slt'): string {
  mkdirSync(FIXTURE_DIR, { recursive: true });
  const file = path.join(FIXTURE_DIR, `${voice}-${text.replace(/[^a-z0-9]+/gi, '_').slice(0, 60)}.wav`);
  if (!existsSync(file)) execFileSync('flite', ['-voice', voice, '-t', text, '-o', file]);
  return file;
}

/** flite speech as mono PCM16 at sampleRate. */
export function fliteSpeech(text: string, sampleRate: number, voice = 'slt'): Int16Array {
  const w = decodeWav(readFileSync(fliteWav(text, voice)));
  return resample(w.pcm, w.sampleRate, sampleRate);
}

/** Uniform white noise at the given peak amplitude (0..1), deterministic. */
export function whiteNoise(samples: number, amplitude: number, seed = 1): Int16Array {
  const out = new Int16Array(samples);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < samples; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = Math.round(((s / 0xffffffff) * 2 - 1) * amplitude * 32767);
  }
  return out;
}

export function concatPcm(...parts: Int16Array[]): Int16Array {
  return concatAll(parts);
}

/** Splits pcm into consecutive frames of `size` samples (the last one may be shorter). */
export function frames(pcm: Int16Array, size: number): Int16Array[] {
  const out: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += size) out.push(pcm.subarray(i, i + size));
  return out;
}

/** Removes leading and trailing near-silence (10 ms blocks below -45 dBFS): flite pads every clip. */
export function trimSilence(pcm: Int16Array, sampleRate: number): Int16Array {
  const block = Math.round(sampleRate / 100);
  const loud = (i: number) => {
    let s = 0;
    const end = Math.min(pcm.length, i + block);
    for (let k = i; k < end; k++) s += pcm[k] * pcm[k];
    return Math.sqrt(s / Math.max(1, end - i)) > 32768 * 10 ** (-45 / 20);
  };
  let a = 0;
  while (a < pcm.length && !loud(a)) a += block;
  let b = pcm.length;
  while (b > a && !loud(Math.max(a, b - block))) b -= block;
  return pcm.subarray(a, b);
}

/** A fridge-like hum: 100 Hz and five harmonics at `dbfs` RMS, phase-continuous (voiced, so speech-like to a voice
 *  detector). */
export function harmonicHum(samples: number, dbfs: number, rate: number): Int16Array {
  const amps = [1, 0.6, 0.45, 0.3, 0.2, 0.12];
  const raw = new Float64Array(samples);
  let power = 0;
  for (let i = 0; i < samples; i++) {
    let v = 0;
    for (let h = 0; h < amps.length; h++) v += amps[h] * Math.sin((2 * Math.PI * 100 * (h + 1) * i) / rate + h);
    raw[i] = v;
    power += v * v;
  }
  const gain = (32768 * 10 ** (dbfs / 20)) / Math.sqrt(power / samples);
  return Int16Array.from(raw, (v) => Math.round(v * gain));
}
