// The echo figures (test/support/echoMetrics.ts) on synthetic signals whose answer is known: what a perfect
// canceller, no canceller and a gate would send.
import { describe, expect, it } from 'vitest';
import { tone } from './audioCapture.js';
import { prng } from './echoRoom.js';
import { alignSent, doubleTalkSpeech, doubleTalkTone, echoFigures, markerChirp, RATE, sentOnRoom, type RoomTimeline } from './echoMetrics.js';

/** Speech-like noise: random, amplitude-modulated at 4 Hz. */
function babble(n: number, seed: number, amp: number): Int16Array {
  const r = prng(seed);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amp * (0.6 + 0.4 * Math.sin((2 * Math.PI * 4 * i) / RATE)) * (r() * 2 - 1));
  return out;
}

/** 1 s silence, 0.3 s marker, 0.7 s silence, 8 s echo only, 4 s echo + near end. */
function timeline(nearKind: 'tone' | 'speech'): RoomTimeline & { markerAt: number; nearAt: number } {
  const n = 14 * RATE;
  const echo = new Int16Array(n);
  echo.set(babble(12 * RATE, 1, 3000), 2 * RATE);
  const near = new Int16Array(n);
  const marker = markerChirp();
  near.set(marker, RATE);
  const nearEnd = nearKind === 'tone' ? tone(1000, 4000, 950) : babble(4 * RATE, 2, 950);
  near.set(nearEnd, 10 * RATE);
  const noise = babble(n, 3, 10);
  const mic = new Int16Array(n);
  for (let i = 0; i < n; i++) mic[i] = echo[i] + near[i] + noise[i];
  return { echo, near, mic, markerAt: RATE, nearAt: 10 * RATE };
}

/** What a device would send: gain g on the echo, the near end passed (or gated), 1234 samples of latency. */
function sent(t: RoomTimeline, echoGain: number, passNear: boolean): Int16Array {
  const out = new Int16Array(t.mic.length + 5000);
  for (let i = 0; i < t.mic.length; i++) {
    const v = echoGain * t.echo[i] + (passNear || i < 2 * RATE ? t.near[i] : 0);
    out[i + 1234] = Math.round(v);
  }
  return out;
}

describe('echo metrics', () => {
  it('finds the marker and the latency', () => {
    const t = timeline('tone');
    expect(alignSent(sent(t, 1, true), t, t.markerAt, markerChirp().length).offset).toBe(1234);
  });

  it('ERLE: ~0 dB without a canceller, ~30 dB at 1/31.6 of the echo, converged at once', () => {
    const t = timeline('tone');
    const none = echoFigures(t, sentOnRoom(sent(t, 1, true), 1234, t.mic.length), 1.4 * RATE, t.nearAt);
    expect(Math.abs(none.erleDb)).toBeLessThan(0.5);
    expect(none.convergenceS).toBeNaN();
    const good = echoFigures(t, sentOnRoom(sent(t, 10 ** (-30 / 20), true), 1234, t.mic.length), 1.4 * RATE, t.nearAt);
    expect(good.erleDb).toBeGreaterThan(29);
    expect(good.erleDb).toBeLessThan(31);
    expect(good.convergenceS).toBe(0);
  });

  it('double talk, tone: heard when passed (even over the echo), not when gated', () => {
    const t = timeline('tone');
    expect(doubleTalkTone(t, sentOnRoom(sent(t, 1, true), 1234, t.mic.length), 1000, t.nearAt, t.mic.length).heard).toBe(1);
    expect(doubleTalkTone(t, sentOnRoom(sent(t, 0, false), 1234, t.mic.length), 1000, t.nearAt, t.mic.length).heard).toBe(0);
  });

  it('double talk, speech: heard with the echo cancelled, not drowned by it (10 dB louder) nor gated', () => {
    const t = timeline('speech');
    const on = (g: number, pass: boolean) => sentOnRoom(sent(t, g, pass), 1234, t.mic.length);
    expect(doubleTalkSpeech(t, on(0.03, true), t.nearAt, t.mic.length).heard).toBe(1);
    expect(doubleTalkSpeech(t, on(1, true), t.nearAt, t.mic.length).heard).toBeLessThan(0.2);
    expect(doubleTalkSpeech(t, on(0, false), t.nearAt, t.mic.length).heard).toBe(0);
  });
});
