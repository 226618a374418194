// The echo canceller's training signals, made one frame at a time: the past seconds of reference and the echo a
// known room makes of them (or a silent microphone), which speex is run on at a restart and the steady filter
// learns from when the fast one converges (echoCanceller.ts). Made and run in slices beside the live frames, so
// the work never stalls the event loop: done at once (2 s of reference: a 65536-point FFT convolution and ~200
// speex frames) it took 30-90 ms on the loaded 2-core test machine, the speaker underran right after (the
// downlink keeps one 20 ms frame queued) and the canceller, seeing a break in the echo path, closed the gate on
// a user talking (issue #15, double talk).
import { fft } from '../../common/audio/signal.js';

export interface PrimerOptions {
  /** the reference from `L` samples before the training span to its end (L = room.length, or 0 without a room) */
  reference: Int16Array;
  /** samples per frame made */
  frame: number;
  /** the room's impulse response (taps at the processing rate), or undefined: a silent microphone against the
   *  raw reference (speex then only learns the far end's power) */
  room?: Float32Array;
  /** processing rate, for speex's DC notch */
  rate: number;
}

/** Makes (microphone, reference) training frames in order; next() returns undefined once all are made. */
export class EchoPrimer {
  readonly frames: number;
  private readonly ref: Int16Array;
  private readonly frame: number;
  private readonly taps: number;
  private readonly far: Int16Array | undefined;
  private readonly size: number;
  private readonly hr: Float64Array | undefined;
  private readonly hi: Float64Array | undefined;
  private readonly re: Float64Array | undefined;
  private readonly im: Float64Array | undefined;
  private readonly mic: Int16Array;
  /** the echo of `block` frames at a time (one FFT pair each), from frame `blockFrom` on */
  private readonly echo: Int16Array;
  private readonly block: number;
  private blockFrom = -Infinity;
  private index = 0;

  constructor(o: PrimerOptions) {
    this.ref = o.reference;
    this.frame = o.frame;
    this.taps = o.room?.length ?? 0;
    this.frames = Math.floor((this.ref.length - this.taps) / this.frame);
    this.mic = new Int16Array(this.frame);
    this.size = 1;
    this.block = 1;
    this.echo = new Int16Array(0);
    if (!o.room) return;
    // speex takes the DC off the microphone (its notch) and not off the reference, so the response it reports
    // includes the notch: trained on (ref * h, ref) it would learn the notch twice. Fed the reference notched the
    // same way instead, it sees notch(ref * h) = h * notch(ref) and learns h as it was. (An IIR over the whole
    // span: a cheap pass, done here.)
    this.far = notchDc(this.ref, o.rate);
    // overlap-save: the echo of `block` frames from them and the taps - 1 samples before, by one FFT of `size`
    // (4096 for 80 ms of taps: 8 frames of 20 ms at 16 kHz per FFT pair, ~0.1 ms a frame)
    let size = 1;
    while (size < 8 * this.frame + this.taps) size <<= 1;
    this.size = size;
    this.block = Math.floor((size - this.taps + 1) / this.frame);
    this.echo = new Int16Array(this.block * this.frame);
    this.hr = new Float64Array(size);
    this.hi = new Float64Array(size);
    for (let i = 0; i < this.taps; i++) this.hr[i] = o.room[i];
    fft(this.hr, this.hi);
    this.re = new Float64Array(size);
    this.im = new Float64Array(size);
  }

  /** The next training frame: the microphone (the echo, or silence) and the reference speex is given with it.
   *  Both buffers are reused by the next call. */
  next(): { mic: Int16Array; ref: Int16Array } | undefined {
    if (this.index >= this.frames) return undefined;
    const start = this.taps + this.index * this.frame; // first sample of the frame in `ref`
    this.index++;
    if (!this.far) return { mic: this.mic, ref: this.ref.subarray(start, start + this.frame) };
    const k = this.index - 1 - this.blockFrom;
    if (k < 0 || k >= this.block) this.makeBlock(this.index - 1);
    const at = (this.index - 1 - this.blockFrom) * this.frame;
    return { mic: this.echo.subarray(at, at + this.frame), ref: this.far.subarray(start, start + this.frame) };
  }

  /** The echo of frames first.. first + block - 1 (those past the end are not used). */
  private makeBlock(first: number): void {
    const re = this.re!, im = this.im!, hr = this.hr!, hi = this.hi!, size = this.size;
    this.blockFrom = first;
    const start = this.taps + first * this.frame;
    const from = start - (this.taps - 1);
    const len = Math.min(this.block * this.frame + this.taps - 1, this.ref.length - from);
    re.fill(0);
    im.fill(0);
    for (let i = 0; i < len; i++) re[i] = this.ref[from + i];
    fft(re, im);
    // (R H), inverse as conj(FFT(conj(.))) / size
    for (let k = 0; k < size; k++) {
      const a = re[k] * hr[k] - im[k] * hi[k];
      const b = re[k] * hi[k] + im[k] * hr[k];
      re[k] = a;
      im[k] = -b;
    }
    fft(re, im);
    for (let i = 0; i < this.echo.length; i++) this.echo[i] = clamp16(re[this.taps - 1 + i] / size);
  }

  get done(): boolean {
    return this.index >= this.frames;
  }
}

/** speex's DC notch (mdf.c filter_dc_notch16, its radius per rate), on a whole signal. */
export function notchDc(x: Int16Array, rate: number): Int16Array {
  const r = rate < 12_000 ? 0.9 : rate < 24_000 ? 0.982 : 0.992;
  const den2 = r * r + 0.7 * (1 - r) * (1 - r);
  const y = new Int16Array(x.length);
  let m0 = 0;
  let m1 = 0;
  for (let i = 0; i < x.length; i++) {
    const vin = x[i];
    const vout = m0 + vin;
    m0 = m1 + 2 * (-vin + r * vout);
    m1 = vin - den2 * vout;
    y[i] = clamp16(r * vout);
  }
  return y;
}

function clamp16(x: number): number {
  return Math.max(-32768, Math.min(32767, Math.round(x)));
}

/** Runs a small primer (a room of 80 taps, 10 frames) to its end, so that V8 has the primer's code compiled before
 *  a restart or a convergence needs it (echoCanceller.ts KEEP_WARM_FRAMES). */
export function warmUpPrimer(frame: number, rate: number): void {
  const taps = 80;
  const reference = new Int16Array(taps + 10 * frame);
  for (let i = 0; i < reference.length; i++) reference[i] = ((i * 7919) % 2001) - 1000;
  const room = new Float32Array(taps);
  room[5] = 0.5;
  const primer = new EchoPrimer({ reference, frame, room, rate });
  while (primer.next());
}
