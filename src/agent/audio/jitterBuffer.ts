// Receive-side jitter buffer for 20 ms Opus packets: pure logic (no timers, no decoding), driven by the
// downlink's playout clock, which calls pop() once per 20 ms.
//
// - Keyed by RTP sequence number, unwrapped to a growing "extended" number (16-bit wraparound).
// - Reorders: packets wait in a ring until their turn.
// - Adaptive target delay: starts at 40 ms; grows one frame on a late packet or an underrun (bounded by
//   maxDelayMs); shrinks one frame after a stable stretch (5 s), down to 20 ms on a clean link; the
//   interarrival jitter estimate (RFC 3550) sets a floor, and a shrink that is soon followed by a grow doubles
//   the wait before the next shrink, so a jittery link is not shrunk into an underrun every few seconds.
// - A gap (a later packet is there, this one is not) is first waited for while less than the target delay is
//   buffered (conceal without advancing: the packet may be reordered, and this is how a raised target takes
//   effect while playing); once the target's worth of later packets is there it is a loss: pop() says 'lost'
//   and hands the next packet's payload for FEC. Nothing buffered at all is an underrun: pop() says 'lost' (conceal) WITHOUT advancing, so a
//   slow sender clock or a jitter spike costs one concealed frame instead of a dropped packet; after
//   maxUnderrunFrames the stream is considered paused and pop() returns 'empty' until it has refilled.
// - Too much buffered (a burst, or a sender clock faster than ours) is trimmed one frame at a time, spaced out,
//   to keep latency low; far too much (more than 4 frames over: the sound card started late, the event loop
//   stalled) is cut back in one step instead of over seconds. A standing excess of one frame (more than the target at every pop for 2 s: jitter
//   would make the depth dip) is trimmed too; otherwise it would add 20 ms to every packet's wire-to-speaker
//   latency for the rest of the call (measured: a steady link sat at target + 1 frame indefinitely).
// - A late packet (its turn has passed) and a duplicate are dropped. An SSRC change or a sequence jump
//   of more than the ring size starts over (a new call or a restarted sender).

export interface RtpAudioPacket {
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
  marker?: boolean;
}

export type PushResult = 'accepted' | 'duplicate' | 'late' | 'reset';

export type PlayoutItem =
  | { kind: 'packet'; payload: Buffer; receivedAtNs: bigint; sequenceNumber: number }
  | { kind: 'lost'; /** payload of the packet after the gap, for Opus FEC */ next: Buffer | undefined }
  | { kind: 'empty' };

export interface JitterBufferOptions {
  /** Target delay at the start. Default 40 ms. */
  initialDelayMs?: number;
  /** Lowest target delay after shrinking on a steady link. Default 20 ms (one frame). */
  minDelayMs?: number;
  /** Upper bound of the target delay. Default 200 ms. */
  maxDelayMs?: number;
  /** Pops without a late packet or underrun before the target shrinks by one frame. Default 250 (5 s). */
  stablePopsToShrink?: number;
  /** Consecutive underrun concealments before the stream counts as paused. Default 5 (100 ms). */
  maxUnderrunFrames?: number;
}

interface Slot {
  ext: number;
  payload: Buffer;
  receivedAtNs: bigint;
}

const FRAME_MS = 20;
const RING = 512; // 10.24 s of 20 ms packets; a jump beyond it is a new stream
const MASK = RING - 1;
const SAMPLES_PER_MS = 48;
/** Pops over which a standing excess (the depth never down to the target) is looked for: 2 s. */
const STANDING_WINDOW_POPS = 100;

export class JitterBuffer {
  private readonly minFrames: number;
  private readonly maxFrames: number;
  private readonly stablePopsToShrink: number;
  private readonly maxUnderrunFrames: number;
  private readonly initialFrames: number;

  private readonly ring: (Slot | undefined)[] = new Array(RING).fill(undefined);
  private ssrc: number | undefined;
  /** Extended seq of the highest packet received; undefined before the first packet. */
  private highest: number | undefined;
  /** Extended seq to play next. */
  private next = 0;
  /** Extended seq of the last packet played or declared lost; nothing at or below it is accepted. */
  private lastDone = -Infinity;
  private playing = false;
  private underrunRun = 0;
  /** Packets held in the ring. */
  private held = 0;
  private stablePops = 0;
  private popsSinceShrink = Infinity;
  private shrinkBackoff = 1;
  private popsSinceTrim = 0;
  private minDepthInWindow = Infinity;
  private popsInWindow = 0;
  private targetFrames: number;
  // RFC 3550 interarrival jitter, in ms
  private jitterMs = 0;
  private lastTransit: number | undefined;

  private readonly lostItem: { kind: 'lost'; next: Buffer | undefined } = { kind: 'lost', next: undefined };
  private static readonly EMPTY: PlayoutItem = { kind: 'empty' };

  readonly stats = {
    received: 0,
    played: 0,
    lost: 0,
    late: 0,
    duplicate: 0,
    underruns: 0,
    /** concealed frames inserted while waiting at a hole (delay grew by one frame) */
    stretched: 0,
    trimmed: 0,
    resets: 0,
  };

  constructor(opts: JitterBufferOptions = {}) {
    const min = opts.minDelayMs ?? Math.min(20, opts.initialDelayMs ?? 20);
    const max = opts.maxDelayMs ?? 200;
    const initial = opts.initialDelayMs ?? Math.max(min, 40);
    if (!(min >= FRAME_MS && max >= min && initial >= min && initial <= max)) {
      throw new RangeError(`jitter buffer delays must satisfy 20 <= min <= initial <= max (got ${min}, ${initial}, ${max})`);
    }
    this.minFrames = Math.ceil(min / FRAME_MS);
    this.maxFrames = Math.floor(max / FRAME_MS);
    this.initialFrames = Math.ceil(initial / FRAME_MS);
    this.targetFrames = this.initialFrames;
    this.stablePopsToShrink = opts.stablePopsToShrink ?? 250;
    this.maxUnderrunFrames = opts.maxUnderrunFrames ?? 5;
  }

  /** Current target delay. */
  get targetDelayMs(): number {
    return this.targetFrames * FRAME_MS;
  }

  /** Audio waiting to be played (including holes), in ms. */
  get bufferedMs(): number {
    return this.depth() * FRAME_MS;
  }

  get jitterEstimateMs(): number {
    return this.jitterMs;
  }

  /**
   * Adds a received packet. arrivalMs is a monotonic clock reading (for the jitter estimate), receivedAtNs the
   * hrtime to carry through for latency measurement. A 'reset' result means a new stream started: the caller
   * must reset its decoder.
   */
  push(pkt: RtpAudioPacket, receivedAtNs: bigint, arrivalMs: number): PushResult {
    let result: PushResult = 'accepted';
    if (this.ssrc !== pkt.ssrc && this.ssrc !== undefined) {
      this.reset();
      result = 'reset';
    }
    this.ssrc = pkt.ssrc;
    let ext: number;
    if (this.highest === undefined) {
      ext = pkt.sequenceNumber & 0xffff;
      this.highest = ext;
      this.next = ext;
    } else {
      ext = this.highest + seqDiff(pkt.sequenceNumber, this.highest);
      const ahead = ext - this.next;
      if (ahead >= RING || ahead <= -RING) {
        // A jump this big is not jitter: the sender restarted or a new call reuses the SSRC.
        this.reset();
        this.ssrc = pkt.ssrc;
        ext = pkt.sequenceNumber & 0xffff;
        this.highest = ext;
        this.next = ext;
        result = 'reset';
      }
    }
    if (ext <= this.lastDone) {
      // Its turn has passed (played, or concealed as lost): too late. A wider buffer would have caught it.
      this.stats.late++;
      this.grow();
      return 'late';
    }
    const slot = this.ring[ext & MASK];
    if (slot && slot.ext === ext) {
      this.stats.duplicate++;
      return 'duplicate';
    }
    // Before playout (re)starts, play from the oldest packet there is: after a pause that is wherever the
    // sender resumed; a reordered older packet moves the start back.
    if (!this.playing && (this.held === 0 || ext < this.next)) this.next = ext;
    this.ring[ext & MASK] = { ext, payload: pkt.payload, receivedAtNs };
    this.held++;
    this.stats.received++;
    if (ext > this.highest) this.highest = ext;
    this.updateJitter(pkt.timestamp, arrivalMs);
    return result;
  }

  /**
   * The next 20 ms of playout. The returned object is reused by the next call: read it before calling again.
   */
  pop(): PlayoutItem {
    if (this.highest === undefined) return JitterBuffer.EMPTY;
    if (!this.playing) {
      if (this.depth() < this.targetFrames) return JitterBuffer.EMPTY;
      this.playing = true;
      this.popsSinceTrim = 0;
    }
    this.stablePops++;
    this.popsSinceShrink++;
    this.popsSinceTrim++;
    if (this.stablePops >= this.stablePopsToShrink * this.shrinkBackoff) {
      this.stablePops = 0;
      const floor = Math.max(this.minFrames, Math.ceil((2 * this.jitterMs) / FRAME_MS));
      if (this.targetFrames > floor) {
        this.targetFrames--;
        this.popsSinceShrink = 0;
      }
    }
    // Keep latency near the target: trim one frame at a time, every 10 pops (200 ms) when slightly over, all
    // but one excess frame at once when far over, so a burst, a fast sender clock or a sound card that lost
    // time (xruns) does not leave us permanently behind.
    const depth = this.depth();
    const excess = depth - this.targetFrames;
    if (excess > 4) {
      // Far behind (the sound card started late or the event loop stalled): catch up at once. One jump is
      // gentler on the listener than seconds of raised latency, and the gap was already heard as a stall.
      this.popsSinceTrim = 0;
      this.resetStandingWindow();
      while (this.depth() - this.targetFrames > 1) this.dropNext();
    } else if (excess > 1 && this.popsSinceTrim >= 10) {
      this.popsSinceTrim = 0;
      this.resetStandingWindow();
      this.dropNext();
    } else {
      if (depth < this.minDepthInWindow) this.minDepthInWindow = depth;
      if (++this.popsInWindow >= STANDING_WINDOW_POPS) {
        const standing = this.minDepthInWindow > this.targetFrames && this.ring[this.next & MASK]?.ext === this.next;
        this.resetStandingWindow();
        if (standing) {
          this.popsSinceTrim = 0;
          this.dropNext();
        }
      }
    }

    const slot = this.ring[this.next & MASK];
    if (slot && slot.ext === this.next) {
      this.ring[this.next & MASK] = undefined;
      this.held--;
      this.lastDone = this.next++;
      this.underrunRun = 0;
      this.stats.played++;
      return { kind: 'packet', payload: slot.payload, receivedAtNs: slot.receivedAtNs, sequenceNumber: slot.ext & 0xffff };
    }
    if (this.highest >= this.next && this.depth() <= this.targetFrames) {
      // A hole, but less than the target delay is buffered: the packet may just be late (reordered). Conceal
      // without advancing; this is also how the delay actually grows to a raised target while playing.
      this.stats.stretched++;
      this.lostItem.next = undefined;
      return this.lostItem;
    }
    if (this.highest >= this.next) {
      // A hole with the target delay's worth of later packets present: the packet is lost. Move on.
      this.lastDone = this.next++;
      this.underrunRun = 0;
      this.stats.lost++;
      const after = this.ring[this.next & MASK];
      this.lostItem.next = after && after.ext === this.next ? after.payload : undefined;
      return this.lostItem;
    }
    // Nothing buffered: underrun. Conceal without advancing, so the packet arriving late still plays.
    if (this.underrunRun === 0) {
      this.stats.underruns++;
      this.grow();
    }
    this.underrunRun++;
    if (this.underrunRun > this.maxUnderrunFrames) {
      // The sender paused (or the call is gone): stop concealing, refill before playing again.
      this.playing = false;
      this.underrunRun = 0;
      return JitterBuffer.EMPTY;
    }
    this.lostItem.next = undefined;
    return this.lostItem;
  }

  /** Forget everything (new call). */
  reset(): void {
    this.ring.fill(undefined);
    this.held = 0;
    this.ssrc = undefined;
    this.highest = undefined;
    this.next = 0;
    this.lastDone = -Infinity;
    this.playing = false;
    this.underrunRun = 0;
    this.resetStandingWindow();
    this.stablePops = 0;
    this.popsSinceShrink = Infinity;
    this.shrinkBackoff = 1;
    this.targetFrames = this.initialFrames;
    this.jitterMs = 0;
    this.lastTransit = undefined;
    this.stats.resets++;
  }

  private depth(): number {
    return this.highest === undefined || this.highest < this.next ? 0 : this.highest - this.next + 1;
  }

  private grow(): void {
    // Grown again soon after a shrink: the shrink was a mistake; wait twice as long before the next one,
    // so a link that needs the larger delay does not glitch every few seconds.
    if (this.popsSinceShrink < this.stablePopsToShrink && this.shrinkBackoff < 16) this.shrinkBackoff *= 2;
    this.popsSinceShrink = Infinity;
    this.stablePops = 0;
    if (this.targetFrames < this.maxFrames) this.targetFrames++;
  }

  private resetStandingWindow(): void {
    this.minDepthInWindow = Infinity;
    this.popsInWindow = 0;
  }

  private dropNext(): void {
    const slot = this.ring[this.next & MASK];
    if (slot && slot.ext === this.next) this.held--;
    this.ring[this.next & MASK] = undefined;
    this.lastDone = this.next++;
    this.stats.trimmed++;
  }

  private updateJitter(rtpTimestamp: number, arrivalMs: number): void {
    // transit = arrival - send time (in ms, up to a constant offset); the 32-bit timestamp wraps, so use
    // the difference to the previous one modulo 2^32.
    const tsMs = (rtpTimestamp >>> 0) / SAMPLES_PER_MS;
    const transit = arrivalMs - tsMs;
    if (this.lastTransit !== undefined) {
      let d = Math.abs(transit - this.lastTransit);
      const wrapMs = 2 ** 32 / SAMPLES_PER_MS;
      if (d > wrapMs / 2) d = Math.abs(d - wrapMs);
      if (d < 2000) this.jitterMs += (d - this.jitterMs) / 16;
    }
    this.lastTransit = transit;
  }
}

/** Signed difference a - b of two 16-bit sequence numbers, in -32768..32767. */
export function seqDiff(a: number, b: number): number {
  return ((((a - b) & 0xffff) + 0x8000) & 0xffff) - 0x8000;
}
