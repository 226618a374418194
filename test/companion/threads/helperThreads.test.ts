// Node's helper threads (V8's GC/compiler threads, libuv's pool) give way to the event loop: real threads of this
// process, read back from /proc.
import { describe, expect, it } from 'vitest';
import { HELPER_THREAD_NICE, lowerHelperThreadsIncludingPool } from '../../../src/companion/threads/helperThreads.js';
import { threadScheduling } from '../../support/threadPriority.js';

describe('lowerHelperThreadsIncludingPool', () => {
  it("puts V8's and libuv's threads at nice 19 and leaves the event loop alone", async () => {
    const before = threadScheduling();
    expect(before.find((t) => t.tid === process.pid)?.nice).toBe(0);
    const changed = await lowerHelperThreadsIncludingPool();
    // V8's platform workers (4 by default) and libuv's pool (4): several threads really changed.
    expect(changed.length).toBeGreaterThanOrEqual(4);
    expect(changed).not.toContain(process.pid);
    const after = threadScheduling();
    expect(after.find((t) => t.tid === process.pid)?.nice).toBe(0);
    for (const t of after.filter((x) => x.tid !== process.pid)) expect(t.nice, `thread ${t.tid}`).toBe(HELPER_THREAD_NICE);
    // idempotent: nothing left to change
    expect(await lowerHelperThreadsIncludingPool()).toEqual([]);
  });
});
