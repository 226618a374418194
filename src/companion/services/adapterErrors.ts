// TTS adapter and speech-engine failures as REST errors (the codes of spec section 7).
import { RestError } from '../../protocol/restErrors.js';
import { isSpeechError } from '../speech/speechError.js';
import { TtsAdapterError } from '../tts/ttsAdapter.js';

export function adapterFailure(err: unknown): RestError {
  if (err instanceof RestError) return err;
  if (err instanceof TtsAdapterError) {
    switch (err.code) {
      case 'ADAPTER_NOT_CONFIGURED':
        return new RestError('ADAPTER_NOT_CONFIGURED', err.message, { cause: err });
      case 'ADAPTER_SYNC_FAILED':
        return new RestError('ADAPTER_SYNC_FAILED', err.message, { cause: err });
      case 'ABORTED':
        return new RestError('TTS_FAILED', 'synthesis was aborted', { cause: err });
      default:
        return new RestError('TTS_FAILED', 'speech synthesis failed', { cause: err });
    }
  }
  if (isSpeechError(err)) return new RestError('TTS_FAILED', 'speech synthesis failed', { cause: err });
  return new RestError('TTS_FAILED', 'speech synthesis failed', { cause: err });
}
