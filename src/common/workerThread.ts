// Starting worker threads (companion and agent), and the priority they run at.
//
// Why threads with a lower priority: on one core, the 20 ms frame pacer of every live call shares the CPU with
// heavy work (speech recognition, Opus encoding of replies). Work in another thread cannot block the event loop,
// and a thread with a higher nice value loses every contest for the core against the main thread, so the pacer
// wakes on time while the heavy work still gets all the CPU the pacer leaves.
//
// Entry files: from src (tsx, vitest) the worker is TypeScript, loaded through tsx's ESM API inside the thread;
// from the bundle (scripts/build.mjs) it is dist/<name>.js next to the bundle.
import { createRequire } from 'node:module';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Stops a worker started by startWorkerThread: posts { type: 'stop' }, which every worker obeys between two messages
 * (it frees what it holds and exits), and falls back to terminate() only when it has not exited `graceMs` after it
 * was `ready` (the caller's: the worker posted { type: 'ready' }, its set-up done). Why not terminate() at once, or
 * while it starts: terminate() inside a native call can abort the whole process. From Node 24, one that lands in
 * koffi.load (a worker's set-up loads its libraries) always does: napi_throw fails in a terminating thread and
 * node-addon-api treats that as fatal ("FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw"; the companion's
 * shutdown test on Node 26 under load). A worker never ready after `startMs` is wedged: it is terminated then,
 * because the process must still be able to stop. (Readiness comes from the caller, not from a listener added here:
 * a worker that got its first 'message' listener after unref() keeps the process alive until it answers, one that
 * got one before does not, and the callers wait for their workers' first messages.)
 */
export async function stopWorkerThread(w: Worker, o: { ready: boolean | Promise<unknown>; graceMs: number; startMs?: number }): Promise<void> {
  const exited = new Promise<void>((r) => w.once('exit', () => r()));
  w.postMessage({ type: 'stop' });
  // the timers keep the process alive (workers are unref'd): it must not exit, and so terminate the worker, meanwhile
  let timer = setTimeout(() => void w.terminate(), o.startMs ?? 30_000);
  let settled = false;
  if (o.ready !== false) void Promise.resolve(o.ready).then(() => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    timer = setTimeout(() => void w.terminate(), o.graceMs);
  });
  await exited;
  settled = true;
  clearTimeout(timer);
}

/** Starts `./<name>.ts` (or `.js` in the bundle) next to the module whose import.meta.url is `callerUrl`. */
export function startWorkerThread(callerUrl: string, name: string, data?: unknown, opts: Pick<WorkerOptions, 'resourceLimits'> = {}): Worker {
  if (callerUrl.endsWith('.ts')) {
    const entry = new URL(`./${name}.ts`, callerUrl).href;
    // the ESM build of tsx's API (its CommonJS build fails to register from inside a worker)
    const tsxApi = pathToFileURL(createRequire(callerUrl).resolve('tsx/esm/api').replace(/index\.cjs$/, 'index.mjs')).href;
    const boot = `const { workerData } = require('node:worker_threads');
import(workerData.tsxApi).then((m) => { m.register(); return import(workerData.entry); }).catch((err) => { setImmediate(() => { throw err; }); });`;
    return new Worker(boot, { ...opts, eval: true, workerData: { entry, tsxApi, data } });
  }
  return new Worker(new URL(`./${name}.js`, callerUrl), { ...opts, workerData: { data } });
}

/** The `data` given to startWorkerThread, inside the worker. */
export function workerThreadData<T>(workerData: unknown): T {
  return (workerData as { data: T }).data;
}

let libc: { gettid: () => number; setScheduler: (pid: number, policy: number, param: Int32Array) => number } | null | undefined;

async function loadLibc(): Promise<typeof libc> {
  if (libc !== undefined) return libc;
  try {
    const koffi = (await import('koffi')).default;
    const lib = koffi.load('libc.so.6');
    libc = {
      gettid: lib.func('int gettid()') as () => number,
      setScheduler: lib.func('int sched_setscheduler(int pid, int policy, const int *param)') as (pid: number, policy: number, param: Int32Array) => number,
    };
  } catch {
    libc = null;
  }
  return libc;
}

const SCHED_OTHER = 0; // linux/sched.h
const SCHED_IDLE = 5;

/** Lowers the CPU priority of the calling thread (Linux: setpriority on its thread id). With `idle`, the thread
 *  also gets the SCHED_IDLE policy: any normal thread that wakes up (the event loop, for its 20 ms frame slot)
 *  preempts it at once, and it only uses CPU time nothing else wants. With `normal`, a thread that inherited a
 *  real-time policy (SCHED_FIFO, SCHED_RR: threads inherit their creator's) goes back to SCHED_OTHER first. Best
 *  effort: returns false where thread ids or koffi are unavailable or the kernel refuses; the work then runs as it
 *  was. */
export async function lowerThisThreadPriority(nice: number, opts: { idle?: boolean; normal?: boolean } = {}): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  const c = await loadLibc();
  if (!c) return false;
  try {
    if (opts.normal && c.setScheduler(0, SCHED_OTHER, new Int32Array([0])) !== 0) return false;
    os.setPriority(c.gettid(), nice);
    if (opts.idle && c.setScheduler(0, SCHED_IDLE, new Int32Array([0])) !== 0) return false;
    return true;
  } catch {
    return false;
  }
}
