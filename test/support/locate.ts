// Finds where a short signal sits inside a longer one: normalised cross-correlation through the FFT
// (src/common/audio/signal.ts), O(n log n), so seconds of 48 kHz audio are searched in milliseconds.
import { fft } from '../../src/common/audio/signal.js';

export interface Located {
  /** index in `hay` where `needle` starts */
  index: number;
  /** normalised correlation there (1 = identical up to a gain) */
  corr: number;
}

/** Best position of `needle` in `hay` (needle.length <= hay.length). */
export function locate(hay: ArrayLike<number>, needle: ArrayLike<number>): Located {
  const h = hay.length;
  const m = needle.length;
  if (m === 0 || m > h) throw new Error(`locate: needle of ${m} samples in ${h}`);
  let n = 1;
  while (n < h + m) n <<= 1;
  const ar = new Float64Array(n);
  const ai = new Float64Array(n);
  const br = new Float64Array(n);
  const bi = new Float64Array(n);
  for (let i = 0; i < h; i++) ar[i] = hay[i];
  for (let i = 0; i < m; i++) br[i] = needle[i];
  fft(ar, ai);
  fft(br, bi);
  // A * conj(B), then the inverse transform as conj(fft(conj(X))) / n
  for (let i = 0; i < n; i++) {
    const re = ar[i] * br[i] + ai[i] * bi[i];
    const im = ai[i] * br[i] - ar[i] * bi[i];
    ar[i] = re;
    ai[i] = -im;
  }
  fft(ar, ai);
  let needleEnergy = 0;
  for (let i = 0; i < m; i++) needleEnergy += needle[i] * needle[i];
  // sliding energy of hay over m samples
  let win = 0;
  for (let i = 0; i < m; i++) win += hay[i] * hay[i];
  let best = -Infinity;
  let bestAt = 0;
  for (let k = 0; k + m <= h; k++) {
    if (k > 0) win += hay[k + m - 1] * hay[k + m - 1] - hay[k - 1] * hay[k - 1];
    const c = ar[k] / n / Math.sqrt(Math.max(win, 1e-9) * Math.max(needleEnergy, 1e-9));
    if (c > best) {
      best = c;
      bestAt = k;
    }
  }
  return { index: bestAt, corr: best };
}
