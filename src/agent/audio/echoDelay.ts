// The bulk delay between the playback reference and its echo in the microphone (ALSA and sound-server buffers,
// the room: 30..300 ms and more), estimated from the signals themselves and tracked as it changes (a device
// reopen, an underrun, a new latency), so the echo canceller's adaptive filter only has to cover the room.
//
// How: both streams, already on one timeline (echoReference.ts), are low-passed to 4 kHz; every hop (250 ms)
// the last second of microphone is cross-correlated with the reference over lags minMs..maxMs by GCC-PHAT
// (the cross-spectrum whitened to unit magnitude, 200-1800 Hz): a room's colouring and the speech's own
// spectrum flatten out and the echo's delay stands as one sharp peak. Only windows where the reference was
// playing for a good part are used. A peak counts when it stands well above the correlation's floor
// (confidence = peak / RMS over the searched lags); a new delay is taken when two estimates in a row agree.
import { fft } from '../../common/audio/signal.js';
import { SpeexResampler } from './speexEcho.js';

export const ESTIMATOR_RATE = 4000;

export interface EchoDelayOptions {
  /** rate of the samples pushed (the canceller's processing rate) */
  rate: number;
  minMs?: number;
  maxMs?: number;
  windowMs?: number;
  /** how often the delay is estimated (default 250 ms) */
  hopMs?: number;
  /** how often while `relaxed` (default 1000 ms) */
  idleHopMs?: number;
  /** peak / RMS of the correlation below which an estimate is ignored */
  minConfidence?: number;
  /** run the correlation at construction, for V8 to compile it (default true; false only to measure the cost of a
   *  cold first estimate, bench/agent-aec.bench.ts) */
  warmUp?: boolean;
}

export interface DelayEstimate {
  delayMs: number;
  confidence: number;
}

/** RMS (s16) above which a 20 ms block of reference counts as playing (about -50 dBFS). */
const ACTIVE_RMS = 100;
/** RMS (s16) of the microphone window below which nothing is estimated (about -80 dBFS) */
const QUIET_MIC_RMS = 3;
/** part of the searched reference span that must be playing for an estimate */
const MIN_ACTIVE = 0.2;
const BLOCK = ESTIMATOR_RATE / 50; // 20 ms
/** confidence that takes a first delay from one estimate */
const FIRST_CONFIDENCE = 12;

export class EchoDelay {
  readonly minMs: number;
  readonly maxMs: number;
  /** confidence under which an estimate is not counted (it is still `last`) */
  readonly minConfidence: number;
  private readonly window: number; // mic window, samples at 4 kHz
  private readonly minLag: number;
  private readonly maxLag: number;
  private readonly hop: number;
  private readonly idleHop: number;
  /** set by the canceller while it cancels well: estimates are then made less often (CPU), since a change of
   *  delay shows at once as echo leaking through and clears this */
  relaxed = false;
  private readonly n: number; // FFT size
  private readonly span: number; // reference samples kept = window + maxLag
  private readonly micRing: Float32Array;
  private readonly refRing: Float32Array;
  private readonly refBlockEnergy: Float64Array;
  private written = 0;
  private sinceEstimate = 0;
  private readonly micDown: SpeexResampler | undefined;
  private readonly refDown: SpeexResampler | undefined;
  private readonly mr: Float64Array;
  private readonly mi: Float64Array;
  private readonly rr: Float64Array;
  private readonly ri: Float64Array;
  private readonly bandLo: number;
  private readonly bandHi: number;
  private pending: DelayEstimate | undefined;
  /** the tracked delay (undefined until two estimates agreed) */
  current: DelayEstimate | undefined;
  /** the last estimate made, agreeing or not */
  last: DelayEstimate | undefined;
  readonly stats = { estimates: 0, skippedInactive: 0, skippedQuietMic: 0, lowConfidence: 0, changes: 0 };

  constructor(o: EchoDelayOptions) {
    this.minMs = o.minMs ?? 0;
    this.maxMs = o.maxMs ?? 500;
    this.minConfidence = o.minConfidence ?? 8;
    const ms = (x: number) => Math.round((x * ESTIMATOR_RATE) / 1000);
    this.window = ms(o.windowMs ?? 1000);
    this.minLag = ms(this.minMs);
    this.maxLag = ms(this.maxMs);
    this.hop = ms(o.hopMs ?? 250);
    this.idleHop = ms(o.idleHopMs ?? 1000);
    if (!(this.minLag >= 0 && this.maxLag > this.minLag && this.window > 0)) throw new RangeError('echo delay: bad lag range or window');
    // whole 20 ms blocks, so the activity blocks tile the ring
    this.span = Math.ceil((this.window + this.maxLag) / BLOCK) * BLOCK;
    let n = 1;
    while (n < this.span) n <<= 1;
    this.n = n;
    this.micRing = new Float32Array(this.window);
    this.refRing = new Float32Array(this.span);
    this.refBlockEnergy = new Float64Array(this.span / BLOCK);
    const down = (): SpeexResampler | undefined => (o.rate === ESTIMATOR_RATE ? undefined : new SpeexResampler(o.rate, ESTIMATOR_RATE));
    this.micDown = down();
    this.refDown = down();
    this.mr = new Float64Array(n);
    this.mi = new Float64Array(n);
    this.rr = new Float64Array(n);
    this.ri = new Float64Array(n);
    this.bandLo = Math.floor((200 * n) / ESTIMATOR_RATE);
    this.bandHi = Math.ceil((1800 * n) / ESTIMATOR_RATE);
    // three runs: V8 has a function optimised after a few (the FFT's first call 15.6 ms, the second 0.6, the third 0.24)
    if (o.warmUp ?? true) this.warmUp(3);
  }

  /** Runs the correlation (its FFTs) on what the rings hold and throws the result away, so that V8 has it compiled
   *  before the far end plays (echoCanceller.ts KEEP_WARM_FRAMES). Touches only its scratch buffers. */
  warmUp(runs = 1): void {
    for (let i = 0; i < runs; i++) this.correlate();
  }

  /**
   * One frame of microphone and the reference played at the same moment (same timeline position, same length).
   * Returns true when the tracked delay changed with this frame.
   */
  push(mic: Int16Array, reference: Int16Array): boolean {
    const m = this.micDown ? this.micDown.process(mic) : mic;
    const r = this.refDown ? this.refDown.process(reference) : reference;
    const count = Math.min(m.length, r.length);
    for (let i = 0; i < count; i++) {
      const w = this.written + i;
      this.micRing[w % this.window] = m[i];
      this.refRing[w % this.span] = r[i];
      const b = Math.floor((w % this.span) / BLOCK);
      if (w % BLOCK === 0) this.refBlockEnergy[b] = 0;
      this.refBlockEnergy[b] += r[i] * r[i];
    }
    this.written += count;
    this.sinceEstimate += count;
    if (this.sinceEstimate < (this.relaxed ? this.idleHop : this.hop)) return false;
    this.sinceEstimate = 0;
    return this.estimateAndTrack();
  }

  /** Forget everything (a new call, a closed device). */
  reset(): void {
    this.micRing.fill(0);
    this.refRing.fill(0);
    this.refBlockEnergy.fill(0);
    this.written = 0;
    this.sinceEstimate = 0;
    this.current = undefined;
    this.pending = undefined;
    this.last = undefined;
  }

  /** Frees the resamplers (libspeexdsp). */
  close(): void {
    this.micDown?.close();
    this.refDown?.close();
  }

  private estimateAndTrack(): boolean {
    const e = this.estimate();
    if (!e) return false;
    this.last = e;
    if (e.confidence < this.minConfidence) {
      this.stats.lowConfidence++;
      return false;
    }
    const agrees = (a: DelayEstimate | undefined) => a !== undefined && Math.abs(a.delayMs - e.delayMs) <= 1;
    if (agrees(this.current)) {
      this.current = e;
      this.pending = undefined;
      return false;
    }
    // the first delay: one clear peak is enough (noise alone gives a confidence of about 4 over 2000 lags)
    if (agrees(this.pending) || (this.current === undefined && e.confidence >= FIRST_CONFIDENCE)) {
      this.current = e;
      this.pending = undefined;
      this.stats.changes++;
      return true;
    }
    this.pending = e;
    return false;
  }

  /** One GCC-PHAT estimate over the current window; undefined when the reference was mostly silent. */
  estimate(): DelayEstimate | undefined {
    const limit = ACTIVE_RMS * ACTIVE_RMS * BLOCK;
    let active = 0;
    for (let b = 0; b < this.refBlockEnergy.length; b++) if (this.refBlockEnergy[b] > limit) active++;
    if (active < MIN_ACTIVE * this.refBlockEnergy.length) {
      this.stats.skippedInactive++;
      return undefined;
    }
    // A microphone in digital silence (muted, a virtual card) has no echo to find; whitening its rounding
    // residue would make a peak out of nothing.
    let micEnergy = 0;
    for (let t = 0; t < this.window; t++) micEnergy += this.micRing[t] * this.micRing[t];
    if (micEnergy < QUIET_MIC_RMS * QUIET_MIC_RMS * this.window) {
      this.stats.skippedQuietMic++;
      return undefined;
    }
    this.stats.estimates++;
    const { best, bestLag, rms } = this.correlate();
    return { delayMs: (bestLag * 1000) / ESTIMATOR_RATE, confidence: best / rms };
  }

  /** GCC-PHAT of the rings: the correlation's peak (lag, samples at ESTIMATOR_RATE) and its RMS over the lags. */
  private correlate(): { best: number; bestLag: number; rms: number } {
    const { mr, mi, rr, ri, n, window, span } = this;
    mr.fill(0);
    mi.fill(0);
    // Both real signals in one complex FFT (mic as the real part, reference as the imaginary part), split after:
    // M[k] = (X[k] + conj X[n-k]) / 2, R[k] = (X[k] - conj X[n-k]) / 2j. Oldest first:
    // mic'[t] = mic[end - window + t], ref'[k] = ref[end - span + k].
    const w0 = this.written;
    for (let t = Math.max(0, window - w0); t < window; t++) mr[t] = this.micRing[(w0 - window + t) % window];
    for (let k = Math.max(0, span - w0); k < span; k++) mi[k] = this.refRing[(w0 - span + k) % span];
    fft(mr, mi);
    // G = conj(M) R / |conj(M) R| in band, 0 elsewhere; stored conjugated in (rr, ri) for the inverse
    rr.fill(0);
    ri.fill(0);
    for (let k = this.bandLo; k <= this.bandHi; k++) {
      const j = n - k;
      const xr = mr[k], xi = mi[k], yr = mr[j], yi = mi[j];
      const Mr = (xr + yr) / 2, Mi = (xi - yi) / 2;
      const Rr = (xi + yi) / 2, Ri = (yr - xr) / 2;
      const re = Mr * Rr + Mi * Ri;
      const im = Mr * Ri - Mi * Rr;
      const mag = Math.sqrt(re * re + im * im) + 1e-9;
      // bin k and its mirror n-k (the correlation is real): G[n-k] = conj G[k]; inverse via the conjugate
      rr[k] = re / mag;
      ri[k] = -im / mag;
      rr[j] = re / mag;
      ri[j] = im / mag;
    }
    fft(rr, ri); // = n x conj(IFFT(G)); c[s] is rr[s] (real)
    // s = span - window - lag
    let best = -Infinity;
    let bestLag = this.minLag;
    let sum2 = 0;
    for (let lag = this.minLag; lag <= this.maxLag; lag++) {
      const c = rr[this.span - this.window - lag];
      sum2 += c * c;
      if (c > best) {
        best = c;
        bestLag = lag;
      }
    }
    const rms = Math.sqrt(sum2 / (this.maxLag - this.minLag + 1)) || 1e-12;
    return { best, bestLag, rms };
  }
}
