// How a streak of failed call attempts goes to the journal. A speaker whose service is down retries every
// 0.1-30 s; each failure was a warn line, ~240 an hour (an SD-card review: the companion's PC off at night cost
// ~1.9 GB of journal a year, and journald rewrites its pages on the card at every sync). Now the first failure of
// a kind is a warn line, repeats of it are debug, and every 15 minutes a warn line says it is still failing, how
// often and since when; the call that comes back says how many attempts failed before it. `status` shows the last
// error at every attempt either way.

/** how often a streak that goes on is said again */
export const STILL_FAILING_EVERY_MS = 15 * 60_000;

export type FailureLine = { level: 'warn' } | { level: 'warn'; attempts: number; forMs: number } | { level: 'debug' };

export class FailureStreak {
  private code: string | undefined;
  private attempts = 0;
  private since = 0;
  private saidAt = 0;

  /** now: a monotonic clock in ms (a wall clock would say "still failing" at every NTP step) */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** A failed attempt with this error code: how to log it. */
  failed(code: string): FailureLine {
    const t = this.now();
    if (code !== this.code || this.attempts === 0) {
      this.code = code;
      this.attempts = 1;
      this.since = this.saidAt = t;
      return { level: 'warn' };
    }
    this.attempts++;
    if (t - this.saidAt < STILL_FAILING_EVERY_MS) return { level: 'debug' };
    this.saidAt = t;
    return { level: 'warn', attempts: this.attempts, forMs: t - this.since };
  }

  /** A call came up: the streak it ends (0 attempts: there was none), and a new one starts at the next failure. */
  end(): { attempts: number; forMs: number } {
    const ended = { attempts: this.attempts, forMs: this.attempts ? this.now() - this.since : 0 };
    this.code = undefined;
    this.attempts = 0;
    return ended;
  }
}
