// The local wake word engine's contract: the listening state machine feeds it microphone frames and opens the
// microphone onto the call only after onWake. Two engines, each in the wake thread (wakeThread.ts):
// - openwakeword (openWakeWord.ts): small neural models on ONNX Runtime; the default, for the phrases it has a
//   model for (the built-in ones, or listening.wakeModel);
// - pocketsphinx (pocketsphinxWake.ts): keyphrase search, any phrase of dictionary words, weak in noise.
// listening.wakeEngine auto picks openwakeword when the phrase has a model and ONNX Runtime loads here, else
// pocketsphinx, and says why in the log.
import type { Logger } from '../../common/logger.js';
import { AgentError } from '../errors.js';
import { BUILT_IN_PHRASES, disableOnnxTelemetry, normalisePhrase, phraseModelFor, sensitivityToThreshold } from './openWakeWord.js';
import { checkSensitivity, type WakeWordEngine, type WakeWordOptions } from './wakeEngine.js';
import { startWakeThread } from './wakeThread.js';

export { WAKE_START_TIMEOUT_MS } from './wakeThread.js';

// loaded only when used: it loads koffi and pocketsphinx (settings import this module for its defaults)
const openPocketsphinxWake = async (o: OpenWakeOptions) => (await import('./pocketsphinxWake.js')).openPocketsphinxWake(o);

export type { WakeEvent, WakeWordEngine, WakeWordOptions } from './wakeEngine.js';

export const WAKE_ENGINES = ['auto', 'openwakeword', 'pocketsphinx'] as const;
export type WakeEngineChoice = (typeof WAKE_ENGINES)[number];

export interface OpenWakeOptions extends WakeWordOptions {
  logger: Logger;
  engine?: WakeEngineChoice;
  /** an openWakeWord phrase model (.onnx) for the phrase */
  model?: string;
}

export async function openWakeWordEngine(o: OpenWakeOptions): Promise<WakeWordEngine & { engine: string }> {
  checkSensitivity(o.sensitivity);
  const choice = o.engine ?? 'auto';
  const model = phraseModelFor(String(o.phrase ?? ''), o.model);
  if (choice === 'pocketsphinx') return openPocketsphinxWake(o);
  if (!model) {
    if (choice === 'openwakeword') {
      throw new AgentError('config_invalid', `wake phrase "${o.phrase}" has no openWakeWord model: built in are ${Object.keys(BUILT_IN_PHRASES).map((p) => `"${p}"`).join(', ')}; train one and set listening.wakeModel, or use listening.wakeEngine: pocketsphinx`);
    }
    o.logger.info({ phrase: o.phrase }, 'wake word: no openWakeWord model for this phrase, using pocketsphinx (weaker in noise)');
    return openPocketsphinxWake(o);
  }
  disableOnnxTelemetry(); // in this thread's environment, before the wake thread loads ONNX Runtime
  const spotter = { kind: 'openwakeword' as const, phrase: normalisePhrase(o.phrase), model, threshold: sensitivityToThreshold(o.sensitivity) };
  try {
    return await startWakeThread(spotter, { logger: o.logger, engine: 'openwakeword', maxBacklogMs: o.maxBacklogMs, startTimeoutMs: o.startTimeoutMs });
  } catch (err) {
    if (choice === 'openwakeword' || (err as AgentError).code === 'config_invalid') throw err;
    o.logger.warn({ err: (err as Error).message }, 'wake word: openWakeWord cannot run here, using pocketsphinx (weaker in noise)');
    return openPocketsphinxWake(o);
  }
}

/** The default phrase has a built-in openWakeWord model: at sensitivity 0.5 "hey jarvis" was accepted 95 % at
 *  10 dB SNR with no false accept in 1.33 h of the tuning set (held-out figures: bench/wake-word.bench.ts). */
export const DEFAULT_WAKE_PHRASE = 'hey jarvis';
/** see sensitivityToThreshold (openWakeWord.ts) and sensitivityToSearch (pocketsphinxWake.ts) */
export const DEFAULT_WAKE_SENSITIVITY = 0.5;
