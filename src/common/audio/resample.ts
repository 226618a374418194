// Streaming sample-rate conversion with a polyphase windowed-sinc (Kaiser) FIR. The ratio is reduced to L/M
// (e.g. 48000->16000 = 1/3, 22050->48000 = 320/147); each output sample is one K-tap dot product with the
// filter phase that lands on it, so the cost is K multiply-adds per output sample whatever L and M are.
// The low-pass cuts at 0.92 x the lower Nyquist, so decimation does not alias. State (the last K-1 input
// samples and the fractional position) carries across chunks: chunked and one-shot output are identical.

const KAISER_BETA = 8.6; // ~80 dB stopband

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
    if (term < 1e-12 * sum) break;
  }
  return sum;
}

export class Resampler {
  readonly fromRate: number;
  readonly toRate: number;
  private readonly up: number; // L
  private readonly down: number; // M
  private readonly taps: number; // K, taps per phase
  /** phases[p*K + k] = coefficient applied to x[i - k] for output phase p */
  private readonly phases: Float32Array;
  private buf: Float32Array; // history (K-1 samples) followed by the current chunk
  private t: number; // next output position, in upsampled units, relative to buf[0]

  constructor(fromRate: number, toRate: number, opts?: { tapsPerPhase?: number }) {
    if (!Number.isInteger(fromRate) || !Number.isInteger(toRate) || fromRate <= 0 || toRate <= 0) {
      throw new RangeError(`Resampler: rates must be positive integers, got ${fromRate} -> ${toRate}`);
    }
    this.fromRate = fromRate;
    this.toRate = toRate;
    const g = gcd(fromRate, toRate);
    this.up = toRate / g;
    this.down = fromRate / g;
    if (this.up > 4096) throw new RangeError(`Resampler: ratio ${toRate}/${fromRate} too fine (L=${this.up})`);
    // Decimation needs a longer filter for the same transition width at the input rate.
    const K = opts?.tapsPerPhase ?? Math.ceil(24 * Math.max(1, this.down / this.up));
    this.taps = K;
    const L = this.up;
    const N = L * K;
    const cutoff = (0.92 * 0.5) / Math.max(L, this.down); // cycles per upsampled sample
    const proto = new Float64Array(N);
    const center = (N - 1) / 2;
    const i0b = besselI0(KAISER_BETA);
    for (let n = 0; n < N; n++) {
      const x = n - center;
      const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
      const r = (2 * n) / (N - 1) - 1;
      proto[n] = sinc * (besselI0(KAISER_BETA * Math.sqrt(Math.max(0, 1 - r * r))) / i0b);
    }
    this.phases = new Float32Array(N);
    for (let p = 0; p < L; p++) {
      // normalise each phase to unity DC gain, so no phase adds a ripple at the output rate
      let s = 0;
      for (let k = 0; k < K; k++) s += proto[p + k * L];
      for (let k = 0; k < K; k++) this.phases[p * K + k] = s === 0 ? 0 : proto[p + k * L] / s;
    }
    this.buf = new Float32Array(K - 1 + 4096);
    this.t = (K - 1) * L;
  }

  /** Converts one chunk; returns the output samples that are complete so far (may be empty). */
  process(input: Int16Array): Int16Array {
    const K = this.taps;
    const L = this.up;
    const M = this.down;
    const hist = K - 1;
    const total = hist + input.length;
    if (this.buf.length < total) {
      const bigger = new Float32Array(total * 2);
      bigger.set(this.buf.subarray(0, hist));
      this.buf = bigger;
    }
    const buf = this.buf;
    for (let i = 0; i < input.length; i++) buf[hist + i] = input[i];
    // outputs whose newest input sample index floor(t/L) < total
    const count = this.t < total * L ? Math.ceil((total * L - this.t) / M) : 0;
    const out = new Int16Array(count);
    const phases = this.phases;
    // integer input index i and phase p of the next output, advanced without division
    let i = Math.floor(this.t / L);
    let p = this.t - i * L;
    const stepI = Math.floor(M / L);
    const stepP = M - stepI * L;
    for (let o = 0; o < count; o++) {
      const base = p * K;
      let acc = 0;
      for (let k = 0; k < K; k++) acc += phases[base + k] * buf[i - k];
      out[o] = acc >= 32767 ? 32767 : acc <= -32768 ? -32768 : Math.round(acc);
      i += stepI;
      p += stepP;
      if (p >= L) {
        p -= L;
        i++;
      }
    }
    // keep the last K-1 samples as history
    buf.copyWithin(0, total - hist, total);
    this.t = (i - (total - hist)) * L + p;
    return out;
  }

  /** Samples of delay the filter introduces, at the output rate. */
  get delaySamples(): number {
    return Math.round(((this.taps * this.up) / 2 / this.up) * (this.toRate / this.fromRate));
  }

  reset(): void {
    this.buf.fill(0);
    this.t = (this.taps - 1) * this.up;
  }
}

/** One-shot conversion of a whole buffer (same filter as the streaming path). */
export function resample(pcm: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return pcm;
  return new Resampler(fromRate, toRate).process(pcm);
}
