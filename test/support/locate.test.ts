// Finding a short signal in a longer one (test/support/locate.ts): the echo metrics and the echo room's delay
// measurement rest on it.
import { describe, expect, it } from 'vitest';
import { tone } from './audioCapture.js';
import { prng } from './echoRoom.js';
import { locate } from './locate.js';
import { speechClip } from './speechWav.js';

const RATE = 48_000;

/** What the echo room writes into the microphone: an echo (speech or a tone) over its -70 dBFS noise. */
function micLike(n: number, seed: number, content: Int16Array | undefined): Int16Array {
  const r = prng(seed);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round((content ? content[i % content.length] : 0) + 17 * (r() * 2 - 1));
  return out;
}

describe('locate', () => {
  it('finds a 200 ms segment in 1 s of noise, of speech over noise and of a tone over noise, to the sample', () => {
    const speech = speechClip('the story of the little red hen', { padBeforeMs: 0, padAfterMs: 0 }).pcm;
    for (const [name, content] of [['noise', undefined], ['speech', speech], ['tone', tone(1000, 1000, 3000)]] as const) {
      const hay = micLike(RATE, 7, content);
      const r = prng(3);
      for (let k = 0; k < 5; k++) {
        const at = Math.floor(r() * (RATE - 9600));
        const got = locate(hay, hay.subarray(at, at + 9600));
        expect(got.index, `${name} at ${at}`).toBe(at);
        expect(got.corr).toBeCloseTo(1, 6);
      }
    }
  });

  it('a segment that is not there: a low correlation, not a confident wrong place', () => {
    const hay = micLike(RATE, 13, undefined);
    const other = micLike(9600, 14, undefined);
    expect(locate(hay, other).corr).toBeLessThan(0.2);
  });

  it('refuses a needle longer than the haystack', () => {
    expect(() => locate(new Int16Array(100), new Int16Array(200))).toThrow(/needle of 200 samples in 100/);
  });
});
