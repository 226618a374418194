// Worker-thread entry of ThreadedRecognizer (recognizerThreads.ts): one PocketsphinxRecognizer decoding
// synchronously on this thread, which runs at a lower CPU priority than the companion's event loop.
// Protocol: main -> worker { type: 'start', id, mode } | { type: 'write', id, pcm } | { type: 'end', id }
//                         | { type: 'abort', id } | { type: 'names', names } | { type: 'warmup', req }
//                         | { type: 'stop' } | { type: 'crash' } | { type: 'hang', ms } (fault-injection tests)
//           worker -> main { type: 'ready' } | { type: 'fatal', message } | { type: 'warm', req, error? }
//                         | { type: 'result', id, recognition } | { type: 'failed', id, code, message }
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThisThreadPriority, workerThreadData } from '../../common/workerThread.js';
import { PocketsphinxRecognizer, type PocketsphinxOptions } from './pocketsphinxRecognizer.js';
import type { RecognitionMode, RecognizerStream } from './recognizer.js';
import { isSpeechError } from './speechError.js';

export interface RecognizerWorkerData {
  options: Omit<PocketsphinxOptions, 'sync' | 'maxConcurrent'>;
  nice: number;
  /** SCHED_IDLE as well: decode only when the event loop does not want the CPU */
  idle: boolean;
}

type InMsg =
  | { type: 'start'; id: number; mode: RecognitionMode }
  | { type: 'write'; id: number; pcm: Int16Array }
  | { type: 'end'; id: number }
  | { type: 'abort'; id: number }
  | { type: 'names'; names: string[] }
  | { type: 'warmup'; req: number }
  | { type: 'stop' }
  | { type: 'crash' }
  | { type: 'hang'; ms: number };

const port = parentPort!;
const cfg = workerThreadData<RecognizerWorkerData>(workerData);
await lowerThisThreadPriority(cfg.nice, { idle: cfg.idle });
let rec: PocketsphinxRecognizer;
try {
  rec = new PocketsphinxRecognizer({ ...cfg.options, maxConcurrent: 1, sync: true });
} catch (err) {
  port.postMessage({ type: 'fatal', message: String((err as Error).message ?? err) });
  process.exit(1);
}
const streams = new Map<number, RecognizerStream>();

function failed(id: number, err: unknown): void {
  const code = isSpeechError(err) ? err.code : 'RECOGNIZER_FAILED';
  port.postMessage({ type: 'failed', id, code, message: String((err as Error)?.message ?? err) });
}

port.on('message', (m: InMsg) => {
  switch (m.type) {
    case 'start':
      try {
        streams.set(m.id, rec.createStream({ mode: m.mode }));
      } catch (err) {
        failed(m.id, err);
      }
      return;
    case 'write':
      if (m.pcm instanceof Int16Array) streams.get(m.id)?.write(m.pcm);
      return;
    case 'end': {
      const s = streams.get(m.id);
      streams.delete(m.id);
      if (!s) return failed(m.id, new Error('unknown recognition stream'));
      s.end().then(
        (recognition) => port.postMessage({ type: 'result', id: m.id, recognition }),
        (err: unknown) => failed(m.id, err),
      );
      return;
    }
    case 'abort':
      streams.get(m.id)?.abort();
      streams.delete(m.id);
      return;
    case 'names':
      rec.setStoryNames(m.names);
      return;
    case 'warmup':
      rec.warmUp().then(
        () => port.postMessage({ type: 'warm', req: m.req }),
        (err: unknown) => port.postMessage({ type: 'warm', req: m.req, error: String((err as Error)?.message ?? err) }),
      );
      return;
    case 'stop':
      for (const s of streams.values()) s.abort();
      void rec.close().finally(() => process.exit(0));
      return;
    case 'crash':
      throw new Error('recognizer thread crash requested');
    case 'hang': {
      // busy without returning to the message loop, as a decode stuck in native code
      const until = Date.now() + Math.min(Number(m.ms) || 0, 600_000);
      while (Date.now() < until);
      return;
    }
  }
});
port.postMessage({ type: 'ready' });
