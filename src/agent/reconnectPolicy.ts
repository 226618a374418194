// How long to wait before re-creating a call that failed or dropped. Injectable (like livekit's
// ReconnectPolicy) so tests and deployments can choose; the default is exponential backoff with full jitter.
// The common outage is a server restart (seconds): during the first fastRetryWindowMs of a failure streak the
// delay is capped at fastRetryMaxDelayMs, so the call is back within about a second of the server; only a
// longer outage backs off to maxDelayMs. Retrying a refused connection costs the server nothing; a server that
// answers 429/503 with Retry-After (lastError.retryAfterMs) is busy, and is left alone at least that long.
import { AgentError } from './errors.js';

export interface ReconnectContext {
  /** 1 for the first retry after a failure, counting up until a call is stable again */
  attempt: number;
  lastError?: AgentError;
  /** time since the first failure of this streak */
  elapsedMs: number;
}

export interface ReconnectPolicy {
  /** ms to wait before the next attempt, or null to give up */
  nextDelayMs(ctx: ReconnectContext): number | null;
}

export interface DefaultReconnectOptions {
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** after the server rejected the credentials: retrying fast cannot help and would hammer it */
  authRejectedDelayMs?: number;
  /** at the start of a failure streak, delays are capped at fastRetryMaxDelayMs for this long */
  fastRetryWindowMs?: number;
  fastRetryMaxDelayMs?: number;
  /** source of randomness in [0,1); injectable for tests */
  random?: () => number;
}

export class DefaultReconnectPolicy implements ReconnectPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly authRejectedDelayMs: number;
  readonly fastRetryWindowMs: number;
  readonly fastRetryMaxDelayMs: number;
  private readonly random: () => number;

  constructor(o: DefaultReconnectOptions = {}) {
    this.initialDelayMs = o.initialDelayMs ?? 250;
    this.maxDelayMs = o.maxDelayMs ?? 30_000;
    this.authRejectedDelayMs = o.authRejectedDelayMs ?? 60_000;
    this.fastRetryWindowMs = o.fastRetryWindowMs ?? 20_000;
    this.fastRetryMaxDelayMs = o.fastRetryMaxDelayMs ?? 1_000;
    this.random = o.random ?? Math.random;
  }

  nextDelayMs(ctx: ReconnectContext): number {
    if (ctx.lastError?.code === 'auth_rejected') {
      // Some jitter so a fleet of devices rejected together does not retry in lockstep.
      return Math.round(this.authRejectedDelayMs * (1 + 0.25 * this.random()));
    }
    // Full jitter (AWS architecture blog): uniform in [initial/2, exp], exp doubling per attempt up to the cap.
    // The first window is [initial/2, 1.5 x initial] (the same mean): a window of width 0 there sent a whole
    // fleet back in the same millisecond after a server restart.
    const cap = ctx.elapsedMs < this.fastRetryWindowMs ? Math.min(this.maxDelayMs, this.fastRetryMaxDelayMs) : this.maxDelayMs;
    const exp = Math.min(cap, Math.max(1.5 * this.initialDelayMs, this.initialDelayMs * 2 ** Math.min(30, Math.max(0, ctx.attempt - 1))));
    const low = Math.min(this.initialDelayMs, exp) / 2;
    const delay = low + this.random() * (exp - low);
    const asked = ctx.lastError?.retryAfterMs;
    if (asked === undefined) return Math.round(delay);
    // Never sooner than the server asked, and up to a quarter later: devices told the same at the same time
    // should not come back together.
    return Math.round(Math.max(delay, asked * (1 + 0.25 * this.random())));
  }
}
