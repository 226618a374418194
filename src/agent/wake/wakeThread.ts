// The wake word engine's thread: a spotter (openWakeWord.ts or keyphraseSpotter.ts) in a worker thread
// (wakeWorker.ts) at a lower CPU priority, so spotting never holds the event loop that paces the call's audio.
// feed() copies each 20 ms frame and posts it (moved, not copied) to the thread.
import type { Worker } from 'node:worker_threads';
import type { Logger } from '../../common/logger.js';
import { startWorkerThread, stopWorkerThread } from '../../common/workerThread.js';
import { AgentError, type AgentErrorCode } from '../errors.js';
import type { WakeEvent, WakeWordEngine } from './wakeEngine.js';
import type { SpotterConfig, WakeThreadHeap, WakeWorkerData } from './wakeWorker.js';

/** 20 ms: one microphone frame a message, so a step of the spotter waits for no batch (wake latency) */
const BATCH = 960;
const BATCH_MS = 20;
/** nice value of the spotting thread: below the event loop, but not SCHED_IDLE (a wake must not wait for idle) */
export const WAKE_NICE = 10;

/** A start (models read, ONNX Runtime or pocketsphinx set up) not done by then is given up. A Pi 3 reading its
 *  models from a slow SD card takes seconds; a start that never ends is a read that never returns (a model on a
 *  dead card or a lost network mount) or a library wedged while loading: the speaker would stay deaf to its wake
 *  word, `status` saying `loading`, with nothing in the log. */
export const WAKE_START_TIMEOUT_MS = 120_000;
/** Threads given up while starting that have not ended yet. A given-up thread is asked to stop (it does once its
 *  start completes) but not terminated: terminate() inside a native call can abort the whole process
 *  (workerThread.ts). One more start is tried beside a stuck one (a wedge may be a race); with two stuck, none
 *  more is started until one ends, so a read that never returns cannot pile up threads on a small board. */
const MAX_LEFT_STARTING = 2;
const leftStarting = new Set<Worker>();

/** How many given-up starts are still alive (status, tests). */
export function wakeStartsLeftBehind(): number {
  return leftStarting.size;
}

/** Whether startWakeThread gave up waiting (its `startTimeoutMs`), rather than the engine failing to load. */
export function isWakeStartTimeout(err: unknown): boolean {
  return (err as { startTimedOut?: unknown } | undefined)?.startTimedOut === true;
}

/** Starts the thread with its spotter; rejects with the spotter's own error when it cannot start, and with an
 *  `audio` error when it has not started within `startTimeoutMs` (WAKE_START_TIMEOUT_MS). */
export async function startWakeThread(
  spotter: SpotterConfig,
  o: { logger: Logger; engine: string; memory?: WakeWorkerData['memory']; startTimeoutMs?: number; maxBacklogMs?: number },
): Promise<WakeThread> {
  if (leftStarting.size >= MAX_LEFT_STARTING) {
    throw new AgentError('audio', `wake word engine: ${leftStarting.size} earlier starts never finished and are still running (a model file that cannot be read?); none more is started until one ends, or the agent is restarted`);
  }
  const stopFlag = new Int32Array(new SharedArrayBuffer(4));
  const progress = new Int32Array(new SharedArrayBuffer(4));
  const data: WakeWorkerData = { spotter, nice: WAKE_NICE, memory: o.memory, stopFlag, progress };
  const worker = startWorkerThread(import.meta.url, 'wakeWorker', data);
  worker.unref();
  const timeoutMs = o.startTimeoutMs ?? WAKE_START_TIMEOUT_MS;
  let timedOut = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      done();
      timedOut = true;
      reject(Object.assign(new AgentError('audio', `wake word engine did not start within ${Math.round(timeoutMs / 1000)} s (its models unreadable? a stuck storage device?)`), { startTimedOut: true }));
    }, timeoutMs);
    const onMsg = (m: { type: string; code?: AgentErrorCode; message?: string }): void => {
      if (m.type === 'ready') done(), resolve();
      else if (m.type === 'fatal') done(), reject(new AgentError(m.code ?? 'audio', m.message ?? 'wake word engine failed to start'));
    };
    const onExit = (code: number): void => {
      done();
      reject(new AgentError('audio', `wake word engine thread exited during start (code ${code})`));
    };
    const onError = (err: Error): void => {
      done();
      reject(new AgentError('audio', `wake word engine thread failed: ${err.message}`, { cause: err }));
    };
    const done = (): void => {
      clearTimeout(timer);
      worker.off('message', onMsg);
      worker.off('exit', onExit);
      worker.off('error', onError);
    };
    worker.on('message', onMsg);
    worker.once('exit', onExit);
    worker.once('error', onError);
  }).catch(async (err) => {
    if (timedOut) {
      // given up, not terminated (see MAX_LEFT_STARTING): the queued 'stop' ends it once its start completes
      leftStarting.add(worker);
      worker.on('error', (e) => o.logger.warn({ err: e.message }, 'wake word engine: a start given up failed late'));
      worker.once('exit', () => {
        leftStarting.delete(worker);
        o.logger.info({ stillLeft: leftStarting.size }, 'wake word engine: a start given up has ended');
      });
      Atomics.store(stopFlag, 0, 1);
      worker.postMessage({ type: 'stop' });
    } else await worker.terminate();
    throw err;
  });
  const maxBacklog = o.maxBacklogMs === undefined ? undefined : Math.max(1, Math.ceil(o.maxBacklogMs / BATCH_MS));
  return new WakeThread(worker, o.logger, spotter.phrase, o.engine, stopFlag, progress, maxBacklog);
}

export class WakeThread implements WakeWordEngine {
  private batch = new Int16Array(BATCH);
  private fill = 0;
  private syncs = 0;
  /** sync requests waiting for the thread's answer (undefined: it exited) */
  private readonly waiting = new Map<number, (heap?: WakeThreadHeap) => void>();
  private readonly listeners: ((e: WakeEvent) => void)[] = [];
  private readonly failureListeners: ((err: Error) => void)[] = [];
  private closed = false;
  private dead = false;
  /** audio batches posted to the thread (compared with its `progress` as an Int32 difference: both wrap) */
  private posted = 0;
  /** batches not posted because the thread was too far behind, since the start; and whether it is behind now */
  droppedBatches = 0;
  private behind = false;
  private warnedAt = -Infinity;

  constructor(
    private readonly worker: Worker,
    private readonly log: Logger,
    readonly phrase: string,
    /** which spotter runs in the thread: openwakeword or pocketsphinx */
    readonly engine: string,
    /** shared with the thread: set before 'stop' (WakeWorkerData.stopFlag) */
    private readonly stopFlag?: Int32Array,
    /** shared with the thread: batches it has done (WakeWorkerData.progress) */
    private readonly progress?: Int32Array,
    /** Most batches posted and not yet spotted when fed live (WakeWordOptions.maxBacklogMs). A thread further
     *  behind (a board too slow for its engine, a long stall) is not fed more until it catches up: each waiting
     *  batch is memory (~100 KB for every second behind, without a bound), and a wake word found later than the
     *  detection window cannot be used (the agent ignores it), so what would be spotted late is dropped instead,
     *  and said in the log. */
    private readonly maxBacklog?: number,
  ) {
    worker.on('message', (m: { type: string; phrase?: string; endedAtNs?: bigint; decidedOnNs?: bigint; score?: number; message?: string }) => {
      if (m.type === 'wake' && !this.closed) {
        const e: WakeEvent = { phrase: m.phrase!, endedAtNs: m.endedAtNs!, score: m.score, decidedOnNs: m.decidedOnNs };
        for (const l of this.listeners) {
          try {
            l(e);
          } catch (err) {
            this.log.error({ err }, 'wake word listener failed');
          }
        }
      } else if (m.type === 'synced') {
        const { req, heap } = m as unknown as { req: number; heap: WakeThreadHeap };
        this.waiting.get(req)?.(heap);
      } else if (m.type === 'error') this.log.error({ message: m.message }, 'wake word engine: decode failed');
    });
    worker.on('error', (err) => this.failed(err));
    worker.on('exit', (code) => {
      for (const w of this.waiting.values()) w();
      this.failed(new Error(`wake word engine thread exited (code ${code})`));
    });
  }

  feed(pcm48k: Int16Array, capturedAtNs: bigint): void {
    if (this.closed || this.dead) return;
    let i = 0;
    while (i < pcm48k.length) {
      const n = Math.min(BATCH - this.fill, pcm48k.length - i);
      this.batch.set(pcm48k.subarray(i, i + n), this.fill);
      this.fill += n;
      i += n;
      if (this.fill === BATCH) {
        // capture time of the batch's last sample: that of the frame's last sample, less what is left of it
        const endNs = capturedAtNs - BigInt(Math.round(((pcm48k.length - i) * 1e9) / 48000));
        this.fill = 0;
        if (this.tooFarBehind()) continue; // the batch's buffer is filled again
        const pcm = this.batch;
        this.batch = new Int16Array(BATCH);
        this.posted++;
        this.worker.postMessage({ type: 'audio', pcm, endNs }, [pcm.buffer]);
      }
    }
  }

  /** Whether the next batch is dropped: the thread has maxBacklog batches waiting, or had and has not yet come
   *  down to half of that (so a thread that is just keeping up is not fed one batch in two). Warned at most once a
   *  minute: a board that is too slow would say it fifty times a second. */
  private tooFarBehind(): boolean {
    if (!this.progress || this.maxBacklog === undefined) return false;
    const waiting = ((this.posted | 0) - Atomics.load(this.progress, 0)) | 0;
    if (this.behind && waiting <= this.maxBacklog / 2) {
      this.behind = false;
      this.log.debug({ droppedBatches: this.droppedBatches }, 'wake word engine caught up');
    } else if (!this.behind && waiting >= this.maxBacklog) {
      this.behind = true;
      const now = performance.now();
      if (now - this.warnedAt >= 60_000) {
        this.warnedAt = now;
        this.log.warn({ behindMs: waiting * BATCH_MS, droppedBatches: this.droppedBatches }, 'wake word engine behind: microphone audio dropped until it catches up (the board too slow for the engine?)');
      }
    }
    if (this.behind) this.droppedBatches++;
    return this.behind;
  }

  /** Resolves once the thread has decoded every full batch fed so far (tests and benchmarks). */
  async drained(): Promise<void> {
    await this.sync();
  }

  /** The thread's heap once it has decoded every full batch fed so far; undefined once it has exited. */
  heap(): Promise<WakeThreadHeap | undefined> {
    return this.sync();
  }

  private sync(): Promise<WakeThreadHeap | undefined> {
    if (this.dead) return Promise.resolve(undefined);
    const req = ++this.syncs;
    return new Promise((resolve) => {
      this.waiting.set(req, (heap) => {
        this.waiting.delete(req);
        resolve(heap);
      });
      this.worker.postMessage({ type: 'sync', req });
    });
  }

  /** The decoding thread's id, -1 once it has exited. */
  get threadId(): number {
    return this.worker.threadId;
  }

  onWake(listener: (e: WakeEvent) => void): void {
    this.listeners.push(listener);
  }

  onFailure(listener: (err: Error) => void): void {
    this.failureListeners.push(listener);
  }

  private failed(err: Error): void {
    if (this.dead) return;
    this.dead = true;
    if (this.closed) return; // an exit we asked for
    this.log.error({ err: err.message }, 'wake word engine thread failed');
    for (const l of this.failureListeners) l(err);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.dead) return;
    if (this.stopFlag) Atomics.store(this.stopFlag, 0, 1); // the batches still queued are dropped, not spotted
    await stopWorkerThread(this.worker, { ready: true, graceMs: 3000 }); // it exists once its thread is ready
  }
}
