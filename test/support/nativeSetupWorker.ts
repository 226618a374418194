// A worker thread shaped like the project's own (wakeWorker, recognizerWorker, speechEncoderWorker): its set-up
// loads native libraries through koffi (after posting { type: 'loading' }), then it posts { type: 'ready' } and obeys { type: 'stop' } between two
// messages. `behaviour` makes it misbehave for the tests of stopWorkerThread (src/common/workerThread.ts).
import { parentPort, workerData } from 'node:worker_threads';
import koffi from 'koffi';
import { workerThreadData } from '../../src/common/workerThread.js';

export interface NativeSetupWorkerData {
  /** koffi.load calls in the set-up (each a few hundred microseconds) */
  loads: number;
  /** 'wedged-start': never gets ready; 'ignores-stop': ready, but never exits on stop */
  behaviour?: 'wedged-start' | 'ignores-stop';
}

const cfg = workerThreadData<NativeSetupWorkerData>(workerData);
const port = parentPort!;
port.postMessage({ type: 'loading' }); // for the tests: what follows is the native set-up
for (let i = 0; i < cfg.loads; i++) koffi.load('libc.so.6').func('int getpid()');
if (cfg.behaviour === 'wedged-start') for (;;); // a set-up that never ends (pure JS: terminate() is safe here)
port.on('message', (m: { type: string }) => {
  if (m.type === 'stop' && cfg.behaviour !== 'ignores-stop') process.exit(0);
});
port.postMessage({ type: 'ready' });
