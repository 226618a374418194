// stopWorkerThread (src/common/workerThread.ts): how the project's worker threads are stopped. Real worker threads
// whose set-up loads libc through koffi (test/support/nativeSetupWorker.ts), as the wake, recognizer and encoder
// workers load their libraries.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startWorkerThread, stopWorkerThread } from '../../src/common/workerThread.js';
import type { NativeSetupWorkerData } from '../support/nativeSetupWorker.js';
import { threadScheduling } from '../support/threadPriority.js';

const SUPPORT = new URL('../support/workerStopMain.ts', import.meta.url).href; // workers start next to it

function start(data: NativeSetupWorkerData) {
  const w = startWorkerThread(SUPPORT, 'nativeSetupWorker', data);
  const exitCode = new Promise<number>((r) => w.once('exit', r));
  const ready = new Promise<void>((r) => {
    w.on('message', (m: { type: string }) => m.type === 'ready' && r());
    w.once('exit', () => r());
  });
  return { w, exitCode, ready };
}

describe('stopWorkerThread', () => {
  it('regression: stopping workers while they load native libraries never aborts the process (Node 24+: terminate() inside koffi.load did)', () => {
    // A child process, because the failure is the whole process dying of SIGABRT ("FATAL ERROR:
    // Error::ThrowAsJavaScriptException napi_throw"). With terminate() at the stop, as before, this aborted in 2 of
    // 3 runs on Node 26 here; Node 20 survives either way, so CI's run on the newest LTS is the one that can fail.
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, '../support/workerStopMain.ts'), '40'], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).not.toMatch(/FATAL ERROR/);
    expect({ status: r.status, signal: r.signal, out: r.stdout.trim() }).toEqual({ status: 0, signal: null, out: 'stopped 40' });
  }, 150_000);

  it('a worker exits by itself on stop (exit code 0, not terminated)', async () => {
    const { w, exitCode, ready } = start({ loads: 5 });
    await new Promise((r) => w.once('message', r)); // loading
    await stopWorkerThread(w, { ready, graceMs: 5_000 });
    expect(await exitCode).toBe(0);
  });

  it('a ready worker that ignores stop is terminated after graceMs', async () => {
    const { w, exitCode, ready } = start({ loads: 5, behaviour: 'ignores-stop' });
    await ready;
    const t0 = performance.now();
    await stopWorkerThread(w, { ready, graceMs: 300 });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(await exitCode).toBe(1); // terminate()
  });

  it('a worker that never gets ready is terminated after startMs, not before', async () => {
    const { w, exitCode, ready } = start({ loads: 5, behaviour: 'wedged-start' });
    await new Promise((r) => w.once('message', r)); // loading
    const t0 = performance.now();
    await stopWorkerThread(w, { ready, graceMs: 0, startMs: 500 });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(490);
    expect(await exitCode).toBe(1);
  });
});

describe('lowerThisThreadPriority', () => {
  it('normal: a thread that inherited a real-time policy goes back to SCHED_OTHER, at the nice asked for', async () => {
    const main = threadScheduling().find((t) => t.tid === process.pid);
    const w = startWorkerThread(SUPPORT, 'realtimeThreadWorker', { nice: 7 });
    const r = await new Promise<{ tid: number; wasRealTime: boolean; lowered: boolean }>((res, rej) => {
      w.once('message', res);
      w.once('error', rej); // no koffi, not Linux: its error, not a timeout
    });
    const sched = threadScheduling().find((t) => t.tid === r.tid);
    const exited = new Promise((res) => w.once('exit', res));
    w.postMessage({ type: 'stop' });
    await exited;
    // A process with CAP_SYS_NICE (root on CI and this project's machines) may make a thread real-time: then the
    // demotion itself is tested; without it, only the nice.
    if (hasCapSysNice()) expect(r.wasRealTime).toBe(true);
    expect(r.lowered).toBe(true);
    expect(sched).toMatchObject({ policy: 0, rtPriority: 0, nice: 7 });
    // the process's main thread is left as it was
    expect(threadScheduling().find((t) => t.tid === process.pid)).toEqual(main);
  });
});

/** Whether this process holds CAP_SYS_NICE (bit 23 of its effective capabilities, /proc/self/status). */
function hasCapSysNice(): boolean {
  const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  return eff !== undefined && (BigInt(`0x${eff}`) & (1n << 23n)) !== 0n;
}
