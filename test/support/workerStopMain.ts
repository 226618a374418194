// Child process for test/common/workerThread.test.ts: starts `count` workers (nativeSetupWorker.ts) one after the
// other and stops each with stopWorkerThread at a random moment of its set-up, while it loads native libraries
// (200 koffi.load calls: about 25 ms here).
// Prints "stopped N" and exits 0; a stop that aborted the process ends it with SIGABRT instead.
import { startWorkerThread, stopWorkerThread } from '../../src/common/workerThread.js';

const count = Number(process.argv[2] ?? 30);
for (let i = 0; i < count; i++) {
  const w = startWorkerThread(import.meta.url, 'nativeSetupWorker', { loads: 200 });
  const ready = new Promise<void>((r) => {
    w.on('message', (m: { type: string }) => m.type === 'ready' && r());
    w.once('exit', () => r());
  });
  await new Promise((r) => w.once('message', r)); // { type: 'loading' }
  await new Promise((r) => setTimeout(r, Math.random() * 30));
  await stopWorkerThread(w, { ready, graceMs: 0 }); // graceMs 0: terminate() the moment it is ready, if not gone by then
}
console.log(`stopped ${count}`);
