// The one error type of the speech engines: a machine-readable code (aligned with the REST error codes where
// one exists) plus the underlying cause, so callers map it to their own error shape without parsing messages.
import { CodedError } from '../../common/errors.js';

export type SpeechErrorCode =
  | 'TTS_FAILED' // the synthesiser failed or its worker crashed
  | 'ABORTED' // the caller aborted the request through its AbortSignal
  | 'INVALID_AUDIO' // ffmpeg could not decode the input
  | 'EMPTY_AUDIO' // zero-length input or zero decoded samples
  | 'ENCODE_FAILED' // ffmpeg could not encode (MP3)
  | 'DESIGN_FAILED' // a voice description could not be turned into a voice
  | 'RECOGNIZER_FAILED' // pocketsphinx could not be loaded or failed while decoding
  | 'INVALID_ARGUMENT'; // a caller passed a value outside the documented range

export class SpeechError extends CodedError<SpeechErrorCode> {
  override name = 'SpeechError';
}

export function isSpeechError(err: unknown, code?: SpeechErrorCode): err is SpeechError {
  return err instanceof SpeechError && (code === undefined || err.code === code);
}
