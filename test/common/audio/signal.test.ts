import { describe, expect, it } from 'vitest';
import { dominantFrequency, isSilent, rmsDbfs, sineWave } from '../../../src/common/audio/signal.js';

describe('signal', () => {
  it('measures RMS in dBFS: full-scale sine about -3 dBFS, half scale about -9, silence -Infinity', () => {
    expect(rmsDbfs(sineWave(1000, 48000, 0.5, 1))).toBeCloseTo(-3.01, 1);
    expect(rmsDbfs(sineWave(1000, 48000, 0.5, 0.5))).toBeCloseTo(-9.03, 1);
    expect(rmsDbfs(new Int16Array(100))).toBe(-Infinity);
    expect(rmsDbfs(new Int16Array(0))).toBe(-Infinity);
  });

  it('finds the dominant frequency of tones at several rates, also with a weaker second tone', () => {
    for (const [f, rate] of [[440, 48000], [1000, 16000], [3150, 22050], [97, 8000]]) {
      expect(Math.abs(dominantFrequency(sineWave(f, rate, 0.5), rate) - f)).toBeLessThan(Math.max(2, f * 0.005));
    }
    const a = sineWave(600, 16000, 0.5, 0.5);
    const b = sineWave(2500, 16000, 0.5, 0.1);
    const mix = a.map((v, i) => v + b[i]);
    expect(Math.abs(dominantFrequency(mix, 16000) - 600)).toBeLessThan(3);
    expect(dominantFrequency(new Int16Array(1000), 16000)).toBe(0);
  });

  it('isSilent follows the threshold', () => {
    const quiet = sineWave(440, 16000, 0.2, 0.001); // about -63 dBFS
    expect(isSilent(quiet)).toBe(true);
    expect(isSilent(quiet, -70)).toBe(false);
    expect(isSilent(sineWave(440, 16000, 0.2, 0.1))).toBe(false);
  });
});
