// The companion's Recognizer: pocketsphinx decoding in a small pool of worker threads (recognizerWorker.ts).
//
// Why threads at a lower priority: decoding is the heaviest CPU work of a call (two decoders over every
// utterance). Called through koffi's async mode it ran on the libuv pool at the event loop's own priority, so on
// a busy core a decode could hold the CPU while a 20 ms frame slot came due. A worker thread with a higher nice
// value yields the core to the event loop whenever the loop has work, and uses everything the loop leaves.
// Each thread holds one decoder pair (grammar + language model, ~80 MB); a stream goes to an idle thread, and
// audio is sent in 100 ms batches. A crashed thread fails its streams with 'RECOGNIZER_FAILED' and is started
// again (with the current story names) for the next stream.
//
// Why only one thread stays loaded: a speaker in a kitchen says one thing at a time, and on a 1 GB board the
// companion runs beside the agent. A second thread starts when an utterance arrives while every loaded thread
// is decoding one (two calls, or a user speaking again before the last answer) and is stopped once it has been
// idle for `idleStopMs`; its first utterance waits for its decoders to load (README "Offline speech engines").
import type { Worker } from 'node:worker_threads';
import { trimMalloc } from '../../common/memoryKeeper.js';
import { startWorkerThread, stopWorkerThread } from '../../common/workerThread.js';
import type { PocketsphinxOptions } from './pocketsphinxRecognizer.js';
import type { Recognition, RecognitionMode, Recognizer, RecognizerStream, RecognizerStreamOptions } from './recognizer.js';
import type { RecognizerWorkerData } from './recognizerWorker.js';
import { SpeechError, type SpeechErrorCode } from './speechError.js';

export interface ThreadedRecognizerOptions extends Omit<PocketsphinxOptions, 'sync' | 'maxConcurrent'> {
  /** most decoding threads, i.e. utterances decoded at the same time (default 2) */
  threads?: number;
  /** threads kept loaded while idle (default 1): warmUp() loads them, and they are never stopped for idleness */
  keepThreads?: number;
  /** a thread beyond `keepThreads` is stopped once it has had no utterance for this long (default 60 s) */
  idleStopMs?: number;
  /** nice value of the decoding threads (default 19; the event loop runs at 0) */
  nice?: number;
  /** also give the decoding threads the SCHED_IDLE policy (default true) */
  idle?: boolean;
  /** an utterance with no result this long after it ended fails, and its thread is replaced (default 60 s) */
  decodeDeadlineMs?: number;
  /** how long a replaced thread has to obey its stop before it is terminated (default 10 minutes; tests) */
  hungStopGraceMs?: number;
}

const BATCH_SAMPLES = 1600; // 100 ms at 16 kHz
export const RECOGNIZER_NICE = 19;
export const RECOGNIZER_IDLE_STOP_MS = 60_000;
/**
 * An utterance's result is due this long after it ended at the latest. A decode that hangs (in pocketsphinx, or a
 * thread that never gets the CPU) left its utterance waiting for ever: the call heard nothing more from a user
 * whose turns wait for it, and the thread stayed taken. Past it, the thread's utterances fail
 * ('RECOGNIZER_FAILED'), the thread is let go (replaceHung) and a new one started for the next. Generous: the thread's
 * first utterance includes loading its decoders (0.2-0.5 s here, several seconds on a Pi 3), and at SCHED_IDLE
 * it decodes only what the event loop leaves of the CPU.
 */
export const RECOGNIZER_DECODE_DEADLINE_MS = 60_000;
const IDLE_STOP_GRACE_MS = 10 * 60_000;
const IDLE_STOP_MAX_MS = 60 * 60_000;

type Reply =
  | { type: 'ready' }
  | { type: 'fatal'; message: string }
  | { type: 'warm'; req: number; error?: string }
  | { type: 'result'; id: number; recognition: Recognition }
  | { type: 'failed'; id: number; code: SpeechErrorCode; message: string };

class Slot {
  worker: Worker | undefined;
  /** the current worker has posted 'ready' (its decoders loaded through koffi) or is gone */
  ready: Promise<void> = Promise.resolve();
  readonly streams = new Map<number, ThreadStream>();
  readonly warmers = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  starts = 0;
  /** the idle stop of a thread beyond keepThreads, armed when its last stream ends */
  idleTimer: NodeJS.Timeout | undefined;
  /** how long it waits idle before that stop: doubled when it was needed again soon after one */
  idleStopMs = 0;
  /** when it was last stopped for idleness (performance.now()) */
  stoppedAt = -Infinity;
}

export class ThreadedRecognizer implements Recognizer {
  readonly sampleRate = 16000 as const;
  private readonly slots: Slot[];
  private readonly keep: number;
  private readonly idleStopMs: number;
  private readonly decodeDeadlineMs: number;
  private readonly hungStopGraceMs: number;
  /** idle threads being stopped, and their exits (close() waits for them) */
  private readonly stopping = new Map<Worker, Promise<void>>();
  private readonly data: RecognizerWorkerData;
  private storyNames: string[];
  private nextId = 1;
  private closed = false;
  private fatal: string | undefined;

  constructor(opts: ThreadedRecognizerOptions = {}) {
    const { threads, keepThreads, idleStopMs, nice, idle, storyNames, decodeDeadlineMs, hungStopGraceMs, ...options } = opts;
    this.decodeDeadlineMs = decodeDeadlineMs ?? RECOGNIZER_DECODE_DEADLINE_MS;
    this.hungStopGraceMs = hungStopGraceMs ?? IDLE_STOP_GRACE_MS;
    this.slots = Array.from({ length: Math.max(1, threads ?? 2) }, () => new Slot());
    this.keep = Math.min(this.slots.length, Math.max(1, keepThreads ?? 1));
    this.idleStopMs = idleStopMs ?? RECOGNIZER_IDLE_STOP_MS;
    this.storyNames = storyNames ?? [];
    this.data = { options, nice: nice ?? RECOGNIZER_NICE, idle: idle ?? true };
  }

  /** Replaces the story names of "read the story <name>" in every thread. */
  setStoryNames(names: string[]): void {
    this.storyNames = [...names];
    for (const s of this.slots) s.worker?.postMessage({ type: 'names', names: this.storyNames });
  }

  /** Starts the kept threads and loads their decoders now instead of on first use: the first thread alone, so
   *  that the others find the dictionary it made (lmDictionary.ts) and the start's memory peaks once. */
  async warmUp(): Promise<void> {
    const [first, ...rest] = this.slots.slice(0, this.keep);
    const firstFailed = await this.warmSlot(first).then(() => undefined, (err: unknown) => err ?? new Error('warm-up failed'));
    await Promise.all(rest.map((slot) => this.warmSlot(slot)));
    if (firstFailed) throw firstFailed;
  }

  private warmSlot(slot: Slot): Promise<void> {
    const w = this.ensureWorker(slot);
    const req = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      slot.warmers.set(req, { resolve, reject });
      w.postMessage({ type: 'warmup', req });
    });
  }

  /** Thread ids of the running decoding threads (diagnostics and fault-injection tests). */
  threadIds(): number[] {
    return this.slots.flatMap((s) => (s.worker ? [s.worker.threadId] : []));
  }

  /** How long each thread beyond keepThreads now waits idle before it is stopped (diagnostics and tests). */
  idleStopDelaysMs(): number[] {
    return this.slots.slice(this.keep).map((s) => s.idleStopMs || this.idleStopMs);
  }

  /** Thread starts so far, counting restarts after a crash. */
  get threadStarts(): number {
    return this.slots.reduce((n, s) => n + s.starts, 0);
  }

  /** Makes a decoding thread die of an uncaught exception, as a bug in it would (fault-injection tests). */
  async crashThreadForTest(index = 0): Promise<void> {
    const w = this.slots[index]?.worker;
    if (!w) return;
    const exited = new Promise((r) => w.once('exit', r));
    w.postMessage({ type: 'crash' });
    await exited;
  }

  /** Makes a decoding thread busy for `ms` without returning to its messages, as a decode stuck in pocketsphinx would
   *  (fault-injection tests). */
  hangThreadForTest(index: number, ms: number): void {
    this.slots[index]?.worker?.postMessage({ type: 'hang', ms });
  }

  createStream(opts?: RecognizerStreamOptions): RecognizerStream {
    if (this.closed) throw new SpeechError('RECOGNIZER_FAILED', 'recognizer is closed');
    if (this.fatal) throw new SpeechError('RECOGNIZER_FAILED', this.fatal);
    const mode = opts?.mode ?? 'command';
    if (mode !== 'command' && mode !== 'dictation') throw new SpeechError('INVALID_ARGUMENT', `unknown recognition mode "${String(mode)}"`);
    const slot = this.pickSlot();
    clearTimeout(slot.idleTimer);
    const id = this.nextId++;
    const stream = new ThreadStream(id, () => this.ensureWorker(slot), () => this.released(slot, id), {
      ms: this.decodeDeadlineMs,
      missed: (w) => this.replaceHung(slot, w),
    });
    slot.streams.set(id, stream);
    this.ensureWorker(slot).postMessage({ type: 'start', id, mode });
    return stream;
  }

  async recognize(pcm16k: Int16Array, opts?: RecognizerStreamOptions): Promise<Recognition> {
    const s = this.createStream(opts);
    s.write(pcm16k);
    return s.end();
  }

  /** A kept thread with nothing to decode (started again if it crashed), else an extra one (started now if not
   *  running), else the least busy. Kept threads first, so an extra one goes idle and is stopped. */
  private pickSlot(): Slot {
    const kept = this.slots.slice(0, this.keep);
    const extra = this.slots.slice(this.keep);
    const idle = (s: Slot) => s.streams.size === 0;
    return (
      kept.find((s) => s.worker && idle(s)) ??
      kept.find((s) => !s.worker) ??
      extra.find((s) => s.worker && idle(s)) ??
      extra.find((s) => !s.worker) ??
      this.slots.reduce((a, b) => (b.streams.size < a.streams.size ? b : a))
    );
  }

  private released(slot: Slot, id: number): void {
    slot.streams.delete(id);
    if (slot.streams.size > 0 || this.closed || this.slots.indexOf(slot) < this.keep) return;
    clearTimeout(slot.idleTimer);
    slot.idleTimer = setTimeout(() => this.stopIdle(slot), slot.idleStopMs || this.idleStopMs).unref();
  }

  /** Stops a thread beyond keepThreads that stayed idle, and gives its decoders' memory back to the system. */
  private stopIdle(slot: Slot): void {
    const w = slot.worker;
    if (!w || slot.streams.size > 0 || this.closed) return;
    slot.worker = undefined; // its exit is then no failure, and the next stream starts a new thread
    slot.stoppedAt = performance.now();
    // Nothing waits for it, so a long grace: at SCHED_IDLE on a busy core it may wait for the CPU, and terminate()
    // landing in a native call can abort the process (workerThread.ts). close() ends the wait after 5 s.
    const stopped = stopWorkerThread(w, { ready: slot.ready, graceMs: IDLE_STOP_GRACE_MS })
      .then(() => void trimMalloc()) // the thread's malloc arena keeps the freed decoders otherwise
      .finally(() => this.stopping.delete(w));
    this.stopping.set(w, stopped);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([
      ...[...this.stopping].map(([w, stopped]) => {
        const timer = setTimeout(() => void w.terminate(), 5000);
        return stopped.finally(() => clearTimeout(timer));
      }),
      ...this.slots.map(async (slot) => {
        clearTimeout(slot.idleTimer);
        const w = slot.worker;
        slot.worker = undefined;
        for (const s of slot.streams.values()) s.fail(new SpeechError('ABORTED', 'recognizer closed'));
        if (!w) return;
        await stopWorkerThread(w, { ready: slot.ready, graceMs: 5000 }); // it frees the decoders between two messages, then exits
      }),
    ]);
  }

  private ensureWorker(slot: Slot): Worker {
    if (slot.worker) return slot.worker;
    // Every start and stop of a thread costs ~0.12 MB for good (koffi's and sphinxbase's per-thread leftovers, malloc
    // fragmentation: bench/README). Overlaps that keep coming (a hub's speakers) would repeat it every minute, so a
    // thread needed again within ten idle periods of its stop waits twice as long the next time, up to an hour.
    const base = this.idleStopMs;
    slot.idleStopMs = performance.now() - slot.stoppedAt < 10 * (slot.idleStopMs || base) ? Math.min(IDLE_STOP_MAX_MS, 2 * (slot.idleStopMs || base)) : base;
    const w = startWorkerThread(import.meta.url, 'recognizerWorker', { ...this.data, options: { ...this.data.options, storyNames: this.storyNames } });
    slot.starts++;
    w.unref(); // idle decoding threads must not keep the process alive
    let markReady!: () => void;
    slot.ready = new Promise<void>((r) => (markReady = r));
    w.on('message', (m: Reply) => {
      switch (m.type) {
        case 'ready':
          markReady();
          return;
        case 'fatal':
          this.fatal = m.message;
          return;
        case 'warm': {
          const waiter = slot.warmers.get(m.req);
          slot.warmers.delete(m.req);
          if (m.error) waiter?.reject(new SpeechError('RECOGNIZER_FAILED', m.error));
          else waiter?.resolve();
          return;
        }
        case 'result':
          slot.streams.get(m.id)?.settle(m.recognition);
          return;
        case 'failed':
          slot.streams.get(m.id)?.fail(new SpeechError(m.code, m.message));
          return;
      }
    });
    const gone = (err?: Error): void => {
      markReady();
      if (slot.worker !== w) return;
      slot.worker = undefined;
      slot.stoppedAt = -Infinity; // a restart after a crash is no sign of overlaps that keep coming
      const cause = this.fatal ?? err?.message ?? 'recognizer thread exited';
      for (const s of slot.streams.values()) s.fail(new SpeechError('RECOGNIZER_FAILED', `speech recognition thread failed: ${cause}`, { cause: err }));
      for (const waiter of slot.warmers.values()) waiter.reject(new SpeechError('RECOGNIZER_FAILED', `speech recognition thread failed: ${cause}`));
      slot.warmers.clear();
    };
    w.on('error', gone);
    w.on('exit', () => gone());
    slot.worker = w;
    return w;
  }

  /** An utterance on `w` missed its deadline (RECOGNIZER_DECODE_DEADLINE_MS): the thread's utterances fail, and it is
   *  let go; the slot starts a new one for its next utterance. Not terminate() at once: inside a native call (a
   *  decode stuck in pocketsphinx, a set-up in koffi.load) it can abort the whole process (workerThread.ts). It is
   *  asked to stop, which it does at its next message (its decoders freed), and terminated only if it has not
   *  after hungStopGraceMs. close() does not wait for it: a thread that never comes back goes with the process. */
  private replaceHung(slot: Slot, w: Worker): void {
    if (slot.worker !== w) return; // it already exited, or was replaced
    const ready = slot.ready;
    slot.worker = undefined;
    slot.stoppedAt = -Infinity;
    const err = new SpeechError('RECOGNIZER_FAILED', `speech recognition gave no result ${this.decodeDeadlineMs / 1000} s after the utterance ended: its thread was replaced`);
    for (const s of slot.streams.values()) s.fail(err);
    for (const waiter of slot.warmers.values()) waiter.reject(err);
    slot.warmers.clear();
    void stopWorkerThread(w, { ready, graceMs: this.hungStopGraceMs });
  }
}

/** when an ended utterance's result is due, and what its stream calls when it was not (with the thread it was on) */
interface Deadline {
  ms: number;
  missed: (worker: Worker) => void;
}

class ThreadStream implements RecognizerStream {
  private deadline: NodeJS.Timeout | undefined;
  private batch = new Int16Array(BATCH_SAMPLES);
  private batched = 0;
  private ended = false;
  private done = false;
  private failure: SpeechError | undefined;
  private result: Recognition | undefined;
  private waiter: { resolve: (r: Recognition) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly id: number,
    private readonly worker: () => Worker,
    private readonly forget: () => void,
    private readonly due: Deadline,
  ) {}

  write(pcm16k: Int16Array): void {
    if (this.ended || this.done) return;
    if (!(pcm16k instanceof Int16Array)) {
      this.fail(new SpeechError('INVALID_ARGUMENT', 'recognizer audio must be an Int16Array of 16 kHz samples'));
      this.worker().postMessage({ type: 'abort', id: this.id });
      return;
    }
    let i = 0;
    while (i < pcm16k.length) {
      const n = Math.min(pcm16k.length - i, BATCH_SAMPLES - this.batched);
      this.batch.set(pcm16k.subarray(i, i + n), this.batched);
      this.batched += n;
      i += n;
      if (this.batched === BATCH_SAMPLES) this.flush();
    }
  }

  end(): Promise<Recognition> {
    if (this.ended) return Promise.reject(new SpeechError('INVALID_ARGUMENT', 'end() called twice'));
    this.ended = true;
    if (!this.done) {
      this.flush();
      const w = this.worker();
      w.postMessage({ type: 'end', id: this.id });
      this.deadline = setTimeout(() => this.due.missed(w), this.due.ms);
      this.deadline.unref();
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.deliver();
    });
  }

  abort(): void {
    if (this.done) return;
    if (!this.ended) this.worker().postMessage({ type: 'abort', id: this.id });
    this.fail(new SpeechError('ABORTED', 'recognition aborted'));
  }

  /** @internal the thread's result */
  settle(r: Recognition): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.deadline);
    this.result = r;
    this.forget();
    this.deliver();
  }

  /** @internal the stream failed (thread crash, bad input, abort, close) */
  fail(err: SpeechError): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.deadline);
    this.failure = err;
    this.forget();
    this.deliver();
  }

  private deliver(): void {
    if (!this.waiter || !this.done) return;
    if (this.failure) this.waiter.reject(this.failure);
    else this.waiter.resolve(this.result!);
    this.waiter = undefined;
  }

  private flush(): void {
    if (this.batched === 0) return;
    const pcm = this.batch.slice(0, this.batched); // its own buffer, moved to the thread without a copy
    this.batched = 0;
    this.worker().postMessage({ type: 'write', id: this.id, pcm }, [pcm.buffer]);
  }
}
