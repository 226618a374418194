// Child process for test/common/exitNow.test.ts: starts a worker (nativeSetupWorker.ts) that is loading native
// libraries through koffi, and leaves the process in the middle of it with exitNow(7), as the daemon does at the
// end of a stop while the wake word thread is still loading its models. Exits 7; an abort ends it with SIGABRT.
import { exitNow } from '../../src/common/exitNow.js';
import { startWorkerThread } from '../../src/common/workerThread.js';

const w = startWorkerThread(import.meta.url, 'nativeSetupWorker', { loads: 1_000_000 });
await new Promise((r) => w.once('message', r)); // { type: 'loading' }: inside koffi from here on
await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
await exitNow(7);
