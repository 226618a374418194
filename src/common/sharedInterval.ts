// Periodic checks that share one timer per period.
//
// Why: on an idle board every timer that fires is a wake-up of the whole process, and a wake-up costs CPU by
// itself (measured 100-150 µs each on the 2-core VM: a bare 50 Hz setInterval is 0.75 % of a core). During a
// call the agent ran four such checks (two audio stall watchdogs at 125 ms, the downlink's fallback at 100 ms,
// the liveness check at 250 ms): 30 wake-ups a second that did nothing but look at a timestamp (issue #5, CPU).
// They now all run at 250 ms from one timer: 4 wake-ups a second.
//
// The timer does not keep the process alive (unref), like the checks it replaces.

export interface SharedInterval {
  stop(): void;
}

interface Group {
  timer: NodeJS.Timeout;
  entries: Set<{ fn: () => void }>;
}

const groups = new Map<number, Group>();

/** Calls fn every periodMs, on the timer every other caller with the same period shares. */
export function everyMs(periodMs: number, fn: () => void): SharedInterval {
  if (!(Number.isInteger(periodMs) && periodMs > 0)) throw new RangeError(`everyMs: period must be a positive integer of ms, got ${periodMs}`);
  let group = groups.get(periodMs);
  if (!group) {
    const entries = new Set<{ fn: () => void }>();
    const timer = setInterval(() => {
      for (const e of entries) {
        try {
          e.fn();
        } catch (err) {
          // Same outcome as a throwing setInterval callback (an uncaught exception), without skipping the others.
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    }, periodMs);
    timer.unref();
    group = { timer, entries };
    groups.set(periodMs, group);
  }
  const entry = { fn };
  const g = group;
  g.entries.add(entry);
  return {
    stop(): void {
      if (!g.entries.delete(entry) || g.entries.size > 0) return;
      clearInterval(g.timer);
      if (groups.get(periodMs) === g) groups.delete(periodMs);
    },
  };
}

/** Timers currently running (one per period in use): for tests. */
export function sharedIntervalCount(): number {
  return groups.size;
}
