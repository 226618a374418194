// Worker-thread entry of the wake word engine (wakeThread.ts): 48 kHz microphone batches in, resampled to
// 16 kHz and spotted (openWakeWord.ts or keyphraseSpotter.ts), wake events out with the phrase's end on the
// microphone's timeline. Batches are spotted one after another, in order (openWakeWord's inference is async).
// Protocol: main -> worker { type: 'audio', pcm: Int16Array (48 kHz), endNs: bigint (capture time of its last
//                          sample) } | { type: 'sync', req } | { type: 'stop' }
//           worker -> main { type: 'ready', rssBytes } | { type: 'fatal', code, message }
//                          | { type: 'wake', phrase, endedAtNs, score, decidedOnNs (the capture time of the batch it decided on) }
//                          | { type: 'error', message } | { type: 'synced', req, heap: WakeThreadHeap }
// The thread keeps its own heap flat (a memory keeper of its own: V8 collects each isolate on its own, and the main
// thread's keeper cannot reach this one). Spotting leaves short-lived objects that outlive the young generation;
// without it, V8 let the thread's old space climb ~190 KB a minute to ~11 MB before one full collection, a ~7 MB
// sawtooth every ~38 minutes of an idle speaker (a 66-minute soak, 29 Nov); one collection takes ~5 ms here.
import v8 from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { Resampler } from '../../common/audio/resample.js';
import { startMemoryKeeper, type MemoryKeeper } from '../../common/memoryKeeper.js';
import { lowerThisThreadPriority, workerThreadData } from '../../common/workerThread.js';
import { AgentError } from '../errors.js';
import type { Detection, SpotterOptions } from './keyphraseSpotter.js';
import type { OpenWakeWordOptions } from './openWakeWord.js';

export type SpotterConfig = ({ kind: 'pocketsphinx' } & SpotterOptions) | ({ kind: 'openwakeword' } & OpenWakeWordOptions);

export interface WakeWorkerData {
  spotter: SpotterConfig;
  nice: number;
  /** the thread's memory keeper (memoryKeeper.ts); default: a look every 10 s, a collection per 1 MB of growth */
  memory?: { intervalMs?: number; growthBytes?: number };
  /** [0] set to 1 by the main thread before it posts 'stop' (shared memory: seen at once, not behind the queued
   *  batches). Behind a backlog (a slow or loaded machine) 'stop' came only after every batch was spotted, past the
   *  main thread's 3 s grace; the thread was terminated, and inside ONNX Runtime that aborts the process
   *  ("terminate called after throwing an instance of 'Napi::Error'": every `systemctl stop` ended in SIGABRT in
   *  check-systemd-vm.sh's emulated machine). */
  stopFlag?: Int32Array;
  /** [0] audio batches done (spotted, or skipped after a stop), shared with the main thread, which posts no more
   *  while too many wait (wakeThread.ts, the backlog); an Int32 that wraps, compared as a difference */
  progress?: Int32Array;
}

/** The thread's heap, as its keeper sees it (tests, and a bench watching it) */
export interface WakeThreadHeap {
  usedBytes: number;
  /** full collections its keeper asked for */
  collections: number;
}

interface Spotter {
  process(pcm16k: Int16Array): Detection[] | Promise<Detection[]>;
  close(): void;
}

async function openSpotter(c: SpotterConfig): Promise<Spotter> {
  if (c.kind === 'openwakeword') {
    const { OpenWakeWordSpotter } = await import('./openWakeWord.js');
    return OpenWakeWordSpotter.open(c);
  }
  const { KeyphraseSpotter } = await import('./keyphraseSpotter.js');
  return new KeyphraseSpotter(c);
}

type InMsg = { type: 'audio'; pcm: Int16Array; endNs: bigint } | { type: 'sync'; req: number } | { type: 'stop' };

const NS_PER_48K = 1e9 / 48000;
const port = parentPort!;
const cfg = workerThreadData<WakeWorkerData>(workerData);
await lowerThisThreadPriority(cfg.nice);

let spotter: Spotter;
try {
  spotter = await openSpotter(cfg.spotter);
} catch (err) {
  port.postMessage({ type: 'fatal', code: err instanceof AgentError ? err.code : 'audio', message: String((err as Error)?.message ?? err) });
  process.exit(1);
}
// malloc is the process's: the main thread's keeper trims it
const keeper: MemoryKeeper = startMemoryKeeper({ intervalMs: cfg.memory?.intervalMs ?? 10_000, growthBytes: cfg.memory?.growthBytes ?? 1024 * 1024, trim: () => false });
const heap = (): WakeThreadHeap => ({ usedBytes: v8.getHeapStatistics().used_heap_size, collections: keeper.collections });
const resampler = new Resampler(48000, 16000);
/** 16 kHz output sample k stands for 48 kHz input sample 3k - delay (the filter's group delay) */
const delay48 = resampler.delaySamples * 3;
/** recent batches: absolute 48 kHz index just after the batch, and the capture time of its last sample */
const batches: { end48: number; endNs: bigint }[] = [];
let in48 = 0;

function timeOf(sample16k: number): bigint {
  const idx48 = sample16k * 3 - delay48; // the input sample just after the phrase
  const b = batches.find((x) => x.end48 >= idx48) ?? batches[batches.length - 1];
  // samples before the batch's last one were captured earlier, 1/48000 s apart (a gap in capture is not spread)
  return b.endNs - BigInt(Math.round((b.end48 - 1 - idx48) * NS_PER_48K));
}

async function handle(m: InMsg): Promise<void> {
  if (m.type === 'stop') {
    keeper.stop();
    spotter.close();
    process.exit(0);
  }
  if (m.type === 'sync') {
    port.postMessage({ type: 'synced', req: m.req, heap: heap() });
    return;
  }
  if (m.type !== 'audio' || !(m.pcm instanceof Int16Array)) return;
  in48 += m.pcm.length;
  batches.push({ end48: in48, endNs: m.endNs });
  if (batches.length > 300) batches.shift(); // 6 s of 20 ms frames: longer than any phrase
  try {
    for (const d of await spotter.process(resampler.process(m.pcm))) {
      port.postMessage({ type: 'wake', phrase: d.phrase, endedAtNs: timeOf(d.endSample), score: d.score, decidedOnNs: m.endNs });
    }
  } catch (err) {
    port.postMessage({ type: 'error', message: String((err as Error)?.message ?? err) });
  }
}

/** An audio batch is counted done (WakeWorkerData.progress) whether spotted or dropped after a stop. */
async function handleInOrder(m: InMsg): Promise<void> {
  if (m.type !== 'audio') return handle(m);
  try {
    // a stop asked for: batches not yet spotted are dropped (WakeWorkerData.stopFlag says why)
    if (!(cfg.stopFlag && Atomics.load(cfg.stopFlag, 0) === 1)) await handle(m);
  } finally {
    if (cfg.progress) Atomics.add(cfg.progress, 0, 1);
  }
}

// one message at a time, in order: a sync answers only after every batch before it was spotted. A failure is
// reported and the queue goes on (a rejected link would have skipped every later message: a deaf engine).
let queue: Promise<void> = Promise.resolve();
port.on('message', (m: InMsg) => {
  queue = queue.then(() => handleInOrder(m)).catch((err: unknown) => port.postMessage({ type: 'error', message: String((err as Error)?.message ?? err) }));
});
port.postMessage({ type: 'ready', rssBytes: process.memoryUsage().rss });
