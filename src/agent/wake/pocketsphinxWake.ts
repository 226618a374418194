// The pocketsphinx wake word engine: keyphrase spotting (keyphraseSpotter.ts) in the wake thread (wakeThread.ts).
// Any phrase of dictionary words; much weaker than openWakeWord in noise (README, Listening), so it is the engine
// for phrases without an openWakeWord model and for boards ONNX Runtime has no build for (armhf).
// Sensitivity 0..1 maps to pocketsphinx's search settings (sensitivityToSearch), chosen on the tuning part of the
// wake test set (test/support/wakeCorpus.ts, bench/wake-word.bench.ts).
import type { Logger } from '../../common/logger.js';
import { AgentError } from '../errors.js';
import { phraseDictionary, phraseWords } from './keyphraseSpotter.js';
import { checkSensitivity, type WakeWordOptions } from './wakeEngine.js';
import { startWakeThread, type WakeThread } from './wakeThread.js';

/** The search settings for a sensitivity. Measured on the tuning set: at pocketsphinx's own phone-loop probability
 *  (-kws_plp 0.1), lowering -kws_threshold below 1e-20 adds few accepts in noise, while lowering -kws_plp moves
 *  the accept rate at 10 dB SNR from 13 % (0.1) to ~88 % (1e-10), and false accepts from 0 to ~200 an hour. So the
 *  lower half of the scale raises the threshold (1 at 0 -> 1e-20 at 0.5, fewer accepts) and the upper half lowers
 *  the phone-loop probability (0.1 at 0.5 -> 1e-10 at 1). The default, 0.5, is the most accepting setting that
 *  made no false accept in the 1.5 h of tuning non-wake audio. */
export function sensitivityToSearch(sensitivity: number): { threshold: number; phoneLoopProb: number } {
  if (sensitivity <= 0.5) return { threshold: 10 ** (-40 * sensitivity), phoneLoopProb: 0.1 };
  return { threshold: 1e-20, phoneLoopProb: 10 ** (-1 - 18 * (sensitivity - 0.5)) };
}

export async function openPocketsphinxWake(o: WakeWordOptions & { logger: Logger; modelDir?: string }): Promise<WakeThread> {
  checkSensitivity(o.sensitivity);
  // checked here too, so a bad phrase fails before a thread is started
  const words = phraseWords(String(o.phrase ?? ''));
  if (words.length === 0) throw new AgentError('config_invalid', 'wake phrase is empty');
  phraseDictionary(words, o.modelDir);
  return startWakeThread({ kind: 'pocketsphinx', phrase: words.join(' '), ...sensitivityToSearch(o.sensitivity), modelDir: o.modelDir }, { logger: o.logger, engine: 'pocketsphinx', maxBacklogMs: o.maxBacklogMs, startTimeoutMs: o.startTimeoutMs });
}
