// Detects a peer that vanished without closing (no BYE, no DTLS close, no ICE failure yet): werift notices
// only after ~30 s of consent-freshness failures. The companion server sends audio continuously (silence
// frames included), so a live call always has inbound RTP; nothing for `timeoutMs` means the call is dead.
// Cheap by design: the hot path only stores a timestamp; a check on a shared timer (sharedInterval.ts) reads it.
import { everyMs, type SharedInterval } from '../common/sharedInterval.js';

export class LivenessWatchdog {
  private lastSeen = 0;
  private timer: SharedInterval | undefined;
  private fired = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onDead: (silentForMs: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Call on every inbound RTP/RTCP packet and data-channel message. */
  readonly seen = (): void => {
    this.lastSeen = this.now();
  };

  start(): void {
    this.lastSeen = this.now();
    this.fired = false;
    this.timer?.stop();
    this.timer = everyMs(this.periodMs, () => this.check());
  }

  /** Checks run every periodMs and fire one period early, so death is declared at most timeoutMs after the
   *  last packet (the "within 5 s" promise), never later. */
  get periodMs(): number {
    return Math.max(20, Math.min(250, Math.floor(this.timeoutMs / 10)));
  }

  check(): void {
    if (this.fired) return;
    const silent = this.now() - this.lastSeen;
    if (silent >= this.timeoutMs - this.periodMs) {
      this.fired = true;
      this.stop();
      this.onDead(silent);
    }
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }
}
