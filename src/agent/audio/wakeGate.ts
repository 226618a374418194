// The wake gate: a microphone stage (micStages.ts) that keeps the microphone off the wire until listening
// opens, feeds the local wake word engine every frame (also while closed), and keeps a pre-roll ring so the
// words said right after the wake word, before the engine decided, are not lost.
//
// While closed it returns undefined: nothing is encoded or sent (the Uplink's keep-alive sends a silent Opus
// packet now and then, DTX-like, so the call and the service's idle timeout stay happy, and the service's VAD
// hears digital silence: see uplink.ts). Sending nothing instead of 50 encoded silence frames a second also saves
// the encoder's CPU while idle.
//
// On open(fromNs) the frames captured since fromNs (the end of the wake word minus the pre-roll) are sent first,
// then the live ones; the backlog drains at one extra frame per captured frame (the Uplink asks flush()), i.e.
// at twice real time: a 1 s backlog is caught up in 1 s, never one burst of 50 packets.
import { FRAME_MS, FRAME_SAMPLES } from '../../protocol/media.js';
import type { MicFrame, MicStage } from './micStages.js';

/** What the gate needs of a wake word engine (src/agent/wake/wakeWord.ts). */
export interface WakeFeed {
  feed(pcm48k: Int16Array, capturedAtNs: bigint): void;
}

export interface WakeGateOptions {
  /** audio before the end of the wake word that is sent when listening opens (ms) */
  preRollMs: number;
  /** how late a wake event may arrive after the end of the wake word and still have its pre-roll (ms) */
  maxDetectLatencyMs?: number;
  engine?: WakeFeed;
  /** open from the start (mode `always`) */
  open?: boolean;
}

export class WakeGate implements MicStage {
  private engine: WakeFeed | undefined;
  private readonly slots: Int16Array[];
  private readonly times: BigInt64Array;
  /** frames written to the ring, total (the next slot is written % size) */
  private written = 0;
  /** the next ring frame to send while a backlog drains; === written when live */
  private next = 0;
  private isOpen: boolean;
  private readonly out: MicFrame = { pcm: new Int16Array(0), capturedAtNs: 0n };
  readonly stats = { fedToEngine: 0, held: 0, passed: 0, preRollFrames: 0, flushed: 0 };

  constructor(o: WakeGateOptions) {
    if (!(o.preRollMs >= 0)) throw new RangeError(`wake gate preRollMs must be >= 0, got ${o.preRollMs}`);
    const size = Math.ceil((o.preRollMs + (o.maxDetectLatencyMs ?? 1500)) / FRAME_MS) + 2;
    this.slots = Array.from({ length: size }, () => new Int16Array(FRAME_SAMPLES));
    this.times = new BigInt64Array(size);
    this.engine = o.engine;
    this.isOpen = o.open ?? false;
  }

  setEngine(engine: WakeFeed | undefined): void {
    this.engine = engine;
  }

  get open(): boolean {
    return this.isOpen;
  }

  /** Frames waiting to be sent (the pre-roll still draining). */
  get backlog(): number {
    return this.written - this.next;
  }

  /** Opens the microphone onto the wire; fromNs: send what was captured since then first (pre-roll). */
  openFrom(fromNs?: bigint): void {
    this.isOpen = true;
    this.next = this.written;
    if (fromNs === undefined) return;
    const oldest = Math.max(0, this.written - this.slots.length + 1);
    let i = this.written;
    while (i > oldest && this.times[(i - 1) % this.slots.length] >= fromNs) i--;
    this.next = i;
    this.stats.preRollFrames += this.written - i;
  }

  close(): void {
    this.isOpen = false;
    this.next = this.written;
  }

  process(frame: MicFrame): MicFrame | undefined {
    if (this.engine) {
      this.engine.feed(frame.pcm, frame.capturedAtNs);
      this.stats.fedToEngine++;
    }
    const slot = this.written % this.slots.length;
    this.slots[slot].set(frame.pcm.length === FRAME_SAMPLES ? frame.pcm : frame.pcm.subarray(0, FRAME_SAMPLES));
    this.times[slot] = frame.capturedAtNs;
    this.written++;
    if (!this.isOpen) {
      this.next = this.written;
      this.stats.held++;
      return undefined;
    }
    this.stats.passed++;
    if (this.next === this.written - 1) {
      this.next = this.written;
      return frame; // live: no copy
    }
    return this.fromRing();
  }

  /** One more frame of the backlog, if any (the Uplink asks once per captured frame). */
  flush(): MicFrame | undefined {
    if (!this.isOpen || this.next >= this.written) return undefined;
    this.stats.flushed++;
    return this.fromRing();
  }

  private fromRing(): MicFrame {
    const slot = this.next % this.slots.length;
    this.next++;
    this.out.pcm = this.slots[slot];
    this.out.capturedAtNs = this.times[slot];
    return this.out;
  }
}
