// Small signal helpers used by tests, the VAD and voice analysis: level, silence, dominant frequency, joining PCM.

/** RMS level in dBFS (a full-scale square wave is 0 dBFS, a full-scale sine about -3 dBFS). -Infinity for silence. */
export function rmsDbfs(pcm: Int16Array): number {
  if (pcm.length === 0) return -Infinity;
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += pcm[i] * pcm[i];
  const rms = Math.sqrt(sum / pcm.length);
  return rms === 0 ? -Infinity : 20 * Math.log10(rms / 32768);
}

/** true when the RMS level is below thresholdDbfs (default -50 dBFS). */
export function isSilent(pcm: Int16Array, thresholdDbfs = -50): boolean {
  return rmsDbfs(pcm) < thresholdDbfs;
}

/** In-place radix-2 FFT of (re, im); length must be a power of two. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      let t = re[i]; re[i] = re[j]; re[j] = t;
      t = im[i]; im[i] = im[j]; im[j] = t;
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = (-2 * Math.PI) / len;
    const wr = Math.cos(ang);
    const wi = Math.sin(ang);
    for (let i = 0; i < n; i += len) {
      let cr = 1;
      let ci = 0;
      for (let k = 0; k < len / 2; k++) {
        const a = i + k;
        const b = a + len / 2;
        const tr = re[b] * cr - im[b] * ci;
        const ti = re[b] * ci + im[b] * cr;
        re[b] = re[a] - tr; im[b] = im[a] - ti;
        re[a] += tr; im[a] += ti;
        const ncr = cr * wr - ci * wi;
        ci = cr * wi + ci * wr;
        cr = ncr;
      }
    }
  }
}

/** Averaged (Welch) power spectrum with a Hann window: power[k] for k = 0..size/2, bin width sampleRate/size. */
export function powerSpectrum(pcm: Int16Array, size = 4096): Float64Array {
  let n = 1;
  while (n < size) n <<= 1;
  const power = new Float64Array(n / 2 + 1);
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  const hop = n / 2;
  let frames = 0;
  for (let start = 0; start === 0 || start + n <= pcm.length; start += hop) {
    re.fill(0);
    im.fill(0);
    const len = Math.min(n, pcm.length - start);
    for (let i = 0; i < len; i++) re[i] = pcm[start + i] * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (len - 1 || 1)));
    fft(re, im);
    for (let k = 0; k <= n / 2; k++) power[k] += re[k] * re[k] + im[k] * im[k];
    frames++;
    if (len < n) break;
  }
  for (let k = 0; k < power.length; k++) power[k] /= frames;
  return power;
}

/** The frequency (Hz) of the strongest spectral peak, refined by parabolic interpolation. 0 for silence. */
export function dominantFrequency(pcm: Int16Array, sampleRate: number): number {
  if (pcm.length < 4) return 0;
  const size = Math.min(8192, 1 << Math.floor(Math.log2(Math.max(4, pcm.length))));
  const p = powerSpectrum(pcm, size);
  let best = 1;
  for (let k = 2; k < p.length - 1; k++) if (p[k] > p[best]) best = k;
  if (p[best] === 0) return 0;
  const a = Math.log(p[best - 1] + 1e-12);
  const b = Math.log(p[best] + 1e-12);
  const c = Math.log(p[best + 1] + 1e-12);
  const denom = a - 2 * b + c;
  const delta = denom === 0 ? 0 : (0.5 * (a - c)) / denom;
  const n = (p.length - 1) * 2;
  return ((best + delta) * sampleRate) / n;
}

/** A test/diagnostic tone: amplitude in 0..1 of full scale. */
export function sineWave(freqHz: number, sampleRate: number, durationSec: number, amplitude = 0.5): Int16Array {
  const n = Math.round(sampleRate * durationSec);
  const out = new Int16Array(n);
  const w = (2 * Math.PI * freqHz) / sampleRate;
  for (let i = 0; i < n; i++) out[i] = Math.round(Math.sin(w * i) * amplitude * 32767);
  return out;
}

/** The parts one after the other, in one new array. */
export function concatPcm(parts: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
