// The wake word engine's types and their checks (wakeWord.ts re-exports them: it is what the rest of the agent
// imports).
import { AgentError } from '../errors.js';
export interface WakeEvent {
  phrase: string;
  /** hrtime ns at which the wake phrase ended (mic timeline) */
  endedAtNs: bigint;
  score?: number;
  /** capture time (mic timeline) of the last sample the engine had heard when it decided: what it waited for
   *  after the end (latency breakdown, bench/listening.bench.ts) */
  decidedOnNs?: bigint;
}

export interface WakeWordEngine {
  /** 20 ms mono s16 48 kHz microphone frames with their capture time (hrtime ns of the frame's last sample, as the
   *  capture backends stamp it); must return at once (never blocks the event loop: the decode runs off the hot
   *  path, in a worker thread). The frame is copied: the caller may reuse its buffer. */
  feed(pcm48k: Int16Array, capturedAtNs: bigint): void;
  onWake(listener: (e: WakeEvent) => void): void;
  /** Called once when the engine stops working on its own (its thread crashed), not after close(). */
  onFailure?(listener: (err: Error) => void): void;
  close(): Promise<void>;
}

export interface WakeWordOptions {
  phrase: string;
  /** 0..1, higher = more accepts */
  sensitivity: number;
  /** Fed live (the agent): audio is dropped while the engine is further behind than this (ms; wakeThread.ts).
   *  Unset: every frame is spotted however far behind, for audio fed faster than real time (tests, benchmarks,
   *  the doctor's synthetic voice). */
  maxBacklogMs?: number;
  /** how long its thread may take to start (ms; default WAKE_START_TIMEOUT_MS, wakeThread.ts) */
  startTimeoutMs?: number;
}

export function checkSensitivity(sensitivity: unknown): void {
  if (typeof sensitivity !== 'number' || !(sensitivity >= 0 && sensitivity <= 1)) {
    throw new AgentError('config_invalid', `wake word sensitivity must be a number from 0 to 1, got ${String(sensitivity)}`);
  }
}
