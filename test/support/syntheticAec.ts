// Issue #15's in-process scenario, shared by bench/agent-aec.bench.ts and scripts/arm64/echo.mjs (the same code
// on x86-64, and on arm64 and armhf under qemu): the agent's `audio.duplex auto` chain (EchoReference fed as the
// downlink feeds it, the EchoCanceller stage, the half-duplex gate it controls) run frame by frame over the
// synthetic room of syntheticRoom.ts, and the figures the issue asks for. The speech comes in as PCM, so a caller
// that cannot run flite (an emulated node) passes the host's.
//
// What each figure is:
// - ERLE: energy of the microphone over energy of what is sent, echo only, in a window after convergence (the
//   untouched microphone gives 0 dB).
// - convergence: first far-end speech -> the canceller converged (the gate lifted). After a delay change
//   (87 -> 150 ms): the change -> the new delay taken, and -> converged again.
// - double talk: near-end speech (a command) over the far end, after convergence. "Heard" = 100 ms windows of
//   near-end speech whose sent audio correlates >= 0.5 with the clean near end (over lags 0-25 ms: speex's
//   residual suppressor delays by one speex frame, 5 ms by default); and the correlation over the whole command.
// - CPU: user+system time of the canceller (reference resampling, delay estimation, speex, resampling back)
//   per second of audio, single-threaded.
import { EchoCanceller, type AecState } from '../../src/agent/audio/echoCanceller.js';
import { EchoGate } from '../../src/agent/audio/echoGate.js';
import { EchoReference } from '../../src/agent/audio/echoReference.js';
import { echoCancelStage } from '../../src/agent/audio/micStages.js';
import { SAMPLE_RATE } from '../../src/protocol/media.js';
import { atLevel, bestCorrelation, buildRoom, energyRatioDb, runCall, type EchoPathSegment } from './syntheticRoom.js';

const S = SAMPLE_RATE;
const T0 = 1_000_000_000_000n;

export interface AecVariant {
  rate: 16_000 | 48_000;
  filterMs: number;
  speexFrameMs: 5 | 10 | 20;
  residualSuppression: boolean;
  /** the canceller's JIT warm-up (default on; off only to measure it) */
  warmUp?: boolean;
}
/** the canceller's default (echoCanceller.ts) */
export const DEFAULT_AEC: AecVariant = { rate: 16_000, filterMs: 80, speexFrameMs: 5, residualSuppression: true };

/** The room: the echo 87 ms late at -6 dB, noise at -65 dBFS; after a delay change, 150 ms. */
export const ECHO_DELAY_MS = 87;
export const CHANGED_DELAY_MS = 150;
/** The near end's command, said by flite's "kal" (speechWav.ts, no padding) over the far end. */
export const NEAR_END_TEXT = 'Stop. Please stop the story now and tell me what the weather is like tomorrow.';
export const NEAR_END_VOICE = 'kal';
/** Far-end speech at -20 dBFS: its echo is at -26; the near end 10 dB below the echo. */
export const FAR_DBFS = -20;
export const NEAR_DBFS = -36;

export function firstSpeechMs(pcm: Int16Array): number {
  let i = 0;
  while (i < pcm.length && Math.abs(pcm[i]) < 100) i++;
  return (i * 1000) / S;
}

export interface Simulation {
  room: ReturnType<typeof buildRoom>;
  sent: Int16Array;
  /** the canceller's output before the half-duplex gate (what a comparison with another canceller looks at) */
  beforeGate: Int16Array;
  states: { state: AecState; atMs: number }[];
  /** wall time of each 20 ms frame's processing */
  frameMs: number[];
  /** the chain's CPU time per second of audio, and its wall time (under an emulator the CPU time's resolution can
   *  be coarse: one tick per call) */
  cpuMsPerS: number;
  wallMsPerS: number;
  stats: ReturnType<EchoCanceller['stats']>;
  /** wall time of making the canceller (its warm-up included) */
  constructMs: number;
}

/** One call through the chain; `far` and `nearEnd` at their final levels. */
export function simulate(v: AecVariant, far: Int16Array, segments: EchoPathSegment[], nearEnd?: Int16Array): Simulation {
  const room = buildRoom({ farEnd: far, delayMs: segments, echoGainDb: -6, noiseDbfs: -65, nearEnd });
  const clock = { ns: 0n };
  const reference = new EchoReference({ rate: v.rate, nowNs: () => clock.ns });
  const made = process.hrtime.bigint();
  const aec = new EchoCanceller({ reference, filterMs: v.filterMs, speexFrameMs: v.speexFrameMs, residualSuppression: v.residualSuppression, warmUp: v.warmUp });
  const constructMs = Number(process.hrtime.bigint() - made) / 1e6;
  const gate = new EchoGate({ mode: 'half-duplex', nowMs: () => Number(clock.ns) / 1e6 });
  const stage = echoCancelStage(aec, gate);
  const states: { state: AecState; atMs: number }[] = [];
  const follow = aec.onState!;
  aec.onState = (state, reason) => (follow(state, reason), states.push({ state, atMs: Number(clock.ns - T0) / 1e6 }));
  const frameMs: number[] = [];
  let cpuUs = 0;
  let wallNs = 0n;
  const beforeGate = new Int16Array(room.mic.length);
  const sink = {
    notePlayback: (f: Int16Array, q: number) => {
      const c = process.cpuUsage();
      const t = process.hrtime.bigint();
      reference.notePlayback(f, q);
      wallNs += process.hrtime.bigint() - t;
      const d = process.cpuUsage(c);
      cpuUs += d.user + d.system;
      gate.notePlayback(f, q);
    },
  };
  const sent = runCall(far, room.mic, sink, (pcm, capturedAtNs, i) => {
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    const out = stage.process({ pcm, capturedAtNs })!.pcm;
    const dt = process.hrtime.bigint() - t;
    wallNs += dt;
    frameMs.push(Number(dt) / 1e6);
    const d = process.cpuUsage(c);
    cpuUs += d.user + d.system;
    beforeGate.set(out, i * out.length);
    return gate.filter(out, 0);
  }, clock);
  const stats = aec.stats();
  aec.close();
  return { room, sent, beforeGate, states, frameMs, cpuMsPerS: cpuUs / 1000 / (far.length / S), wallMsPerS: Number(wallNs) / 1e6 / (far.length / S), stats, constructMs };
}

/** The far end and the near end's command at the scenario's levels, from flite's PCM (48 kHz). */
export function scenarioSpeech(farRaw: Int16Array, nearRaw: Int16Array): { far: Int16Array; nearClip: Int16Array } {
  return { far: atLevel(farRaw, FAR_DBFS), nearClip: atLevel(nearRaw, NEAR_DBFS) };
}

export interface EchoOnly {
  sim: Simulation;
  /** ERLE from erleFromS to the end */
  erleDb: number;
  /** first far-end speech -> converged (NaN: never) */
  convergenceMs: number;
}
/** The far end alone, the echo 87 ms late. */
export function echoOnly(v: AecVariant, far: Int16Array, erleFromS: number): EchoOnly {
  const sim = simulate(v, far, [{ fromSample: 0, delayMs: ECHO_DELAY_MS }]);
  const conv = sim.states.find((s) => s.state === 'converged');
  return { sim, erleDb: energyRatioDb(sim.room.mic, sim.sent, erleFromS * S, far.length), convergenceMs: conv ? conv.atMs - firstSpeechMs(far) : NaN };
}

export interface DoubleTalk {
  heardPct: number;
  heard: number;
  windows: number;
  /** correlation of what was sent with the clean near end over the whole command, and the raw microphone's */
  corr: number;
  rawCorr: number;
}
/** The near end heard in what was sent, [from, to): of the 100 ms windows in which the near end speaks (RMS >= 100),
 *  those whose sent audio correlates >= 0.5 with it (over lags 0-25 ms). */
export function heardWindows(sent: ArrayLike<number>, near: ArrayLike<number>, from: number, to: number): { heard: number; windows: number } {
  let heard = 0;
  let windows = 0;
  for (let s = from; s + S / 10 <= to; s += S / 10) {
    let e = 0;
    for (let i = s; i < s + S / 10; i++) e += near[i] ** 2;
    if (Math.sqrt(e / (S / 10)) < 100) continue;
    windows++;
    if (bestCorrelation(sent, near, s, s + S / 10, 25).r >= 0.5) heard++;
  }
  return { heard, windows };
}

/** The near end's command from atS on, over the far end (converged by then). */
export function doubleTalk(v: AecVariant, far: Int16Array, nearClip: Int16Array, atS: number): DoubleTalk {
  const near = new Int16Array(far.length);
  const from = atS * S;
  near.set(nearClip.subarray(0, near.length - from), from);
  const to = Math.min(far.length, from + nearClip.length);
  const dt = simulate(v, far, [{ fromSample: 0, delayMs: ECHO_DELAY_MS }], near);
  const { heard, windows } = heardWindows(dt.sent, dt.room.near, from, to);
  return {
    heardPct: (100 * heard) / Math.max(1, windows),
    heard,
    windows,
    corr: bestCorrelation(dt.sent, dt.room.near, from, to, 25).r,
    rawCorr: bestCorrelation(dt.room.mic, dt.room.near, from, to, 3).r,
  };
}

export interface DelayChange {
  sim: Simulation;
  /** before the change, the call is an echo-only one: first far-end speech -> converged (NaN: never), and the
   *  ERLE from erleFromS to the change */
  convergenceMs: number;
  erleBeforeDb: number;
  /** the change -> the new delay taken (the canceller back to converging), and -> converged again; NaN: never */
  retrackMs: number;
  reconvergedMs: number;
  /** the delay in use at the end */
  delayMs: number | undefined;
  /** ERLE from 2 s after the change to the end */
  erleAfterDb: number;
}
/** The echo path 87 ms, then 150 ms from atS on. */
export function delayChange(v: AecVariant, far: Int16Array, atS: number, erleFromS = atS / 2): DelayChange {
  const at = atS * 1000;
  const sim = simulate(v, far, [{ fromSample: 0, delayMs: ECHO_DELAY_MS }, { fromSample: atS * S, delayMs: CHANGED_DELAY_MS }]);
  const conv = sim.states.find((s) => s.state === 'converged');
  const back = sim.states.find((s) => s.atMs > at && s.state === 'converging');
  const again = sim.states.find((s) => s.atMs > at && s.state === 'converged');
  return {
    sim,
    convergenceMs: conv && conv.atMs <= at ? conv.atMs - firstSpeechMs(far) : NaN,
    erleBeforeDb: energyRatioDb(sim.room.mic, sim.sent, erleFromS * S, atS * S),
    retrackMs: back ? back.atMs - at : NaN,
    reconvergedMs: again ? again.atMs - at : NaN,
    delayMs: sim.stats.delayMs,
    erleAfterDb: energyRatioDb(sim.room.mic, sim.sent, (atS + 2) * S, far.length),
  };
}
