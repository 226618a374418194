// Echo cancellation figures from what the echo room wrote into the microphone (test/support/echoRoom.ts: its echo,
// near-end and total components, sample-exact) and what the agent SENT (decoded at the peer). Definitions:
//
// - Windows: 200 ms on the room's timeline. An echo window carries echo (echo RMS > -55 dBFS); a near window
//   carries near-end audio (near RMS > -70 dBFS). Echo-only = echo and not near; double talk = both.
// - ERLE (echo return loss enhancement) = 10 log10(sum mic^2 / sum sent^2) over echo-only windows from
//   convergence (at least 2 s after the echo starts) to the end of the range: how much quieter what was sent
//   is than what the microphone picked up. Capped at 60 dB (a gate that sends digital silence).
// - Convergence time: from the first echo window to the first point t from which EVERY later whole second of
//   echo-only audio (t..t+1 s, t+1..t+2 s, ...) has an ERLE >= 10 dB. NaN when never.
// - User heard during double talk: the fraction of double-talk windows in which the near end is present in
//   what was sent. For a TONE near end (the bench, as the anchor): its power at its own frequency
//   (Goertzel, ~5 Hz wide in 200 ms, so the far end's speech hardly adds to it) in the sent window is at most
//   6 dB below its power in the near-end component. For SPEECH: the normalised correlation of the sent window
//   with the clean near-end window is >= 0.5 (with the echo 10 dB above the near end, full duplex without a
//   canceller scores ~0.3: the user is drowned); the best lag within 20 ms counts.
// - Alignment: `alignSent` finds a marker (a near-end chirp played before the far end talks, which every mode
//   passes) of the room's mic signal in the sent audio: sent[i + offset] is room sample i.
import { locate } from './locate.js';
import { goertzelPower } from './audioCapture.js';

export const RATE = 48_000;
export const WINDOW = RATE / 5; // 200 ms
const FULL = 32768 ** 2;
export const ERLE_CAP_DB = 60;

export interface RoomTimeline {
  echo: Int16Array;
  near: Int16Array;
  mic: Int16Array;
}

/** A loud 300 ms chirp (400 Hz -> 3.2 kHz) to play as near end for alignment. */
export function markerChirp(amplitude = 12_000): Int16Array {
  const n = Math.round(0.3 * RATE);
  const out = new Int16Array(n);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const f = 400 + (2800 * i) / n;
    phase += (2 * Math.PI * f) / RATE;
    const env = Math.min(1, i / 480, (n - i) / 480);
    out[i] = Math.round(amplitude * env * Math.sin(phase));
  }
  return out;
}

/**
 * Offset of room samples in `sent`: sent[i + offset] is room sample i. The marker is room.mic[from, from + len).
 * Throws when the marker is not found (correlation < 0.4: a canceller with noise suppression reshapes it): the sent audio is not the room's microphone.
 */
export function alignSent(sent: Int16Array, room: RoomTimeline, markerFrom: number, markerLen: number): { offset: number; corr: number } {
  const needle = room.mic.subarray(markerFrom, markerFrom + markerLen);
  const { index, corr } = locate(sent, needle);
  if (corr < 0.4) throw new Error(`echo metrics: the marker is not in what the peer received (best correlation ${corr.toFixed(2)})`);
  return { offset: index - markerFrom, corr };
}

function power(x: Int16Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i] * x[i];
  return s;
}

function db(p: number, n: number): number {
  return 10 * Math.log10(Math.max(p / Math.max(1, n), 1e-12) / FULL);
}

export interface WindowClass {
  start: number;
  echo: boolean;
  near: boolean;
}

/** 200 ms windows of the room's timeline in [from, to), classified. */
export function windows(room: RoomTimeline, from = 0, to = room.mic.length): WindowClass[] {
  const out: WindowClass[] = [];
  for (let s = from; s + WINDOW <= to; s += WINDOW) {
    out.push({ start: s, echo: db(power(room.echo, s, s + WINDOW), WINDOW) > -55, near: db(power(room.near, s, s + WINDOW), WINDOW) > -70 });
  }
  return out;
}

/** The sent audio on the room's timeline (zeros where the peer got nothing). */
export function sentOnRoom(sent: Int16Array, offset: number, length: number): Int16Array {
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    const j = i + offset;
    if (j >= 0 && j < sent.length) out[i] = sent[j];
  }
  return out;
}

function erleOf(room: RoomTimeline, sent: Int16Array, ws: WindowClass[]): number {
  let pm = 0;
  let ps = 0;
  for (const w of ws) {
    pm += power(room.mic, w.start, w.start + WINDOW);
    ps += power(sent, w.start, w.start + WINDOW);
  }
  if (pm === 0) return NaN;
  return Math.min(ERLE_CAP_DB, 10 * Math.log10(pm / Math.max(ps, 1e-9)));
}

export interface EchoFigures {
  /** dB, echo-only windows after convergence */
  erleDb: number;
  /** s from the first echo to convergence (NaN: never) */
  convergenceS: number;
  /** echo-only windows used for the ERLE */
  erleWindows: number;
  /** ERLE of each whole second of echo-only audio, for the record */
  perSecondDb: number[];
}

/**
 * ERLE and convergence over [from, to) of the room's timeline (`sent` already on it: sentOnRoom). The echo is
 * expected to start inside the range (its first echo window is the start of convergence).
 */
export function echoFigures(room: RoomTimeline, sent: Int16Array, from: number, to: number, thresholdDb = 10): EchoFigures {
  const ws = windows(room, from, to);
  const firstEcho = ws.find((w) => w.echo);
  if (!firstEcho) throw new Error('echo metrics: no echo in the range');
  const only = ws.filter((w) => w.echo && !w.near && w.start >= firstEcho.start);
  // whole seconds (5 echo-only windows each) after the first echo
  const seconds: Array<{ start: number; erle: number }> = [];
  for (let i = 0; i + 5 <= only.length; i += 5) seconds.push({ start: only[i].start, erle: erleOf(room, sent, only.slice(i, i + 5)) });
  let conv = NaN;
  for (let i = 0; i < seconds.length; i++) {
    if (seconds.slice(i).every((s) => s.erle >= thresholdDb)) {
      conv = (seconds[i].start - firstEcho.start) / RATE;
      break;
    }
  }
  const after = firstEcho.start + Math.max(2 * RATE, Number.isNaN(conv) ? 0 : conv * RATE);
  const used = only.filter((w) => w.start >= after);
  return { erleDb: erleOf(room, sent, used), convergenceS: conv, erleWindows: used.length, perSecondDb: seconds.map((s) => Math.round(s.erle * 10) / 10) };
}

export interface DoubleTalkFigures {
  /** fraction 0..1 of double-talk windows in which the near end was heard */
  heard: number;
  windows: number;
}

/** Near end = a tone of `freqHz`: heard when its power in the sent window is at most 6 dB below the near end's. */
export function doubleTalkTone(room: RoomTimeline, sent: Int16Array, freqHz: number, from: number, to: number): DoubleTalkFigures {
  const dt = windows(room, from, to).filter((w) => w.echo && w.near);
  let heard = 0;
  for (const w of dt) {
    const pn = goertzelPower(room.near, freqHz, w.start, w.start + WINDOW);
    const ps = goertzelPower(sent, freqHz, w.start, w.start + WINDOW);
    if (ps >= pn * 10 ** (-6 / 10)) heard++;
  }
  return { heard: dt.length ? heard / dt.length : NaN, windows: dt.length };
}

/** Near end = speech: heard when the sent window correlates >= 0.5 with the clean near end (best lag within 20 ms:
 *  the room's delay corrections may leave the alignment a few ms off). */
export function doubleTalkSpeech(room: RoomTimeline, sent: Int16Array, from: number, to: number, minCorr = 0.5): DoubleTalkFigures & { meanCorr: number } {
  const dt = windows(room, from, to).filter((w) => w.echo && w.near);
  let heard = 0;
  let sum = 0;
  const slack = 960;
  for (const w of dt) {
    const a = Math.max(0, w.start - slack);
    const b = Math.min(sent.length, w.start + WINDOW + slack);
    const c = b - a >= WINDOW ? locate(sent.subarray(a, b), room.near.subarray(w.start, w.start + WINDOW)).corr : 0;
    sum += c;
    if (c >= minCorr) heard++;
  }
  return { heard: dt.length ? heard / dt.length : NaN, windows: dt.length, meanCorr: dt.length ? sum / dt.length : NaN };
}
