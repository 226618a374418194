// The offline Synthesizer: libespeak-ng in a small pool of worker processes (espeakWorker.ts).
//
// Why processes: espeak-ng has process-global state, and synthesis is CPU work (~0.15 ms per character)
// that must never stall the companion's event loop, where live calls pace audio every 20 ms.
// Lanes: 'realtime' work (assistant replies) has its own worker(s) so it never queues behind 'bulk' work
// (REST synthesis, story narration), and it is taken first by any idle kept bulk worker too. Text is split at sentence ends into chunks; the chunks of a bulk request
// are spread over all bulk workers and re-assembled in order, so one long request uses every core and several
// requests progress together. Abort drops pending chunks at once; a chunk already running (< ~0.1 s of CPU)
// finishes in the worker and is discarded. A crashed or hung worker is replaced and its requests fail with
// SpeechError 'TTS_FAILED'.
// Bulk workers beyond `keepBulkWorkers` (the companion keeps none: a speaker's own companion mostly speaks replies)
// start when bulk work arrives and stop after `idleStopMs` without a chunk: each is a Node process of ~15 MB of
// its own. A reply not yet started is taken before the next chunk of an earlier one.
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import os, { availableParallelism } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { SynthesisLane, SynthesisResult, Synthesizer, SynthesizeOptions, VoiceParams } from './synthesizer.js';
import type { EspeakVoiceSettings } from './espeakEngine.js';
import { SpeechError } from './speechError.js';
import { silentLogger, type Logger } from '../../common/logger.js';
import { splitForSynthesis, WordTimingBuilder, type ChunkEvent } from './wordTimings.js';

/** espeak-ng's output rate for its own (non-MBROLA) voices. */
export const ESPEAK_SAMPLE_RATE = 22050;

export interface EspeakSynthesizerOptions {
  /** workers for bulk work; default min(2, cores) */
  bulkWorkers?: number;
  /** workers for realtime work; default 1 */
  realtimeWorkers?: number;
  /** a chunk running longer than this is considered hung: its worker is killed and replaced (default 30 s) */
  chunkTimeoutMs?: number;
  /** bulk workers kept running while idle (default: all); the others start when work needs them */
  keepBulkWorkers?: number;
  /** a bulk worker beyond keepBulkWorkers stops after this long without a chunk (default 60 s) */
  idleStopMs?: number;
  /** kept workers page out their start-up code this long after their start, between two chunks (espeakWorker.ts;
   *  default 30 s, 0 = never) */
  pageOutAfterMs?: number;
  /** a worker not ready this long after its fork is killed and counted as a failed start (default 60 s: workers
   *  start at their lane's nice value, slowly on a busy board) */
  startTimeoutMs?: number;
  /** where failed starts are reported (default: nowhere) */
  logger?: Logger;
}

const LANGUAGE_ALIASES: Record<string, string> = { 'en-gb': 'en', 'en-uk': 'en', en_gb: 'en' };

/** espeak voice name ("en-us+f3") and numeric settings for a VoiceParams at a given speed. */
export function espeakVoiceSettings(voice: VoiceParams, speed = 1): EspeakVoiceSettings {
  const language = voice.language?.trim().toLowerCase();
  if (!language || !/^[a-z]{2,3}([-_][a-z0-9]{1,8})*$/.test(language)) {
    throw new SpeechError('INVALID_ARGUMENT', `not an espeak language code: '${voice.language}'`);
  }
  const variant = voice.variant ?? (voice.gender === 'female' ? 'f3' : undefined);
  if (variant !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(variant)) {
    throw new SpeechError('INVALID_ARGUMENT', `not an espeak variant name: '${variant}'`);
  }
  if (!Number.isFinite(speed) || speed <= 0) throw new SpeechError('INVALID_ARGUMENT', `speed must be a positive number, got ${speed}`);
  const rate = Math.max(80, Math.min(450, Math.round((voice.rate ?? 175) * speed)));
  // espeak selects voices by file name; its British English file is 'en'
  const name = LANGUAGE_ALIASES[language] ?? language;
  return {
    name: variant ? `${name}+${variant}` : name,
    rate,
    pitch: Math.max(0, Math.min(100, Math.round(voice.pitch ?? 50))),
    range: Math.max(0, Math.min(100, Math.round(voice.range ?? 50))),
  };
}

interface Chunk {
  index: number;
  text: string;
  offset: number;
  state: 'pending' | 'running' | 'done';
  pending: Int16Array[]; // audio received while an earlier chunk is still being emitted
  events: ChunkEvent[];
  samples: number;
}

interface Request {
  id: number;
  lane: SynthesisLane;
  voice: EspeakVoiceSettings;
  chunks: Chunk[];
  nextToStart: number;
  head: number; // first chunk not yet fully emitted
  sampleOffset: number; // samples emitted so far
  timings: WordTimingBuilder;
  onAudio: (pcm: Int16Array) => void;
  resolve: (r: SynthesisResult) => void;
  reject: (e: Error) => void;
  finished: boolean;
  cleanup: () => void;
}

interface Job {
  id: number;
  request: Request;
  chunk: Chunk;
  timer: NodeJS.Timeout;
}

class Worker {
  child: ChildProcess | null = null;
  ready = false;
  job: Job | null = null;
  restarts = 0;
  /** starts in a row that failed (no process, or it exited before its ready): the next try waits longer */
  startFailures = 0;
  /** why its process cannot start, as it said (its 'fatal': espeak's library or data missing) */
  fatal: string | null = null;
  /** why its last start failed (cleared by its ready) */
  lastError: string | null = null;
  /** after a failed start: a kept worker's next try; another's return to parked (not tried again at every pump(),
   *  which runs at each message of the other workers) */
  retryTimer: NodeJS.Timeout | undefined;
  /** not running, and started only when work needs it (a bulk worker beyond keepBulkWorkers) */
  parked = false;
  idleTimer: NodeJS.Timeout | undefined;
  constructor(
    readonly lane: SynthesisLane,
    /** kept running while idle */
    readonly kept: boolean,
  ) {}
}

/** nice value of the synthesis processes per lane (the event loop runs at 0). Realtime (a call's replies): 19,
 *  synthesis runs ahead of playback, so it takes what CPU the event loop leaves (at 5 it still delayed the 20 ms
 *  pacer on a busy core). Bulk (REST speech, narration): 5, whose answer time is the synthesis time; at 19 it lost
 *  the core to ffmpeg's MP3 encoding and a 15,000-character request went over its 5 s. */
export const SYNTH_NICE: Record<SynthesisLane, number> = { realtime: 19, bulk: 5 };

function workerLaunch(): { modulePath: string; execArgv: string[] } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // running from src under tsx/vitest: the worker is TypeScript too, loaded through tsx's ESM loader
    const tsx = createRequire(here).resolve('tsx');
    return { modulePath: fileURLToPath(new URL('./espeakWorker.ts', here)), execArgv: ['--import', pathToFileURL(tsx).href] };
  }
  return { modulePath: fileURLToPath(new URL('./espeakWorker.js', here)), execArgv: [] };
}

export class EspeakSynthesizer implements Synthesizer {
  readonly sampleRate = ESPEAK_SAMPLE_RATE;
  private readonly workers: Worker[] = [];
  private readonly queues: Record<SynthesisLane, Request[]> = { realtime: [], bulk: [] };
  private readonly jobs = new Map<number, Job>();
  private readonly chunkTimeoutMs: number;
  private readonly idleStopMs: number;
  private readonly pageOutAfterMs: number;
  private readonly startTimeoutMs: number;
  /** idle workers told to stop that have not exited yet (close() waits for them) */
  private readonly parking = new Set<ChildProcess>();
  private nextId = 1;
  private closed = false;
  private readonly launch = workerLaunch();
  private readonly log: Logger;

  constructor(opts: EspeakSynthesizerOptions = {}) {
    const bulk = opts.bulkWorkers ?? Math.max(1, Math.min(2, availableParallelism()));
    const realtime = opts.realtimeWorkers ?? 1;
    if (bulk + realtime < 1) throw new SpeechError('INVALID_ARGUMENT', 'EspeakSynthesizer needs at least one worker');
    this.chunkTimeoutMs = opts.chunkTimeoutMs ?? 30_000;
    this.idleStopMs = opts.idleStopMs ?? 60_000;
    this.pageOutAfterMs = opts.pageOutAfterMs ?? 30_000;
    this.startTimeoutMs = opts.startTimeoutMs ?? 60_000;
    this.log = opts.logger ?? silentLogger;
    // with no realtime worker, replies need a kept bulk worker (started ones take bulk work only)
    const keepBulk = Math.max(realtime === 0 ? 1 : 0, opts.keepBulkWorkers ?? bulk);
    for (let i = 0; i < realtime; i++) this.workers.push(new Worker('realtime', true));
    for (let i = 0; i < bulk; i++) this.workers.push(new Worker('bulk', i < keepBulk));
    for (const w of this.workers) {
      if (w.kept) this.spawn(w);
      else w.parked = true;
    }
  }

  /** Resolves once every kept worker has loaded espeak; rejects with why one could not (optional: synthesize()
   *  queues until a worker is ready). */
  async ready(timeoutMs = 15_000): Promise<void> {
    const t0 = Date.now();
    const kept = this.workers.filter((w) => w.kept);
    while (!kept.every((w) => w.ready)) {
      const failed = kept.find((w) => w.lastError !== null);
      if (failed) throw new SpeechError('TTS_FAILED', `espeak worker failed to start: ${failed.lastError}`);
      if (Date.now() - t0 > timeoutMs) throw new SpeechError('TTS_FAILED', 'espeak workers did not start in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Process ids of the workers (for diagnostics and fault-injection tests). */
  workerPids(lane?: SynthesisLane): number[] {
    return this.workers.filter((w) => !lane || w.lane === lane).flatMap((w) => (w.child?.pid ? [w.child.pid] : []));
  }

  synthesize(text: string, voice: VoiceParams, opts: SynthesizeOptions): Promise<SynthesisResult> {
    if (this.closed) return Promise.reject(new SpeechError('TTS_FAILED', 'synthesizer is closed'));
    if (typeof text !== 'string') return Promise.reject(new SpeechError('INVALID_ARGUMENT', 'text must be a string'));
    let settings: EspeakVoiceSettings;
    try {
      settings = espeakVoiceSettings(voice, opts.speed ?? 1);
    } catch (err) {
      return Promise.reject(err);
    }
    if (opts.signal?.aborted) return Promise.reject(new SpeechError('ABORTED', 'synthesis aborted'));
    return new Promise<SynthesisResult>((resolve, reject) => {
      const lane = opts.lane ?? 'bulk';
      // white space only: nothing to say, so no audio at all (espeak would render a short silence)
      const chunks = (text.trim() === '' ? [] : splitForSynthesis(text)).map<Chunk>((c, index) => ({ ...c, index, state: 'pending', pending: [], events: [], samples: 0 }));
      const req: Request = {
        id: this.nextId++,
        lane,
        voice: settings,
        chunks,
        nextToStart: 0,
        head: 0,
        sampleOffset: 0,
        timings: new WordTimingBuilder(this.sampleRate),
        onAudio: opts.onAudio,
        resolve,
        reject,
        finished: false,
        cleanup: () => {},
      };
      if (opts.signal) {
        const signal = opts.signal;
        const onAbort = () => this.fail(req, new SpeechError('ABORTED', 'synthesis aborted'));
        signal.addEventListener('abort', onAbort, { once: true });
        req.cleanup = () => signal.removeEventListener('abort', onAbort);
      }
      if (chunks.length === 0) {
        this.finish(req);
        return;
      }
      this.queues[lane].push(req);
      if (!this.workers.some((w) => this.canServe(w, lane) && (w.ready || w.child))) this.retryNow(lane);
      this.pump();
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const closedErr = () => new SpeechError('TTS_FAILED', 'synthesizer closed');
    for (const lane of ['realtime', 'bulk'] as const) {
      for (const r of [...this.queues[lane]]) this.fail(r, closedErr());
    }
    for (const job of [...this.jobs.values()]) this.fail(job.request, closedErr());
    const children = [...this.parking];
    for (const w of this.workers) {
      clearTimeout(w.idleTimer);
      clearTimeout(w.retryTimer);
      if (w.child) children.push(w.child);
      w.child = null;
    }
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.pid === undefined || c.exitCode !== null || c.signalCode !== null) return resolve(); // never started, or gone
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
            setTimeout(() => c.kill('SIGKILL'), 2000).unref();
            setTimeout(resolve, 5000).unref(); // one stuck in the kernel (a dead disk) is left to it
          }),
      ),
    );
  }

  private spawn(w: Worker): void {
    if (this.closed) return;
    w.parked = false;
    w.ready = false;
    let child: ChildProcess;
    try {
      // realtime: 60 ms espeak buffers for a fast first chunk; bulk: 500 ms, fewer callbacks and IPC messages
      // started ones stop after a minute idle: paging out what they will never run again would not pay
      child = fork(this.launch.modulePath, [w.lane === 'realtime' ? '60' : '500', String(w.kept ? this.pageOutAfterMs : 0)], {
        execArgv: this.launch.execArgv,
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
    } catch (err) {
      this.spawnFailed(w, err as Error); // ENOMEM, E2BIG: node throws these
      return;
    }
    w.child = child;
    // Below the event loop's priority: on a shared core, synthesis (which runs seconds ahead of playback) must
    // never delay the 20 ms frame pacer of live calls. Best effort (a pid may already be gone).
    if (child.pid) {
      try {
        os.setPriority(child.pid, SYNTH_NICE[w.lane]);
      } catch {
        /* not permitted or exited: runs at normal priority */
      }
    }
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      if (stderr.length < 4096) stderr += b.toString();
    });
    // hung in its start (a library's init, a stalled disk): killed and let go at once (a process stuck in the
    // kernel ends only when the kernel lets it; close() waits for it a while)
    const startTimer = setTimeout(() => {
      if (w.child !== child || w.ready) return;
      w.child = null;
      this.parking.add(child);
      child.once('exit', () => this.parking.delete(child));
      child.kill('SIGKILL');
      this.spawnFailed(w, new Error(`not ready within ${this.startTimeoutMs} ms`));
    }, this.startTimeoutMs).unref();
    child.once('exit', () => clearTimeout(startTimer));
    child.on('message', (msg: WorkerMessage) => this.onMessage(w, child, msg));
    child.on('error', (err) => {
      // A process that never started (EAGAIN under the unit's TasksMax, EMFILE, ENOENT): node reports it here and
      // never emits 'exit'. Any other error (a send or kill that failed) is followed by the exit handler's report.
      if (child.pid !== undefined || w.child !== child) return;
      clearTimeout(startTimer);
      w.child = null;
      this.spawnFailed(w, err);
    });
    child.on('exit', (code, sig) => {
      if (w.child !== child) return; // replaced or closed
      const started = w.ready;
      w.child = null;
      w.ready = false;
      const job = w.job;
      w.job = null;
      if (job) this.jobFailed(job, new SpeechError('TTS_FAILED', `espeak worker exited (${sig ?? code}) while synthesizing`, { cause: stderr.trim() || undefined }));
      if (this.closed) return;
      if (!started) {
        // died in its start: espeak's library or data missing (its 'fatal'), its init crashed, the OOM killer. Its
        // stderr is read to the end first ('close'; a moment at most).
        const fatal = w.fatal;
        w.fatal = null;
        let reported = false;
        const report = () => {
          if (reported) return;
          reported = true;
          const said = errorLine(stderr);
          this.spawnFailed(w, new Error(fatal ?? `exited (${sig ?? code}) before it was ready${said ? `: ${said}` : ''}`), fatal !== null);
        };
        child.once('close', report);
        setTimeout(report, 500).unref();
        return;
      }
      if (!w.kept && !this.bulkWaiting()) {
        w.parked = true; // started again when bulk work comes
        return;
      }
      w.restarts++;
      // back off a little when crashing repeatedly
      setTimeout(() => this.spawn(w), Math.min(2000, 50 * 2 ** Math.min(w.restarts, 5))).unref();
    });
  }

  /** A worker did not start (no process; it exited, or hung, before its ready): what waits for a lane that no
   *  worker ready or starting can take fails now (a small board out of memory or processes, espeak missing: the
   *  caller hears an error, not silence). A kept worker tries again in 2 s (after five failures in a row, 30 s;
   *  when espeak itself said it cannot start, 10 minutes), or at once for a request no worker can take
   *  (retryNow); another is parked again after 2 s, to start when bulk work needs it. */
  private spawnFailed(w: Worker, err: Error, espeakSaidSo = false): void {
    w.ready = false;
    if (this.closed) return;
    w.startFailures++;
    w.lastError = err.message;
    this.log.warn({ lane: w.lane, failures: w.startFailures, err: err.message }, 'espeak worker could not start');
    const delay = !w.kept ? 2000 : espeakSaidSo ? 600_000 : w.startFailures > 5 ? 30_000 : 2000;
    w.retryTimer = setTimeout(() => {
      w.retryTimer = undefined;
      if (w.kept) return this.spawn(w);
      w.parked = true;
      this.pump();
    }, delay).unref();
    for (const lane of ['realtime', 'bulk'] as const) {
      if (this.workers.some((x) => this.canServe(x, lane) && (x.ready || x.child))) continue;
      for (const r of [...this.queues[lane]]) this.fail(r, new SpeechError('TTS_FAILED', `espeak worker could not start: ${err.message}`));
    }
  }

  /** A request no worker ready or starting can take: the workers of its lane waiting to try their start again try
   *  now (memory may be free again, a package installed); the request waits for that start, or fails with it. */
  private retryNow(lane: SynthesisLane): void {
    for (const w of this.workers) {
      if (!w.retryTimer || !this.canServe(w, lane)) continue;
      clearTimeout(w.retryTimer);
      w.retryTimer = undefined;
      if (w.kept) this.spawn(w);
      else w.parked = true; // pump() starts it for bulk work
    }
  }

  /** Whether w takes work of this lane. Replies: the realtime workers and any kept one (a bulk worker started for
   *  bulk work takes none: replies, which come all through a conversation, would keep it from its idle stop).
   *  Bulk work: the bulk workers, or any when there are none. */
  private canServe(w: Worker, lane: SynthesisLane): boolean {
    return lane === 'realtime' ? w.kept || w.lane === 'realtime' : w.lane === 'bulk' || !this.workers.some((x) => x.lane === 'bulk');
  }

  private onMessage(w: Worker, child: ChildProcess, msg: WorkerMessage): void {
    if (w.child !== child) return;
    switch (msg.type) {
      case 'ready':
        if (msg.sampleRate !== this.sampleRate) {
          w.fatal = `espeak reports ${msg.sampleRate} Hz, expected ${this.sampleRate}`;
          child.kill();
          return;
        }
        if (w.startFailures > 0) this.log.info({ lane: w.lane, failures: w.startFailures }, 'espeak worker started again');
        w.ready = true;
        w.restarts = 0;
        w.startFailures = 0;
        w.lastError = null;
        this.pump();
        return;
      case 'fatal':
        w.fatal = msg.message;
        return;
      case 'audio': {
        const job = this.jobs.get(msg.job);
        if (!job) return; // aborted request: discard
        this.chunkAudio(job.request, job.chunk, msg.pcm);
        return;
      }
      case 'done':
      case 'error': {
        const job = this.jobs.get(msg.job);
        w.job = null;
        if (job) {
          this.jobs.delete(job.id);
          clearTimeout(job.timer);
          if (msg.type === 'error') {
            this.fail(job.request, new SpeechError('TTS_FAILED', `espeak failed: ${msg.message}`));
          } else {
            job.chunk.state = 'done';
            job.chunk.samples = msg.samples;
            job.chunk.events = msg.events.map(([type, textPosition, sample]) => ({ type, textPosition, sample }));
            this.advance(job.request);
          }
        }
        this.pump();
        return;
      }
    }
  }

  /** Hands pending chunks to idle ready workers of their lane. */
  private pump(): void {
    for (const w of this.workers) {
      if (!w.ready || w.job || !w.child) continue;
      const queue = this.canServe(w, 'realtime') && this.queues.realtime.length > 0 ? this.queues.realtime : this.canServe(w, 'bulk') ? this.queues.bulk : null;
      // a reply not started yet goes first (its listener waits for its first audio; the chunks after a reply's
      // first are needed only as it plays), then the oldest
      const req = (queue === this.queues.realtime ? queue.find((r) => r.nextToStart === 0) : undefined) ?? queue?.find((r) => r.nextToStart < r.chunks.length);
      if (!queue || !req) continue;
      const chunk = req.chunks[req.nextToStart++];
      if (req.nextToStart >= req.chunks.length) queue.splice(queue.indexOf(req), 1);
      chunk.state = 'running';
      const job: Job = {
        id: this.nextId++,
        request: req,
        chunk,
        timer: setTimeout(() => {
          // hung: kill the worker; its exit handler fails the request and replaces it
          w.child?.kill('SIGKILL');
        }, this.chunkTimeoutMs),
      };
      job.timer.unref();
      this.jobs.set(job.id, job);
      w.job = job;
      clearTimeout(w.idleTimer);
      w.idleTimer = undefined;
      w.child.send({ type: 'synth', job: job.id, text: chunk.text, voice: req.voice });
    }
    if (this.closed) return;
    // Bulk work waiting starts every parked worker (a long text is spread over all). Replies never do: one worker
    // synthesises ~6,000 characters a second, hundreds of calls' speech, and a reply waits at most for one chunk.
    if (this.bulkWaiting()) for (const w of this.workers.filter((x) => x.parked)) this.spawn(w);
    // counted from its ready (a slow start is no idleness) or its last chunk
    for (const w of this.workers) if (!w.kept && w.ready && w.child && !w.job && !w.idleTimer) this.armIdleStop(w);
  }

  private bulkWaiting(): boolean {
    return this.queues.bulk.some((r) => r.nextToStart < r.chunks.length);
  }

  /** Stops a worker beyond keepBulkWorkers once it has been idle for idleStopMs (since its last chunk, or start). */
  private armIdleStop(w: Worker): void {
    w.idleTimer = setTimeout(() => {
      w.idleTimer = undefined;
      const c = w.child;
      if (this.closed || !c || w.job || this.bulkWaiting()) return;
      w.child = null; // its exit is then no crash
      w.ready = false;
      w.parked = true;
      this.parking.add(c);
      c.once('exit', () => this.parking.delete(c));
      c.kill('SIGTERM');
      setTimeout(() => c.kill('SIGKILL'), 5000).unref();
    }, this.idleStopMs).unref();
  }

  private chunkAudio(req: Request, chunk: Chunk, pcm: Int16Array): void {
    if (req.finished) return;
    if (chunk.index === req.head) this.emit(req, pcm);
    else chunk.pending.push(pcm);
  }

  private emit(req: Request, pcm: Int16Array): void {
    try {
      req.onAudio(pcm);
    } catch (err) {
      this.fail(req, new SpeechError('TTS_FAILED', 'onAudio callback threw', { cause: err }));
    }
  }

  /** Emits every completed chunk at the head, in order; starts streaming the next running one. */
  private advance(req: Request): void {
    while (!req.finished && req.head < req.chunks.length) {
      const c = req.chunks[req.head];
      if (c.pending.length) {
        const pending = c.pending;
        c.pending = [];
        for (const p of pending) this.emit(req, p);
      }
      if (c.state !== 'done') return;
      req.timings.addChunk(c.text, c.offset, c.events, req.sampleOffset, c.samples);
      req.sampleOffset += c.samples;
      c.events = [];
      req.head++;
    }
    if (!req.finished && req.head >= req.chunks.length) this.finish(req);
  }

  private finish(req: Request): void {
    req.finished = true;
    req.cleanup();
    const samples = req.sampleOffset;
    req.resolve({
      words: req.timings.result(),
      samples,
      sampleRate: this.sampleRate,
      durationMs: Math.round((samples * 1000) / this.sampleRate),
    });
  }

  private jobFailed(job: Job, err: SpeechError): void {
    clearTimeout(job.timer);
    this.jobs.delete(job.id);
    this.fail(job.request, err);
  }

  private fail(req: Request, err: Error): void {
    if (req.finished) return;
    req.finished = true;
    req.cleanup();
    const q = this.queues[req.lane];
    const i = q.indexOf(req);
    if (i >= 0) q.splice(i, 1);
    for (const [id, job] of this.jobs) {
      if (job.request === req) {
        // the running chunk finishes in its worker; its output is dropped because the job is gone
        clearTimeout(job.timer);
        this.jobs.delete(id);
      }
    }
    req.reject(err);
  }
}

/** The line of a node process's stderr that says what went wrong (its last line is node's version). */
function errorLine(stderr: string): string | undefined {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines.find((l) => /^(\w*Error\b|FATAL|Assertion)/.test(l)) ?? lines.pop())?.slice(0, 200);
}

type WorkerMessage =
  | { type: 'ready'; sampleRate: number }
  | { type: 'fatal'; message: string }
  | { type: 'audio'; job: number; pcm: Int16Array }
  | { type: 'done'; job: number; events: [number, number, number][]; samples: number }
  | { type: 'error'; job: number; message: string };
