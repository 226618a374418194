// Detects a peer that is gone without closing (killed, frozen, network cut): werift alone notices only after
// ~30 s of consent-freshness failures. Two signals, then one question to the peer:
//  - media that was flowing stops (the companion and most services send audio continuously while a call is
//    up: silence frames, comfort noise) for mediaGapMs: a crash shows up within a few hundred ms;
//  - nothing at all (RTP, RTCP, data channel) for quietProbeMs: for services that send nothing between turns.
// Either one asks the transport to probe the peer (an ICE consent check, RFC 7675: a STUN request on the
// selected pair that any live ICE agent answers). A peer that answers keeps its call however quiet it is; one
// that does not is declared dead. Without a probe (a transport that cannot ask) the old rule holds: nothing for
// timeoutMs means dead.
// Cheap by design: the hot path only stores a timestamp and a counter; a check on the shared timer
// (sharedInterval.ts) reads them.
import { everyMs, type SharedInterval } from '../common/sharedInterval.js';

/** Asks the peer whether it is there; resolves true when it answered (never rejects). */
export type LivenessProbe = () => Promise<boolean>;

export interface LivenessOptions {
  /** no sign of life for this long: dead when there is no probe; probed (every quietProbeMs) when there is one */
  timeoutMs: number;
  /** steady inbound media that stops for this long triggers a probe at once */
  mediaGapMs?: number;
  /** how many packets in a row, each within 200 ms of the last, count as "media was flowing" (25 = 0.5 s) */
  flowingAfterPackets?: number;
}

/** what made the watchdog ask, for the log line */
export type ProbeTrigger = 'media_stopped' | 'quiet';

export class LivenessWatchdog {
  private lastSeen = 0;
  private lastMedia = 0;
  private streak = 0;
  private timer: SharedInterval | undefined;
  private fired = false;
  private probing = false;
  private readonly timeoutMs: number;
  private readonly mediaGapMs: number;
  private readonly flowingAfter: number;
  /** probes made and how they ended, for tests and the status snapshot */
  readonly stats = { probes: 0, answered: 0 };

  constructor(
    options: number | LivenessOptions,
    private readonly onDead: (silentForMs: number, why: string) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly probe?: LivenessProbe,
  ) {
    const o = typeof options === 'number' ? { timeoutMs: options } : options;
    this.timeoutMs = o.timeoutMs;
    this.mediaGapMs = o.mediaGapMs ?? 300;
    this.flowingAfter = o.flowingAfterPackets ?? 25;
  }

  /** Call on every inbound RTCP packet and data-channel message. */
  readonly seen = (): void => {
    this.lastSeen = this.now();
  };

  /** Call on every inbound RTP packet (also a sign of life). */
  readonly media = (): void => {
    const t = this.now();
    this.streak = t - this.lastMedia < 200 ? this.streak + 1 : 1;
    this.lastMedia = t;
    this.lastSeen = t;
  };

  start(): void {
    this.lastSeen = this.now();
    this.streak = 0;
    this.fired = false;
    this.probing = false;
    this.timer?.stop();
    this.timer = everyMs(this.periodMs, () => this.check());
  }

  /** Checks run every periodMs (on the timer the other periodic checks share: 250 ms for the default timeout,
   *  no extra wake-ups) and fire one period early, so death is declared at most timeoutMs after the last packet
   *  (the "within 5 s" promise), never later. A media gap is noticed within mediaGapMs + periodMs. */
  get periodMs(): number {
    return Math.max(20, Math.min(250, Math.floor(this.timeoutMs / 10)));
  }

  /** seconds of quiet after which a probe asks whether the peer is still there */
  private get quietProbeMs(): number {
    return Math.max(this.mediaGapMs, this.timeoutMs / 2);
  }

  check(): void {
    if (this.fired || this.probing) return;
    const now = this.now();
    const silent = now - this.lastSeen;
    if (!this.probe) {
      if (silent >= this.timeoutMs - this.periodMs) this.die(silent, `no audio, RTCP or data-channel message from the peer for ${Math.round(silent)} ms`);
      return;
    }
    if (this.streak >= this.flowingAfter && now - this.lastMedia >= this.mediaGapMs) void this.ask('media_stopped');
    else if (silent >= this.quietProbeMs) void this.ask('quiet');
  }

  private async ask(trigger: ProbeTrigger): Promise<void> {
    this.probing = true;
    this.stats.probes++;
    const askedAt = this.now();
    let answered = false;
    try {
      answered = await this.probe!();
    } catch {
      answered = false;
    }
    this.probing = false;
    if (this.fired || !this.timer) return; // stopped meanwhile
    // Anything that arrived while asking is an answer too (media resumed, a late RTCP).
    if (answered || this.lastSeen > askedAt) {
      this.stats.answered++;
      // The peer is there but sends no media now (a service quiet between turns): wait for media to flow again
      // before a media gap counts, and for another quiet period before asking again.
      this.streak = 0;
      this.lastSeen = Math.max(this.lastSeen, this.now());
      return;
    }
    const silent = this.now() - this.lastSeen;
    const after = trigger === 'media_stopped' ? 'its audio stopped' : 'a quiet spell';
    this.die(silent, `no audio, RTCP or data-channel message from the peer for ${Math.round(silent)} ms, and no answer to a consent check after ${after}`);
  }

  private die(silent: number, why: string): void {
    this.fired = true;
    this.stop();
    this.onDead(silent, why);
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }
}
