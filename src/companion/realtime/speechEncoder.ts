// Where assistant speech becomes Opus: ahead of time, not on the pacer's tick. Each call's OutgoingAudio opens a
// channel and writes the synthesiser's audio as it arrives; encoded 20 ms packets come back in batches and wait
// in the call's queue, so a tick only sends a ready packet.
// - ThreadSpeechEncoder (the server's): one shared worker thread (speechEncoderWorker.ts) encodes for every call
//   at a lower CPU priority, so encoding never delays a frame. A crashed thread is replaced on the next write;
//   audio that was in flight is reported lost to its channels (their speech skips ahead, the call goes on).
// - InlineSpeechEncoder: encodes synchronously in write() (unit tests, and the fallback where threads fail).
//   ThreadSpeechEncoder falls back to it by itself when its thread dies before it ever started (no entry file,
//   threads unavailable): encoding on the event loop is worse than in a thread, but speech still plays.
import type { Worker } from 'node:worker_threads';
import { startWorkerThread, stopWorkerThread } from '../../common/workerThread.js';
import { SpeechFrameEncoder } from './speechFrameEncoder.js';

// nice 19: the thread encodes ahead of playback (a bounded lead), so it can live on whatever CPU the event loop
// leaves; at nice 5 its slices still delayed the 20 ms pacer on a busy core (measured: late frames from 12 calls).
export const ENCODER_THREAD_NICE = 19;

export interface EncodedBatch {
  /** the utterance number given to write() */
  gen: number;
  packets: Buffer[];
  /** source samples this batch accounts for */
  consumed: number;
  /** the utterance's last batch */
  last: boolean;
}

export interface SpeechEncoderChannel {
  /** Queues audio of utterance `gen` (mono s16 at `rate`); `last` ends the utterance (tail padded to a frame). */
  write(gen: number, rate: number, pcm: Int16Array, last: boolean): void;
  close(): void;
}

export interface SpeechEncoderSink {
  delivered(batch: EncodedBatch): void;
  /** audio written before this point will not be delivered (encoder thread crashed, or bad input) */
  lost(gen: number, consumed: number, last: boolean): void;
}

export interface SpeechEncoder {
  open(sink: SpeechEncoderSink): SpeechEncoderChannel;
  close(): Promise<void>;
}

export class InlineSpeechEncoder implements SpeechEncoder {
  open(sink: SpeechEncoderSink): SpeechEncoderChannel {
    const enc = new SpeechFrameEncoder();
    return {
      write(gen, rate, pcm, last) {
        let packets: Buffer[];
        try {
          packets = enc.encode(gen, rate, pcm, last);
        } catch {
          sink.lost(gen, pcm.length, last);
          return;
        }
        sink.delivered({ gen, packets, consumed: pcm.length, last });
      },
      close() {},
    };
  }

  async close(): Promise<void> {}
}

interface WorkerReply {
  type: 'ready' | 'packets' | 'error';
  ch: number;
  gen: number;
  consumed: number;
  last: boolean;
  data?: Uint8Array;
  sizes?: Uint16Array;
}

export class ThreadSpeechEncoder implements SpeechEncoder {
  /** @param entryName the worker's entry file next to this module (another name only to test a missing file) */
  constructor(private readonly entryName = 'speechEncoderWorker') {}

  private worker: Worker | undefined;
  private readonly sinks = new Map<number, SpeechEncoderSink>();
  /** per channel: writes sent to the current worker and not answered yet, to report them lost on a crash */
  private readonly inFlight = new Map<number, { gen: number; consumed: number; last: boolean }[]>();
  private nextId = 1;
  private closed = false;
  private everReady = false;
  /** the current worker has posted 'ready' (its set-up, native libraries included, is done) or is gone */
  private workerReady: Promise<void> = Promise.resolve();
  private inline: Map<number, SpeechEncoderChannel> | undefined;
  /** worker threads started (1 + restarts), for diagnostics and tests */
  starts = 0;

  open(sink: SpeechEncoderSink): SpeechEncoderChannel {
    const ch = this.nextId++;
    this.sinks.set(ch, sink);
    this.inFlight.set(ch, []);
    return {
      write: (gen, rate, pcm, last) => {
        if (this.closed) return sink.lost(gen, pcm.length, last);
        if (this.inline) {
          let c = this.inline.get(ch);
          if (!c) this.inline.set(ch, (c = new InlineSpeechEncoder().open(sink)));
          return c.write(gen, rate, pcm, last);
        }
        this.inFlight.get(ch)?.push({ gen, consumed: pcm.length, last });
        this.ensureWorker().postMessage({ type: 'audio', ch, gen, rate, pcm, last });
      },
      close: () => {
        this.inline?.delete(ch);
        this.sinks.delete(ch);
        this.inFlight.delete(ch);
        this.worker?.postMessage({ type: 'close', ch });
      },
    };
  }

  /** true once the encoder thread could not start and encoding runs on the event loop instead */
  get inlineFallback(): boolean {
    return this.inline !== undefined;
  }

  /** The worker's thread id (for fault-injection tests); undefined before the first write. */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** Makes the worker thread die of an uncaught exception, as a bug in it would (fault-injection tests). */
  async crashForTest(): Promise<void> {
    const w = this.worker;
    if (!w) return;
    const exited = new Promise((r) => w.once('exit', r));
    w.postMessage({ type: 'crash' });
    await exited;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    if (!w) return;
    // asked to exit between two messages: terminate() during a native Opus call can abort the process
    await stopWorkerThread(w, { ready: this.workerReady, graceMs: 2000 });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = startWorkerThread(import.meta.url, this.entryName);
    this.starts++;
    w.unref(); // an idle encoder thread must not keep the process alive
    let markReady!: () => void;
    this.workerReady = new Promise<void>((r) => (markReady = r));
    w.on('message', (m: WorkerReply) => {
      if (m.type === 'ready') {
        this.everReady = true;
        markReady();
        return;
      }
      const sink = this.sinks.get(m.ch);
      this.inFlight.get(m.ch)?.shift();
      if (!sink) return;
      if (m.type === 'error') return sink.lost(m.gen, m.consumed, m.last);
      const packets: Buffer[] = [];
      let off = 0;
      for (const size of m.sizes!) {
        packets.push(Buffer.from(m.data!.buffer, m.data!.byteOffset + off, size));
        off += size;
      }
      sink.delivered({ gen: m.gen, packets, consumed: m.consumed, last: m.last });
    });
    const gone = (): void => {
      markReady();
      if (this.worker !== w) return;
      this.worker = undefined;
      if (!this.everReady && !this.closed) this.inline = new Map();
      // everything in flight died with the thread: tell each channel, so no utterance waits for it forever
      for (const [ch, pending] of this.inFlight) {
        const sink = this.sinks.get(ch);
        for (const p of pending.splice(0)) sink?.lost(p.gen, p.consumed, p.last);
      }
    };
    w.on('error', gone);
    w.on('exit', gone);
    this.worker = w;
    return w;
  }
}
