// ONE drift-corrected 20 ms clock for every call's outgoing audio. A timer per call would cost a wake-up per call
// per frame; one shared tick keeps the cost per call at the work the call really has (a send, sometimes an encode).
// Drift correction: each wake-up computes which frame slots are due from a fixed start time, so timer jitter never
// accumulates. A slot served more than one frame period after it was due counts as late (the benchmark target).

export interface PacedStream {
  /** Called once per 20 ms slot; must not block. */
  tick(): void;
}

export interface PacerStats {
  /** frame slots served (per stream) */
  frames: number;
  /** frames sent more than lateThresholdMs after their slot */
  lateFrames: number;
  /** slots skipped because the loop was blocked longer than maxCatchUpMs */
  skippedFrames: number;
  maxLatenessMs: number;
}

export class FramePacer {
  private readonly streams = new Set<PacedStream>();
  private timer: NodeJS.Timeout | undefined;
  private startMs = 0;
  private slot = 0;
  readonly stats: PacerStats = { frames: 0, lateFrames: 0, skippedFrames: 0, maxLatenessMs: 0 };

  constructor(
    readonly frameMs = 20,
    private readonly lateThresholdMs = 20,
    /** after a longer stall, skip ahead instead of bursting frames the peer's jitter buffer would drop anyway */
    private readonly maxCatchUpMs = 200,
  ) {}

  add(stream: PacedStream): void {
    this.streams.add(stream);
    if (!this.timer) {
      this.startMs = performance.now();
      this.slot = 0;
      this.timer = setTimeout(this.run, 0);
    }
  }

  remove(stream: PacedStream): void {
    this.streams.delete(stream);
    if (this.streams.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  get size(): number {
    return this.streams.size;
  }

  resetStats(): void {
    Object.assign(this.stats, { frames: 0, lateFrames: 0, skippedFrames: 0, maxLatenessMs: 0 });
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.streams.clear();
  }

  private readonly run = (): void => {
    const now = performance.now();
    let lateness = now - (this.startMs + this.slot * this.frameMs);
    if (lateness > this.maxCatchUpMs) {
      const skip = Math.floor((lateness - this.frameMs) / this.frameMs);
      this.slot += skip;
      this.stats.skippedFrames += skip * this.streams.size;
      lateness -= skip * this.frameMs;
    }
    while (lateness >= 0) {
      const n = this.streams.size;
      this.stats.frames += n;
      if (lateness > this.lateThresholdMs) this.stats.lateFrames += n;
      if (lateness > this.stats.maxLatenessMs) this.stats.maxLatenessMs = lateness;
      for (const s of this.streams) s.tick();
      this.slot++;
      lateness -= this.frameMs;
    }
    if (this.streams.size === 0) {
      this.timer = undefined;
      return;
    }
    const delay = this.startMs + this.slot * this.frameMs - performance.now();
    this.timer = setTimeout(this.run, Math.max(0, delay));
  };
}
