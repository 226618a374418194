// What a process holds open, for leak tests and the soak bench: descriptors from /proc/self/fd (sockets among
// them) and Node's active handles and timers by type.
import { readdirSync, readlinkSync } from 'node:fs';

/** open descriptors of a process (default: this one), and how many of them are sockets */
export function openDescriptors(pid: number | 'self' = 'self'): { total: number; sockets: number } {
  let total = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      total++;
      if (target.startsWith('socket:')) sockets++;
    } catch {
      /* closed while listing (the readdir's own descriptor) */
    }
  }
  return { total, sockets };
}

export function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

/** Types whose count grew by more than `slack` (a timer or a request in flight at the moment of counting). */
export function resourceGrowth(before: Record<string, number>, after: Record<string, number>, slack = 2): Record<string, number> {
  const grown: Record<string, number> = {};
  for (const [type, n] of Object.entries(after)) if (n - (before[type] ?? 0) > slack) grown[type] = n - (before[type] ?? 0);
  return grown;
}
