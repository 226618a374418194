// How long to wait before re-creating a call that failed or dropped. Injectable (like livekit's
// ReconnectPolicy) so tests and deployments can choose; the default is exponential backoff with full jitter.
// The common outage is a server restart (seconds): during the first fastRetryWindowMs of a failure streak the
// delay is capped at fastRetryMaxDelayMs, so the call is back within about a second of the server; only a
// longer outage backs off to maxDelayMs. Retrying a refused connection costs the server nothing.
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
    // Full jitter (AWS architecture blog): uniform in [initial, cap], cap doubling per attempt.
    const cap = ctx.elapsedMs < this.fastRetryWindowMs ? Math.min(this.maxDelayMs, this.fastRetryMaxDelayMs) : this.maxDelayMs;
    const exp = Math.min(cap, this.initialDelayMs * 2 ** Math.min(30, Math.max(0, ctx.attempt - 1)));
    return Math.round(this.initialDelayMs + this.random() * (exp - this.initialDelayMs));
  }
}
