// The local wake word engine's contract: the listening state machine feeds it microphone frames and opens the
// microphone onto the call only after onWake. The implementation runs pocketsphinx keyphrase spotting off the
// event loop (see pocketsphinxWake.ts).
import type { Logger } from '../../common/logger.js';

export type { WakeEvent, WakeWordEngine, WakeWordOptions } from './wakeEngine.js';
import type { WakeWordEngine, WakeWordOptions } from './wakeEngine.js';

export async function openWakeWordEngine(o: WakeWordOptions & { logger: Logger }): Promise<WakeWordEngine> {
  const { openPocketsphinxWake } = await import('./pocketsphinxWake.js');
  return openPocketsphinxWake(o);
}

/** Chosen on the tuning part of the wake test set (test/support/wakeCorpus.ts; held-out figures:
 *  bench/wake-word.bench.ts), at sensitivity 0.5: "hey computer" accepted 13 % at 10 dB SNR with no false accept in
 *  1.52 h; "hello computer" 15 % with 1 (0.66/h); "computer" 32 % with 17 in 1.30 h (13/h). */
export const DEFAULT_WAKE_PHRASE = 'hey computer';
/** see sensitivityToSearch (pocketsphinxWake.ts) */
export const DEFAULT_WAKE_SENSITIVITY = 0.5;
