// A worker thread that starts at real time (SCHED_FIFO 5, as a thread made by a real-time thread inherits it; set
// here where permitted), then asks lowerThisThreadPriority (src/common/workerThread.ts) for normal scheduling and
// `nice`. Posts { tid, wasRealTime, lowered } and waits for { type: 'stop' }, so that its scheduling can be read.
import { parentPort, workerData } from 'node:worker_threads';
import koffi from 'koffi';
import { lowerThisThreadPriority, workerThreadData } from '../../src/common/workerThread.js';

const SCHED_FIFO = 1; // linux/sched.h
const lib = koffi.load('libc.so.6');
const gettid = lib.func('int gettid()') as () => number;
const setScheduler = lib.func('int sched_setscheduler(int pid, int policy, const int *param)') as (pid: number, policy: number, param: Int32Array) => number;
const { nice } = workerThreadData<{ nice: number }>(workerData);
const wasRealTime = setScheduler(0, SCHED_FIFO, new Int32Array([5])) === 0;
const lowered = await lowerThisThreadPriority(nice, { normal: true });
parentPort!.on('message', (m: { type: string }) => m.type === 'stop' && process.exit(0));
parentPort!.postMessage({ tid: gettid(), wasRealTime, lowered });
