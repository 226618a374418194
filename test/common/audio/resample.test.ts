import { describe, expect, it } from 'vitest';
import { Resampler, resample } from '../../../src/common/audio/resample.js';
import { dominantFrequency, rmsDbfs, sineWave } from '../../../src/common/audio/signal.js';

describe('Resampler', () => {
  for (const [from, to] of [[48000, 16000], [22050, 48000], [16000, 48000], [44100, 16000], [16000, 22050]]) {
    it(`${from} -> ${to}: keeps a 1 kHz tone's frequency and level, with the right length`, () => {
      const tone = sineWave(1000, from, 1, 0.5);
      const out = resample(tone, from, to);
      expect(Math.abs(out.length - to)).toBeLessThanOrEqual(1);
      expect(dominantFrequency(out, to)).toBeGreaterThan(995);
      expect(dominantFrequency(out, to)).toBeLessThan(1005);
      // skip the filter's start-up transient
      expect(rmsDbfs(out.subarray(Math.round(to * 0.05)))).toBeCloseTo(rmsDbfs(tone), 0);
    });
  }

  it('removes content above the new Nyquist when decimating 48k -> 16k (no aliasing)', () => {
    const high = sineWave(10000, 48000, 1, 0.5); // would alias to 6 kHz
    expect(rmsDbfs(resample(high, 48000, 16000).subarray(800))).toBeLessThan(rmsDbfs(high) - 60);
    const edge = sineWave(9000, 48000, 1, 0.5); // would alias to 7 kHz
    expect(rmsDbfs(resample(edge, 48000, 16000).subarray(800))).toBeLessThan(rmsDbfs(edge) - 40);
  });

  it('gives identical output whether fed at once or in odd-sized chunks (state across chunks)', () => {
    const input = sineWave(440, 22050, 1, 0.7);
    const whole = resample(input, 22050, 48000);
    const r = new Resampler(22050, 48000);
    const parts: number[] = [];
    for (let i = 0, n = 1; i < input.length; i += n, n = (n * 7 + 3) % 997) {
      parts.push(...r.process(input.subarray(i, i + n)));
    }
    expect(parts.length).toBe(whole.length);
    expect(parts).toEqual(Array.from(whole));
  });

  it('reset() starts a new stream; bad rates throw', () => {
    const r = new Resampler(48000, 16000);
    const a = r.process(sineWave(300, 48000, 0.1));
    r.reset();
    const b = r.process(sineWave(300, 48000, 0.1));
    expect(Array.from(b)).toEqual(Array.from(a));
    expect(() => new Resampler(0, 16000)).toThrow(RangeError);
    expect(() => new Resampler(44100.5, 16000)).toThrow(RangeError);
  });
});
