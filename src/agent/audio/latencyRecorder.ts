// Cheap latency counters for the audio links: a fixed ring of the last N samples (no allocation per record),
// read by the benchmark and by diagnostics (`speaker-agent doctor`).

export class LatencyRecorder {
  private readonly ring: Float64Array;
  private next = 0;
  /** Total samples recorded since creation (the ring keeps the last `capacity`). */
  count = 0;

  constructor(capacity = 4096) {
    this.ring = new Float64Array(capacity);
  }

  /** Records one latency given in nanoseconds. */
  recordNs(ns: bigint): void {
    this.ring[this.next] = Number(ns) / 1e6;
    this.next = (this.next + 1) % this.ring.length;
    this.count++;
  }

  /** The retained samples in ms, oldest first. */
  samplesMs(): number[] {
    const n = Math.min(this.count, this.ring.length);
    const out: number[] = [];
    const start = this.count > this.ring.length ? this.next : 0;
    for (let i = 0; i < n; i++) out.push(this.ring[(start + i) % this.ring.length]);
    return out;
  }

  /** p-th percentile (0..100) of the retained samples, NaN when there are none. */
  percentileMs(p: number): number {
    const s = this.samplesMs().sort((a, b) => a - b);
    if (s.length === 0) return NaN;
    return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  }

  clear(): void {
    this.count = 0;
    this.next = 0;
  }
}
