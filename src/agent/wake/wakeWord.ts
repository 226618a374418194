// The local wake word engine's contract: the listening state machine feeds it microphone frames and opens the
// microphone onto the call only after onWake. The implementation runs pocketsphinx keyphrase spotting off the
// event loop (see pocketsphinxWake.ts).
import type { Logger } from '../../common/logger.js';

export interface WakeEvent {
  phrase: string;
  /** hrtime ns at which the wake phrase ended (mic timeline) */
  endedAtNs: bigint;
  score?: number;
}

export interface WakeWordEngine {
  /** 20 ms mono s16 48 kHz microphone frames with their capture time (hrtime ns of the frame's last sample, as the
   *  capture backends stamp it); must return at once (never blocks the event loop: the decode runs off the hot
   *  path, in a worker thread). The frame is copied: the caller may reuse its buffer. */
  feed(pcm48k: Int16Array, capturedAtNs: bigint): void;
  onWake(listener: (e: WakeEvent) => void): void;
  close(): Promise<void>;
}

export interface WakeWordOptions {
  phrase: string;
  /** 0..1, higher = more accepts */
  sensitivity: number;
}

export async function openWakeWordEngine(o: WakeWordOptions & { logger: Logger }): Promise<WakeWordEngine> {
  const { openPocketsphinxWake } = await import('./pocketsphinxWake.js');
  return openPocketsphinxWake(o);
}

/** Chosen on the tuning part of the wake test set (test/support/wakeCorpus.ts; held-out figures:
 *  bench/wake-word.bench.ts): "hey computer" made no false accept in 1.5 h where "computer" made 12 an hour. */
export const DEFAULT_WAKE_PHRASE = 'hey computer';
/** see sensitivityToSearch (pocketsphinxWake.ts) */
export const DEFAULT_WAKE_SENSITIVITY = 0.5;
