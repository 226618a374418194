// Node's own helper threads (V8's garbage-collection and compiler threads, libuv's pool) run at the event loop's
// priority. On a companion holding many calls on one core they take the core from the loop just when it wakes for
// a 20 ms frame slot: bench #2 (one core) counted late frames from 12 calls on. At nice 19 they use the CPU the
// loop leaves idle, the rule the recogniser and encoder threads already follow: 28 calls with no late frame.
// The event loop (the main thread) keeps its priority. Linux only; best effort (elsewhere nothing changes).
import { readdirSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import os from 'node:os';

export const HELPER_THREAD_NICE = 19;

/** Lowers every thread of this process but the main one to `nice`. Returns the thread ids it changed. */
export function lowerHelperThreads(nice = HELPER_THREAD_NICE): number[] {
  if (process.platform !== 'linux') return [];
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task').map(Number);
  } catch {
    return [];
  }
  const changed: number[] = [];
  for (const tid of tids) {
    if (tid === process.pid) continue;
    try {
      if (os.getPriority(tid) < nice) {
        os.setPriority(tid, nice);
        changed.push(tid);
      }
    } catch {
      /* the thread ended meanwhile, or the platform refuses: leave it */
    }
  }
  return changed;
}

/** As lowerHelperThreads, after making sure libuv has started its pool (it does so on first use). */
export async function lowerHelperThreadsIncludingPool(nice = HELPER_THREAD_NICE): Promise<number[]> {
  await stat('.').catch(() => undefined);
  return lowerHelperThreads(nice);
}
