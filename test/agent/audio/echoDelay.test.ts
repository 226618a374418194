// Finding and tracking the bulk delay between what the speaker played and its echo in the microphone, on the
// synthetic room's signals (speech through a room impulse response, with noise and a near end).
import { describe, expect, it } from 'vitest';
import { EchoCanceller, type AecState } from '../../../src/agent/audio/echoCanceller.js';
import { EchoDelay } from '../../../src/agent/audio/echoDelay.js';
import { EchoReference, StreamClock } from '../../../src/agent/audio/echoReference.js';
import { Resampler } from '../../../src/common/audio/resample.js';
import { SAMPLE_RATE } from '../../../src/protocol/media.js';
import { speechClip } from '../../support/speechWav.js';
import { atLevel, buildRoom, energyRatioDb, farEndSpeech, roomImpulse, runCall } from '../../support/syntheticRoom.js';

const S = SAMPLE_RATE;
const far = atLevel(farEndSpeech(20), -20);

/** Feeds the estimator 20 ms at a time at 16 kHz; returns the tracked delay after each frame. */
function track(farEnd: Int16Array, mic: Int16Array): { est: EchoDelay; delays: (number | undefined)[] } {
  const est = new EchoDelay({ rate: 16_000 });
  const f16 = new Resampler(S, 16_000).process(farEnd);
  const m16 = new Resampler(S, 16_000).process(mic);
  const delays: (number | undefined)[] = [];
  for (let i = 0; i + 320 <= Math.min(f16.length, m16.length); i += 320) {
    est.push(m16.subarray(i, i + 320), f16.subarray(i, i + 320));
    delays.push(est.current?.delayMs);
  }
  return { est, delays };
}

describe('echo delay estimation (GCC-PHAT)', () => {
  it('finds the 87 ms delay within a second of far-end speech, through the room and the noise', () => {
    const room = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -6, noiseDbfs: -55 });
    const { est, delays } = track(far, room.mic);
    const first = delays.findIndex((d) => d !== undefined);
    expect(first).toBeGreaterThan(0);
    expect(first * 20).toBeLessThanOrEqual(1200);
    for (const d of delays.slice(first)) expect(d).toBeCloseTo(87, 0);
    expect(est.current!.confidence).toBeGreaterThan(8);
    expect(est.stats.changes).toBe(1);
  });

  it('a delay change (87 -> 150 ms, a reopened device) is re-tracked within 2 s', () => {
    const change = 10 * S;
    const room = buildRoom({ farEnd: far, delayMs: [{ fromSample: 0, delayMs: 87 }, { fromSample: change, delayMs: 150 }], echoGainDb: -6, noiseDbfs: -60 });
    const { delays } = track(far, room.mic);
    const at = (ms: number) => delays[Math.floor(ms / 20)];
    expect(at(9_900)).toBeCloseTo(87, 0);
    const retracked = delays.findIndex((d, i) => i * 20 >= 10_000 && d !== undefined && Math.abs(d - 150) <= 1);
    expect(retracked).toBeGreaterThan(0);
    expect(retracked * 20 - 10_000).toBeLessThanOrEqual(2000);
    expect(at(19_900)).toBeCloseTo(150, 0);
  });

  it('the canceller follows the change: back to converged within 2 s more, the gate only in between', () => {
    const change = 10 * S;
    const room = buildRoom({ farEnd: far, delayMs: [{ fromSample: 0, delayMs: 87 }, { fromSample: change, delayMs: 150 }], echoGainDb: -6, noiseDbfs: -65 });
    const clock = { ns: 0n };
    const reference = new EchoReference({ rate: 16_000, nowNs: () => clock.ns });
    const aec = new EchoCanceller({ reference });
    const states: { state: AecState; reason: string; atMs: number }[] = [];
    aec.onState = (state, reason) => states.push({ state, reason, atMs: Number(clock.ns - 1_000_000_000_000n) / 1e6 });
    const sent = runCall(far, room.mic, reference, (f, at) => aec.process(f, at), clock);
    expect(states.map((s) => s.state)).toEqual(['converged', 'converging', 'converged']);
    // the gate takes over at the first sure estimate of the new delay, before two of them agree
    expect(states[1].reason).toMatch(/echo path moved: 150 ms found/);
    expect(states[1].atMs - 10_000).toBeLessThanOrEqual(2000);
    // re-tracked and re-converged within 2 s of the change: the same room, only later, so the filter restarts
    // trained on the room it had (echoCanceller.ts, roomJob)
    expect(states[2].atMs - 10_000).toBeLessThanOrEqual(2000);
    expect(energyRatioDb(room.mic, sent, 12 * S, 20 * S)).toBeGreaterThanOrEqual(25);
    expect(aec.stats().delayMs).toBeCloseTo(150, 0);
    expect(aec.stats().delayChanges).toBe(2);
    expect(aec.stats().resets).toBe(1);
    aec.close();
  });

  it('a delay change into another room: speex adapts from the kept room to the new one', () => {
    const change = 10 * S;
    const a = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -6, noiseDbfs: -65 });
    const b = buildRoom({ farEnd: far, delayMs: 150, echoGainDb: -6, noiseDbfs: -65, impulse: roomImpulse(40, 11), seed: 5 });
    const mic = new Int16Array(a.mic.length);
    mic.set(a.mic.subarray(0, change));
    mic.set(b.mic.subarray(change), change);
    const clock = { ns: 0n };
    const reference = new EchoReference({ rate: 16_000, nowNs: () => clock.ns });
    const aec = new EchoCanceller({ reference });
    const states: { state: AecState; reason: string; atMs: number }[] = [];
    aec.onState = (state, reason) => states.push({ state, reason, atMs: Number(clock.ns - 1_000_000_000_000n) / 1e6 });
    const sent = runCall(far, mic, reference, (f, at) => aec.process(f, at), clock);
    expect(states.map((s) => s.state)).toEqual(['converged', 'converging', 'converged']);
    expect(aec.stats().delayMs).toBeCloseTo(150, 0);
    // restarted with the old room, which does not fit: it adapts from there (the same time as from nothing)
    expect(aec.stats().resets).toBe(1);
    expect(states[2].atMs - 10_000).toBeLessThanOrEqual(4000);
    expect(energyRatioDb(mic, sent, 16 * S, 20 * S)).toBeGreaterThanOrEqual(25);
    aec.close();
  });

  it('no delay is claimed from the near end alone (nothing played)', () => {
    const near = speechClip('Hello there, what time is it in Tokyo right now?', { voice: 'rms' }).pcm;
    const silentFar = new Int16Array(near.length);
    const room = buildRoom({ farEnd: silentFar, delayMs: 87, nearEnd: atLevel(near, -20), noiseDbfs: -60 });
    const { est, delays } = track(silentFar, room.mic);
    expect(delays.every((d) => d === undefined)).toBe(true);
    expect(est.stats.estimates).toBe(0);
    expect(est.stats.skippedInactive).toBeGreaterThan(0);
  });

  it('no delay is claimed when the echo is not there (microphone muted, only noise)', () => {
    const room = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -120, noiseDbfs: -50 });
    const { est, delays } = track(far, room.mic);
    expect(delays.every((d) => d === undefined)).toBe(true);
    expect(est.stats.estimates).toBeGreaterThan(10);
  });
});

describe('stream placement on the timeline', () => {
  it('callback jitter does not move a stream; a real jump (3 frames off) re-anchors it', () => {
    const c = new StreamClock(640); // 40 ms at 16 kHz
    expect(c.place(1000, 320)).toBe(1000);
    expect(c.place(1320 + 150, 320)).toBe(1320); // a late callback (~9 ms)
    expect(c.place(1640 - 100, 320)).toBe(1640);
    // the device reopened 100 ms later
    expect(c.place(1960 + 1600, 320)).toBe(1960);
    expect(c.place(2280 + 1600, 320)).toBe(2280);
    expect(c.place(2600 + 1600, 320)).toBe(2600 + 1600);
    expect(c.place(2920 + 1600, 320)).toBe(2920 + 1600);
    expect(c.jumps).toBe(1);
  });

  it('a burst of late deliveries (a stalled event loop) does not move a capture stream; samples lost do, later', () => {
    const c = new StreamClock(640, 25);
    let p = 1000;
    expect(c.place(p, 320)).toBe(p);
    // 12 frames delivered 50-80 ms late, then on time again: the stream stays where it was
    for (let i = 0; i < 12; i++) expect(c.place((p += 320) + 800 + 40 * i, 320)).toBe(p);
    for (let i = 0; i < 5; i++) expect(c.place((p += 320) + 20, 320)).toBe(p);
    expect(c.jumps).toBe(0);
    // 100 ms of samples lost: every later frame is that late; re-anchored on the 25th
    for (let i = 0; i < 24; i++) expect(c.place((p += 320) + 1600, 320)).toBe(p);
    expect(c.place((p += 320) + 1600, 320)).toBe(p + 1600);
    expect(c.jumps).toBe(1);
  });

  it('the reference reads zeros where nothing was played, and what was played where it was', () => {
    let ns = 1_000_000_000n;
    const ref = new EchoReference({ rate: 48_000, nowNs: () => ns, ringMs: 500 });
    const frame = new Int16Array(960).fill(500);
    ref.notePlayback(frame, 0);
    const at = (Number(ns) * 48_000) / 1e9;
    const out = new Int16Array(1920);
    ref.read(at - 960, out);
    expect(out.subarray(0, 960).every((v) => v === 0)).toBe(true);
    expect(out.subarray(960).every((v) => v === 500)).toBe(true);
    // much later: the old frame has left the ring
    ns += 2_000_000_000n;
    ref.notePlayback(new Int16Array(960), 0);
    ref.read(at, out);
    expect(out.every((v) => v === 0)).toBe(true);
  });

  it('silence the device played before the frames still queued moves them later (the reports of a stalled event loop)', () => {
    let ns = 1_000_000_000n;
    const ref = new EchoReference({ rate: 48_000, nowNs: () => ns, ringMs: 500 });
    const at = (Number(ns) * 48_000) / 1e9;
    // A handed, B written on A's report (one frame queued) before the reports of 40 ms of silence played before B
    ref.notePlayback(new Int16Array(960).fill(100), 0);
    ns += 20_000_000n;
    ref.notePlayback(new Int16Array(960).fill(200), 0);
    ref.noteStarved(40, 20);
    ns += 60_000_000n;
    ref.notePlayback(new Int16Array(960).fill(300), 0);
    const out = new Int16Array(960 * 5);
    ref.read(at, out);
    const at20ms = (k: number) => out[k * 960 + 480];
    expect([0, 1, 2, 3, 4].map(at20ms)).toEqual([100, 0, 0, 200, 300]);
    expect(ref.stats.starvedMs).toBe(40);
  });
});

describe('echo delay on a silent microphone', () => {
  it('a microphone in digital silence (muted, the plain virtual card) gives no delay, however loud the reference', () => {
    const { est, delays } = track(far, new Int16Array(far.length));
    expect(delays.every((d) => d === undefined)).toBe(true);
    expect(est.stats.skippedQuietMic).toBeGreaterThan(10);
  });
});

/**
 * Runs a call through the canceller, frame by frame, with the speaker's frames handed to the reference at the
 * times `playedAt` stamps (`beforePlay` may tell the reference about one first); returns the states it went
 * through (with their reasons and frames), its stats and what it sent.
 */
function callWithSpeaker(mic: Int16Array, playedAt: (frame: number) => bigint, beforePlay?: (frame: number, reference: EchoReference) => void) {
  let ns = 0n;
  const reference = new EchoReference({ rate: 16_000, nowNs: () => ns });
  const aec = new EchoCanceller({ reference });
  const states: AecState[] = [];
  const reasons: string[] = [];
  const atFrame: number[] = [];
  let j = 0;
  aec.onState = (s, why) => {
    states.push(s);
    reasons.push(why);
    atFrame.push(j);
  };
  let next = 0;
  const sent = new Int16Array(mic.length);
  for (j = 0; (j + 1) * 960 <= mic.length; j++) {
    const capturedAt = CALL_T0 + BigInt(j + 1) * FRAME_NS;
    while (next * 960 < far.length && playedAt(next) < capturedAt + FRAME_NS) {
      ns = playedAt(next);
      beforePlay?.(next, reference);
      reference.notePlayback(far.subarray(next * 960, (next + 1) * 960), 0);
      next++;
    }
    ns = capturedAt;
    sent.set(aec.process(mic.slice(j * 960, (j + 1) * 960), capturedAt), j * 960);
  }
  const stats = aec.stats();
  aec.close();
  return { states, reasons, atFrame, stats, sent };
}
const CALL_T0 = 1_000_000_000_000n;
const FRAME_NS = 20_000_000n;

describe('an underrun on the speaker', () => {
  /** The device starves for 40 ms at 10 s: everything played after is heard 40 ms later. The reference is told
   *  (PlaybackDevice.onStarved, with nothing queued behind the silence) or not. */
  function underrun(tellReference: boolean, toldMs = 40) {
    const k0 = 500; // frame index of the underrun (10 s)
    const gap = (40 * S) / 1000;
    const heard = new Int16Array(far.length + gap);
    heard.set(far.subarray(0, k0 * 960), 0);
    heard.set(far.subarray(k0 * 960), k0 * 960 + gap);
    const room = buildRoom({ farEnd: heard, delayMs: 87, echoGainDb: -6, noiseDbfs: -65 });
    const playedAt = (i: number) => CALL_T0 + BigInt(i) * FRAME_NS + (i >= k0 ? 40_000_000n : 0n);
    const { states, reasons, atFrame, stats, sent } = callWithSpeaker(room.mic, playedAt, (i, reference) => {
      if (tellReference && i === k0) reference.noteStarved(toldMs, 0);
    });
    // the echo reduction in the second after the underrun (as heard: from 10.04 s + 87 ms)
    const perHalfSecond: number[] = [];
    for (let t = 10; t < 15; t += 0.5) perHalfSecond.push(Math.round(energyRatioDb(room.mic, sent, Math.round((t + 0.09) * S), Math.round((t + 0.59) * S))));
    return { states, reasons, atFrame, stats, perHalfSecond, mic: room.mic, sent, erleAfter: energyRatioDb(room.mic, sent, 10.15 * S, 11.15 * S) };
  }

  it('told how much silence the device played, the reference keeps the alignment: no re-tracking, no restart, the gate stays open', () => {
    const told = underrun(true);
    expect(told.stats.delayChanges).toBe(1);
    expect(told.stats.resets).toBe(0);
    // an underrun the reference accounts for is no break in the echo path (echoCanceller.ts checkBreaks): a user
    // talking over the assistant is not cut for it
    expect(told.states).toEqual(['converged']);
    expect(told.erleAfter).toBeGreaterThanOrEqual(25);
    // without it the echo moves 40 ms and the canceller must find it again (so the check above can fail)
    const blind = underrun(false);
    expect(blind.stats.delayChanges).toBe(2);
    expect(blind.states).toEqual(['converged', 'converging', 'converged']);
    expect(blind.stats.delayMs).toBeCloseTo(127, 0);
    expect(blind.erleAfter).toBeLessThan(10);
  });

  it('regression: an echo moved 1-2 ms at an underrun (the silence told a little short) held the filter at 0-20 dB and the gate shut for 3.2 s; re-aligned, converged within 1.5 s', () => {
    // seen on the echo room (27 Nov, 1 run of the echo tests in 8): the echo moved 2.25 ms at a speaker
    // underrun, under MOVED_MS, and the filter took 6 s to adapt back: the user talking meanwhile was not heard
    for (const toldMs of [39, 38]) {
      const r = underrun(true, toldMs);
      const info = `told ${toldMs} ms: ${JSON.stringify(r.reasons)} at frames ${r.atFrame.join(' ')}; ERLE per half second from 10 s: ${r.perHalfSecond.join(' ')}`;
      expect(r.states, info).toEqual(['converged', 'converging', 'converged']);
      expect(r.atFrame[2] - 500, info).toBeLessThanOrEqual(75);
      expect(r.stats.delayMs, info).toBeCloseTo(87 + 40 - toldMs, 0);
      expect(energyRatioDb(r.mic, r.sent, 11 * S, 12 * S), info).toBeGreaterThanOrEqual(20);
    }
  });

  /** A burst of underruns: the device starves for 40 ms at each frame of `at`, the reference is told toldMs of each
   *  (so the echo moves 40 - toldMs ms at each); the user talks (10 dB below the echo) from 200 ms after the first
   *  for ~4 s, or not. */
  function burst(at: number[], toldMs: number, userTalks: boolean) {
    const gap = (40 * S) / 1000;
    const heard = new Int16Array(far.length + gap * at.length);
    let from = 0;
    at.forEach((k, n) => {
      heard.set(far.subarray(from, k * 960), from + n * gap);
      from = k * 960;
    });
    heard.set(far.subarray(from), from + at.length * gap);
    const near = new Int16Array(heard.length);
    if (userTalks) {
      const words = atLevel(speechClip('Stop the story please, I want to hear the news about the weather today.', { voice: 'kal', padBeforeMs: 0, padAfterMs: 0 }).pcm, -36);
      near.set(words, at[0] * 960 + 0.2 * S);
    }
    const room = buildRoom({ farEnd: heard, delayMs: 87, echoGainDb: -6, noiseDbfs: -65, nearEnd: near });
    const playedAt = (i: number) => CALL_T0 + BigInt(i) * FRAME_NS + BigInt(at.filter((k) => i >= k).length * 40) * 1_000_000n;
    const r = callWithSpeaker(room.mic, playedAt, (i, reference) => {
      if (at.includes(i)) reference.noteStarved(toldMs, 0);
    });
    return { ...r, room };
  }

  it('regression: after a burst of underruns that each moved the echo a little, the filter, lost, was restarted where it had been and re-aligned 1-2 estimates later: the gate shut on the user for ~3 s; it is re-aligned where the estimator found the echo', () => {
    // seen on the echo room (echo.e2e (ii), stop 53: the agent's speaker underran in a burst): the path re-aligned 2.8 s
    // after the burst, the user's words gated meanwhile. Frames from the last underrun to the gate lifting, before:
    // three moves of 0.7 ms 200 ms apart 151 (quiet) and 151 (talking), five of 0.5 ms 100 ms apart 139 and 149
    for (const [at, toldMs, limits] of [
      [[500, 510, 520], 39.3, { quiet: 125, talking: 135 }],
      [[500, 505, 510, 515, 520], 39.5, { quiet: 90, talking: 100 }],
    ] as const) {
      for (const talking of [false, true]) {
        const r = burst([...at], toldMs, talking);
        const last = at[at.length - 1];
        const info = `${at.length} moves of ${(40 - toldMs).toFixed(1)} ms${talking ? ', the user talking' : ''}: ${JSON.stringify(r.reasons)} at frames ${r.atFrame.join(' ')}`;
        expect(r.states, info).toEqual(['converged', 'converging', 'converged']);
        expect(r.atFrame[2] - last, info).toBeLessThanOrEqual(talking ? limits.talking : limits.quiet);
        expect(Math.abs(r.stats.delayMs! - (87 + at.length * (40 - toldMs))), info).toBeLessThanOrEqual(0.6);
        // the user done (by ~5 s after the burst), the echo is cancelled as before it
        const from = last * 960 + 6 * S;
        expect(energyRatioDb(r.room.mic, r.sent, from, from + 3 * S), info).toBeGreaterThanOrEqual(20);
      }
    }
  });

  it('told 15 ms less silence than was played (a sound server that differs from the device): the gate within 500 ms', () => {
    const off = underrun(true, 25);
    // the echo moved at the underrun (frame 500, heard 87 ms later): the canceller hands back to the gate (here the
    // delay estimate sees the move first, after 420 ms; on the echo room, with the user talking over it, the
    // watched blocks after the underrun showed the output louder than the microphone: echoCanceller.ts
    // checkBreaks), then re-tracks the moved echo
    expect(off.states, JSON.stringify(off.reasons)).toEqual(['converged', 'converging', 'converged']);
    expect(off.atFrame[1]).toBeGreaterThanOrEqual(500);
    expect(off.atFrame[1]).toBeLessThanOrEqual(525);
    expect(off.stats.delayMs).toBeCloseTo(102, 0);
  });
});

describe('a break in the echo path right after convergence', () => {
  /** The speaker's stamps jump jumpMs at frame k0 (the reference re-anchors: a break) while the device played
   *  jumpMs + residualMs of silence: the echo ends up residualMs later than the reference has it. The user talks
   *  (speech 10 dB below the echo) from 200 ms after the break for ~4 s. k0 = Infinity: no break. */
  function breakAt(k0: number, jumpMs: number, residualMs: number) {
    const gap = Number.isFinite(k0) ? Math.round(((jumpMs + residualMs) * S) / 1000) : 0;
    const heard = new Int16Array(far.length + gap);
    const cut = Number.isFinite(k0) ? k0 * 960 : far.length;
    heard.set(far.subarray(0, cut), 0);
    heard.set(far.subarray(cut), cut + gap);
    const near = new Int16Array(heard.length);
    if (Number.isFinite(k0)) {
      const words = atLevel(speechClip('Stop the story please, I want to hear the news about the weather today.', { voice: 'kal', padBeforeMs: 0, padAfterMs: 0 }).pcm, -36);
      near.set(words.subarray(0, Math.min(words.length, near.length - cut - 0.2 * S)), cut + 0.2 * S);
    }
    const room = buildRoom({ farEnd: heard, delayMs: 87, echoGainDb: -6, noiseDbfs: -65, nearEnd: near });
    const playedAt = (i: number) => CALL_T0 + BigInt(i) * FRAME_NS + (i >= k0 ? BigInt(jumpMs) * 1_000_000n : 0n);
    return { ...callWithSpeaker(room.mic, playedAt), room };
  }

  it('regression: a break 1.5-2.75 ms off right after the first convergence, the user talking, restarted speex from nothing and the gate stayed shut 4.7 s; from the room kept at convergence, re-aligned, converged within 2.7 s', () => {
    // seen on the echo room (28 Nov): a reference jump 0.2 s after convergence moved the echo 2.75 ms; no room
    // was kept yet (none >= 25 dB), the filter collapsed, speex restarted afresh and converged again only 5.6 s
    // later, the user's whole command gated
    const k0 = breakAt(Infinity, 0, 0).atFrame[0] + 3; // the same call without the break: where it converges
    for (const residualMs of [1.5, 2.75]) {
      const r = breakAt(k0, 60, residualMs);
      const info = `${residualMs} ms off at frame ${k0}: ${JSON.stringify(r.reasons)} at frames ${r.atFrame.join(' ')}`;
      expect(r.states, info).toEqual(['converged', 'converging', 'converged']);
      expect(r.atFrame[1] - k0, info).toBeLessThanOrEqual(5);
      expect(r.atFrame[2] - k0, info).toBeLessThanOrEqual(135);
      expect(Math.abs(r.stats.delayMs! - (87 + residualMs)), info).toBeLessThanOrEqual(0.3);
      // the user done (at ~k0 + 4.5 s), the echo is cancelled again
      const from = k0 * 960 + 5 * S;
      expect(energyRatioDb(r.room.mic, r.sent, from, from + 3 * S), info).toBeGreaterThanOrEqual(20);
    }
  });
});
