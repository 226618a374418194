// The echo room's delay search (echoRoomMain.ts), in a worker thread at normal priority: locate() over 1 s of
// audio takes ~22 ms (40-110 ms on a loaded machine). Run on the room's real-time audio loop every 500 ms, it
// stalled the loop long enough for the room's 40 ms output stream to underrun, and the echo path moved 18-75 ms
// in the middle of a test (and back at the next correction).
import { parentPort } from 'node:worker_threads';
import { lowerThisThreadPriority } from '../../src/common/workerThread.js';
import { locate } from './locate.js';

// The thread inherited the room's SCHED_FIFO: back to normal scheduling (this thread only), so that its searches
// never delay the agent's real-time audio threads, nor the room's own loop.
await lowerThisThreadPriority(0, { normal: true });

// stopped as the project's workers are (stopWorkerThread): { type: 'stop' } between two searches
parentPort!.on('message', (m: { type: 'stop' } | { type: 'search'; hay: Int16Array; needle: Int16Array }) => {
  if (m.type === 'stop') process.exit(0);
  parentPort!.postMessage({ type: 'found', ...locate(m.hay, m.needle) });
});
parentPort!.postMessage({ type: 'ready' });
