// Reads the scheduling of this process's threads from /proc (Linux): nice value and policy of every task.
import { readdirSync, readFileSync } from 'node:fs';

export interface TaskSched {
  tid: number;
  nice: number;
  /** 0 SCHED_OTHER, 1 SCHED_FIFO, 5 SCHED_IDLE */
  policy: number;
  /** the real-time priority (SCHED_FIFO / SCHED_RR), 0 otherwise */
  rtPriority: number;
}

export function threadScheduling(): TaskSched[] {
  const out: TaskSched[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
      out.push({ tid: Number(tid), nice: Number(f[16]), policy: Number(f[38]), rtPriority: Number(f[37]) });
    } catch {
      /* the thread ended meanwhile */
    }
  }
  return out;
}
