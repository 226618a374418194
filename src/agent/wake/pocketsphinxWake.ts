// Placeholder until the pocketsphinx keyphrase spotter lands (same branch, next commit).
import type { Logger } from '../../common/logger.js';
import { AgentError } from '../errors.js';
import type { WakeWordEngine, WakeWordOptions } from './wakeWord.js';

export async function openPocketsphinxWake(_o: WakeWordOptions & { logger: Logger }): Promise<WakeWordEngine> {
  throw new AgentError('internal', 'wake word engine: not implemented yet');
}
