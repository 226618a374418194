// The echo canceller's reference: what the downlink handed to the speaker, on a timeline of absolute sample
// positions (hrtime x rate), so the microphone side can ask "what was being played at this moment".
// Each stream (playback here, the microphone in echoCanceller.ts) is placed by a StreamClock: its frames are
// contiguous on the card's clock, so positions advance by exactly the frame length; the hrtime stamps (jittery
// by a few ms in JS callbacks) only re-anchor the stream when it really jumped (a device reopen, an underrun).
// Slots nothing was written to read as zeros: no playback is silence in the reference.
import { SAMPLE_RATE } from '../../protocol/media.js';
import { SpeexResampler } from './speexEcho.js';

/** Places the frames of one contiguous stream on the absolute timeline, re-anchoring only on real jumps. */
export class StreamClock {
  private next = NaN;
  /** slow offset between the stamps and the contiguous count (clock drift), followed, not jumped to */
  private drift = 0;
  private offCount = 0;
  private offSign = 0;
  jumps = 0;

  /** lateFrames: frames in a row stamped later than expected that make a jump (default 3). A capture stream's
   *  stamps are delivery times: a stalled event loop delivers its backlog late, in a burst, while the samples
   *  stay contiguous, so the canceller asks for more there (echoCanceller.ts). */
  constructor(
    private readonly jumpSamples: number,
    private readonly lateFrames = 3,
  ) {}

  /** measured: where the stamps put the frame's first sample; returns where the frame goes. */
  place(measured: number, n: number): number {
    if (Number.isNaN(this.next)) {
      this.next = Math.round(measured);
    } else {
      const err = measured - this.next - this.drift;
      if (Math.abs(err) > this.jumpSamples) {
        // Three frames in a row off (lateFrames if late): a jump, not one late callback; over a second off: a
        // stream that stopped.
        if (Math.sign(err) !== this.offSign) this.offCount = 0;
        this.offSign = Math.sign(err);
        if (++this.offCount >= (err > 0 ? this.lateFrames : 3) || Math.abs(err) > 25 * this.jumpSamples) {
          this.next = Math.round(measured);
          this.drift = 0;
          this.offCount = 0;
          this.jumps++;
        }
      } else {
        this.offCount = 0;
        this.drift += 0.01 * err;
      }
    }
    const p = this.next;
    this.next += n;
    return p;
  }

  /** The stream has a gap of n samples before its next frame (silence the device inserted). */
  skip(n: number): void {
    if (!Number.isNaN(this.next)) this.next += Math.round(n);
  }

  reset(): void {
    this.next = NaN;
    this.drift = 0;
    this.offCount = 0;
  }
}

export function nsToSamples(ns: bigint, rate: number): number {
  return (Number(ns) * rate) / 1e9;
}

export interface EchoReferenceOptions {
  /** the canceller's processing rate (16000 or 48000) */
  rate: number;
  /** history kept (default 2500 ms: the delay search window plus its longest lag) */
  ringMs?: number;
  nowNs?: () => bigint;
}

/** A stream re-anchored by more than this is a jump (reopen, underrun), not callback jitter. */
export const JUMP_MS = 40;

export class EchoReference {
  readonly rate: number;
  private readonly ring: Int16Array;
  private readonly size: number;
  private readonly down: SpeexResampler | undefined;
  private readonly clock: StreamClock;
  private readonly nowNs: () => bigint;
  /** end of what was written (absolute position); slots before end - size are gone */
  private end = -Infinity;
  readonly stats = { frames: 0, jumps: 0, starvedMs: 0 };

  constructor(o: EchoReferenceOptions) {
    this.rate = o.rate;
    this.size = Math.round(((o.ringMs ?? 2500) * o.rate) / 1000);
    this.ring = new Int16Array(this.size);
    this.down = o.rate === SAMPLE_RATE ? undefined : new SpeexResampler(SAMPLE_RATE, o.rate);
    this.clock = new StreamClock((JUMP_MS * o.rate) / 1000);
    this.nowNs = o.nowNs ?? (() => process.hrtime.bigint());
  }

  /** The downlink hands this frame (48 kHz) to the speaker with queuedMs of audio ahead of it. */
  notePlayback(frame: Int16Array, queuedMs: number): void {
    const pcm = this.down ? this.down.process(frame) : frame;
    const heard = nsToSamples(this.nowNs(), this.rate) + (queuedMs * this.rate) / 1000;
    const jumps = this.clock.jumps;
    const pos = this.clock.place(heard, pcm.length);
    if (this.clock.jumps !== jumps) this.stats.jumps++;
    this.write(pos, pcm);
    this.stats.frames++;
  }

  /**
   * The device played `ms` of silence for want of frames before the last `queuedMs` written (PlaybackDevice
   * onStarved): those move that much later and the stream goes on after them. Measured on the loaded test
   * machine: a stalled event loop wrote the next frame on the report of the last one handed, before the reports
   * of the silence that had already played; counted at the next write, the silence landed after that frame,
   * one frame (20 ms) of reference 20-80 ms early and the echo of it unexplained: the filter lost 10-30 dB for
   * 200-400 ms after each underrun.
   */
  noteStarved(ms: number, queuedMs: number): void {
    if (!(ms > 0)) return;
    const gap = Math.round((ms * this.rate) / 1000);
    this.stats.starvedMs += ms;
    this.clock.skip(gap);
    if (!Number.isFinite(this.end)) return;
    const q = Math.min(Math.round((queuedMs * this.rate) / 1000), this.size - gap);
    if (q <= 0) return;
    const tail = this.read(this.end - q, new Int16Array(q));
    const from = this.end - q;
    for (let p = from; p < this.end; p++) this.ring[mod(p, this.size)] = 0;
    this.write(from + gap, tail);
  }

  /** Writes samples at an absolute position; a gap since the last write becomes silence. */
  write(pos: number, pcm: Int16Array): void {
    const size = this.size;
    if (pos > this.end && Number.isFinite(this.end)) {
      const from = Math.max(this.end, pos - size);
      for (let p = from; p < pos; p++) this.ring[mod(p, size)] = 0;
    }
    for (let i = 0; i < pcm.length; i++) this.ring[mod(pos + i, size)] = pcm[i];
    // the newest write defines the end: after a jump back, what lay beyond it is no longer the stream
    this.end = pos + pcm.length;
  }

  /** Fills out with the reference from absolute position pos; zeros where nothing was (or is still) written. */
  read(pos: number, out: Int16Array): Int16Array {
    const size = this.size;
    const oldest = this.end - size;
    for (let i = 0; i < out.length; i++) {
      const p = pos + i;
      out[i] = p >= oldest && p < this.end ? this.ring[mod(p, size)] : 0;
    }
    return out;
  }

  reset(): void {
    this.end = -Infinity;
    this.clock.reset();
  }

  /** Frees the resampler (libspeexdsp). */
  close(): void {
    this.down?.close();
  }
}

function mod(p: number, n: number): number {
  const r = p % n;
  return r < 0 ? r + n : r;
}
