// A synthetic room for the echo canceller's in-process tests and benchmark (no sound card): the microphone
// hears the far end (what the speaker played) delayed, attenuated and coloured by a short impulse response,
// plus the near end (the user) and noise. Everything is deterministic (seeded), 48 kHz mono s16.
// It drives an EchoReference and an EchoCanceller the way the agent does: frame i is handed to the speaker at
// t = i x 20 ms (with nothing queued ahead) and the microphone frame covering [t, t + 20 ms) is delivered at
// t + 20 ms, so the bulk delay the canceller must find is exactly the room's delay.
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/protocol/media.js';
import { speechClip } from './speechWav.js';

/** Park-Miller, so a room is the same on every run. */
export function seeded(seed: number): () => number {
  let s = seed % 2147483647 || 1;
  return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

/** A room's impulse response: the direct path, then sparse reflections decaying exponentially (-60 dB at
 *  lengthMs, image-method style), each smeared over 3 taps (walls absorb highs); unit energy. */
export function roomImpulse(lengthMs = 40, seed = 7): Float32Array {
  const n = Math.round((lengthMs * SAMPLE_RATE) / 1000);
  const rnd = seeded(seed);
  const h = new Float32Array(n);
  h[0] = 1;
  const tau = n / 6.9;
  for (let r = 0; r < 80; r++) {
    const i = Math.round(SAMPLE_RATE / 1000 + rnd() * (n - 3 - SAMPLE_RATE / 1000));
    const a = (rnd() - 0.5) * 1.2 * Math.exp(-i / tau);
    h[i] += a / 2;
    h[i + 1] += a / 4;
    h[i + 2] += a / 4;
  }
  let e = 0;
  for (let i = 0; i < n; i++) e += h[i] * h[i];
  const g = 1 / Math.sqrt(e);
  for (let i = 0; i < n; i++) h[i] *= g;
  return h;
}

export interface EchoPathSegment {
  /** from this sample (48 kHz) on, the echo comes this late */
  fromSample: number;
  delayMs: number;
  /** the echo's level from here on instead of echoGainDb (e.g. -120: the microphone no longer hears it) */
  gainDb?: number;
}

export interface RoomOptions {
  farEnd: Int16Array;
  /** the echo's delay; or segments for a delay that changes during the call */
  delayMs: number | EchoPathSegment[];
  /** echo level relative to what is played (default -6 dB) */
  echoGainDb?: number;
  nearEnd?: Int16Array;
  /** white noise level in dBFS (default -60) */
  noiseDbfs?: number;
  impulse?: Float32Array;
  seed?: number;
}

export interface Room {
  mic: Int16Array;
  /** the echo alone, and the near end alone, as the microphone has them */
  echo: Float32Array;
  near: Float32Array;
}

export function buildRoom(o: RoomOptions): Room {
  const n = o.farEnd.length;
  const h = o.impulse ?? roomImpulse();
  const gain = 10 ** ((o.echoGainDb ?? -6) / 20);
  // the far end through the room, then delayed per segment
  const taps: number[] = [];
  for (let k = 0; k < h.length; k++) if (h[k] !== 0) taps.push(k);
  const coloured = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const x = o.farEnd[i];
    if (x === 0) continue;
    for (const k of taps) if (i + k < n) coloured[i + k] += x * h[k];
  }
  const segments = typeof o.delayMs === 'number' ? [{ fromSample: 0, delayMs: o.delayMs }] : o.delayMs;
  const echo = new Float32Array(n);
  let seg = 0;
  for (let i = 0; i < n; i++) {
    while (seg + 1 < segments.length && i >= segments[seg + 1].fromSample) seg++;
    const j = i - Math.round((segments[seg].delayMs * SAMPLE_RATE) / 1000);
    const g = segments[seg].gainDb === undefined ? gain : 10 ** (segments[seg].gainDb! / 20);
    if (j >= 0) echo[i] = coloured[j] * g;
  }
  const near = new Float32Array(n);
  if (o.nearEnd) for (let i = 0; i < Math.min(n, o.nearEnd.length); i++) near[i] = o.nearEnd[i];
  const rnd = seeded(o.seed ?? 11);
  const noiseAmp = 32768 * 10 ** ((o.noiseDbfs ?? -60) / 20) * Math.sqrt(12);
  const mic = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const v = echo[i] + near[i] + (rnd() - 0.5) * noiseAmp;
    mic[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
  }
  return { mic, echo, near };
}

/** Far-end speech: sentences from flite's voices (speechWav.ts), back to back, about `seconds` long. */
export function farEndSpeech(seconds: number): Int16Array {
  const lines = [
    'Once upon a time there was a little lighthouse keeper who lived on a rock in the middle of the sea.',
    'Every evening he climbed the stairs to light the lamp, and every morning he polished the great glass lens.',
    'One stormy night a small boat came close to the rocks, and the keeper rang the bell as loud as he could.',
    'The sailors heard the bell, turned their boat around, and reached the harbour safe and sound before dawn.',
  ];
  const voices = ['slt', 'rms', 'awb', 'kal'];
  const parts: Int16Array[] = [];
  let total = 0;
  for (let i = 0; total < seconds * SAMPLE_RATE; i++) {
    const c = speechClip(lines[i % lines.length], { voice: voices[i % voices.length], padBeforeMs: 100, padAfterMs: 150 });
    parts.push(c.pcm);
    total += c.pcm.length;
  }
  const out = new Int16Array(Math.round(seconds * SAMPLE_RATE));
  let at = 0;
  for (const p of parts) {
    out.set(p.subarray(0, Math.min(p.length, out.length - at)), at);
    at += p.length;
    if (at >= out.length) break;
  }
  return out;
}

/** Scales a signal so its RMS over the non-silent part is `dbfs`. */
export function atLevel(pcm: Int16Array, dbfs: number): Int16Array {
  let s = 0;
  let c = 0;
  for (let i = 0; i < pcm.length; i++) if (pcm[i] !== 0) (s += pcm[i] * pcm[i]), c++;
  const g = (32768 * 10 ** (dbfs / 20)) / Math.sqrt(s / Math.max(1, c));
  const out = new Int16Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(pcm[i] * g)));
  return out;
}

export interface FrameSink {
  notePlayback(frame: Int16Array, queuedMs: number): void;
}

/** Runs the call frame by frame: the far end to the reference, the microphone through `process`.
 *  `clock.ns` is the simulated hrtime, for EchoReference/EchoCanceller built with nowNs: () => clock.ns.
 *  Returns what was sent, 48 kHz, same length as the microphone. */
export function runCall(
  farEnd: Int16Array,
  mic: Int16Array,
  reference: FrameSink,
  process: (frame: Int16Array, capturedAtNs: bigint, index: number) => Int16Array,
  clock: { ns: bigint },
): Int16Array {
  const frames = Math.floor(Math.min(farEnd.length, mic.length) / FRAME_SAMPLES);
  const sent = new Int16Array(mic.length);
  const frameNs = 20_000_000n;
  const t0 = 1_000_000_000_000n;
  for (let i = 0; i < frames; i++) {
    clock.ns = t0 + BigInt(i) * frameNs;
    reference.notePlayback(farEnd.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES), 0);
    clock.ns = t0 + BigInt(i + 1) * frameNs;
    const out = process(mic.slice(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES), clock.ns, i);
    sent.set(out, i * FRAME_SAMPLES);
  }
  return sent;
}

/** Energy ratio in dB of a over b, between two sample indices. */
export function energyRatioDb(a: ArrayLike<number>, b: ArrayLike<number>, from: number, to: number): number {
  let ea = 0;
  let eb = 0;
  for (let i = from; i < to; i++) {
    ea += a[i] * a[i];
    eb += b[i] * b[i];
  }
  return 10 * Math.log10((ea + 1) / (eb + 1));
}

/** Best normalised correlation of `sent` with `clean` over lags 0..maxLagMs (the canceller's own latency: 3 ms of
 *  resampling plus one 5 ms frame of speex's residual echo suppressor). */
export function bestCorrelation(sent: ArrayLike<number>, clean: ArrayLike<number>, from: number, to: number, maxLagMs = 10): { r: number; lagMs: number } {
  let best = { r: -1, lagMs: 0 };
  const maxLag = Math.round((maxLagMs * SAMPLE_RATE) / 1000);
  for (let lag = 0; lag <= maxLag; lag++) {
    let sx = 0;
    let sy = 0;
    let sxy = 0;
    for (let i = from; i < to - lag; i++) {
      const x = sent[i + lag];
      const y = clean[i];
      sx += x * x;
      sy += y * y;
      sxy += x * y;
    }
    const r = sxy / Math.sqrt(sx * sy + 1e-9);
    if (r > best.r) best = { r, lagMs: (lag * 1000) / SAMPLE_RATE };
  }
  return best;
}
