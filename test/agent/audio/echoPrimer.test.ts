// The canceller's training frames (echoPrimer.ts): made a frame at a time, they must be what the whole-signal
// computation gave (the reference through the kept room, the reference notched as speex notches the microphone).
import { describe, expect, it } from 'vitest';
import { EchoPrimer, notchDc } from '../../../src/agent/audio/echoPrimer.js';

function noise(n: number, seed = 1): Int16Array {
  let x = seed;
  return new Int16Array(n).map(() => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return (x / 2 ** 31 - 0.5) * 8000;
  });
}

describe('echo canceller training frames', () => {
  it('with a room: each frame is the reference through its response (to the sample), beside the notched reference', () => {
    const L = 1280;
    const ref = noise(32_000 + L);
    const room = new Float32Array(L).map((_, i) => Math.exp(-i / 300) * (i % 7 === 0 ? 0.05 : -0.01));
    const primer = new EchoPrimer({ reference: ref, frame: 320, room, rate: 16_000 });
    const far = notchDc(ref, 16_000);
    let frames = 0;
    let worst = 0;
    for (let f = primer.next(); f; f = primer.next(), frames++) {
      for (let i = 0; i < 320; i++) {
        const t = L + frames * 320 + i;
        let y = 0;
        for (let k = 0; k < L; k++) y += room[k] * ref[t - k];
        worst = Math.max(worst, Math.abs(Math.round(y) - f.mic[i]));
        expect(f.ref[i]).toBe(far[t]);
      }
    }
    expect(frames).toBe(100);
    expect(primer.done).toBe(true);
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('without a room: a silent microphone against the raw reference', () => {
    const ref = noise(16_000, 7);
    const primer = new EchoPrimer({ reference: ref, frame: 320, rate: 16_000 });
    let frames = 0;
    for (let f = primer.next(); f; f = primer.next(), frames++) {
      expect(f.mic.every((v) => v === 0)).toBe(true);
      expect(Array.from(f.ref)).toEqual(Array.from(ref.subarray(frames * 320, (frames + 1) * 320)));
    }
    expect(frames).toBe(50);
  });
});
