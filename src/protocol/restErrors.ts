// Every error code of the REST routes (/v1/app/*) with its HTTP status, in one registry (spec section 7):
// body {detail:{error, code}}. Statuses the spec states are kept; the others are our documented choice.
import { CodedError } from '../common/errors.js';

export interface RestErrorDef {
  status: number;
  /** true when the spec itself states the status */
  specified?: boolean;
  when: string;
}

export const REST_ERRORS = {
  // Device authentication (same rules as the realtime routes, REST error shape).
  MISSING_HEADER: { status: 400, when: 'a required device header is absent' },
  INVALID_CLIENT_ID: { status: 401, when: 'X-Client-Id is not a UUID' },
  INVALID_CLIENT_SECRET: { status: 400, when: 'X-Client-Secret is shorter than 32 characters' },
  INVALID_WORKSPACE_KEY: { status: 401, when: 'X-Workspace-Key matches no workspace' },
  SECRET_MISMATCH: { status: 401, when: 'the client is enrolled with another secret' },
  CLIENT_NOT_FOUND: { status: 404, when: 'closed enrollment and unknown client' },
  CLIENT_NOT_ACTIVATED: { status: 404, when: 'the client was disabled by an administrator' },
  // Request format.
  INVALID_REQUEST: { status: 400, when: 'malformed JSON, wrong field types, speed/stability out of bounds' },
  UNSUPPORTED_CONTENT_TYPE: { status: 415, when: 'a JSON route called without application/json, or clone without multipart' },
  PAYLOAD_TOO_LARGE: { status: 413, when: 'an upload or body larger than the configured limit' },
  NOT_FOUND: { status: 404, when: 'no such route' },
  INVALID_MULTIPART: { status: 400, when: 'a multipart body that cannot be parsed: no or an invalid boundary, a truncated body' },
  REQUEST_TIMEOUT: { status: 408, when: 'the request did not arrive whole in time' },
  HEADERS_TOO_LARGE: { status: 431, when: 'request headers larger than 16 KiB' },
  // voices/clone
  EMPTY_AUDIO: { status: 400, when: 'audio_file is missing or empty' },
  AUDIO_TOO_SHORT: { status: 400, when: 'the converted audio lasts less than 10 s' },
  AUDIO_TOO_LONG: { status: 400, when: 'the converted audio lasts more than 30 s' },
  INVALID_AUDIO: { status: 400, when: 'audio_file is not audio ffmpeg can decode' },
  TRANSCRIPTION_FAILED: { status: 422, when: 'no speech could be recognised in the sample' },
  STORAGE_ERROR: { status: 500, when: 'the audio could not be stored' },
  // voices/design
  MISSING_DESIGN_PROMPT: { status: 400, when: 'design_prompt is absent or empty' },
  DESIGN_FAILED: { status: 422, when: 'the description could not be turned into a voice' },
  // text-to-speech with-timestamps
  TEXT_TOO_LONG: { status: 400, when: 'text longer than 15,000 characters' },
  EMPTY_TEXT: { status: 400, when: 'text empty or only white space' },
  INVALID_VOICE_ID: { status: 400, when: 'voice_id is not a UUID' },
  VOICE_NOT_FOUND: { status: 404, when: 'no voice with that id in the workspace' },
  VOICE_NOT_AVAILABLE: { status: 403, specified: true, when: 'the voice exists but is another client\'s clone (403); on stories/{slug}/read, the workspace has no voice (400)' },
  ADAPTER_SYNC_FAILED: { status: 502, when: 'the TTS adapter refused or failed to register the voice profile' },
  ADAPTER_NOT_CONFIGURED: { status: 503, when: 'the configured TTS adapter is missing its endpoint' },
  TTS_FAILED: { status: 500, when: 'the synthesiser failed' },
  // stories
  STORY_NOT_FOUND: { status: 404, specified: true, when: 'no slugged story with that slug in the caller\'s workspace' },
  // signed audio URLs
  URL_EXPIRED: { status: 403, when: 'a signed audio URL past its expiry' },
  INVALID_SIGNATURE: { status: 403, when: 'a signed audio URL whose signature does not match' },
  INTERNAL_ERROR: { status: 500, when: 'an unexpected fault on the server' },
} as const satisfies Record<string, RestErrorDef>;

export type RestErrorCode = keyof typeof REST_ERRORS;

export interface RestErrorBody {
  detail: { error: string; code: string };
}

/** The codes that refuse the device itself rather than the request (with 404; any 401 does too). */
export const CLIENT_REJECTED_CODES: readonly string[] = ['CLIENT_NOT_FOUND', 'CLIENT_NOT_ACTIVATED'] satisfies RestErrorCode[];

/** Reads a REST error body defensively (a proxy may answer with anything): the fields that are strings. */
export function parseRestErrorBody(value: unknown): { error?: string; code?: string } | undefined {
  const d = (value as { detail?: unknown } | null | undefined)?.detail as Record<string, unknown> | undefined;
  if (!d || typeof d !== 'object') return undefined;
  return {
    ...(typeof d.error === 'string' ? { error: d.error } : {}),
    ...(typeof d.code === 'string' ? { code: d.code } : {}),
  };
}

/** A REST failure with its code; the server turns it into {detail:{error, code}} and the code's status. */
export class RestError extends CodedError<RestErrorCode> {
  override name = 'RestError';
  readonly status: number;
  constructor(code: RestErrorCode, message: string, opts?: { status?: number; cause?: unknown }) {
    super(code, message, opts);
    this.status = opts?.status ?? REST_ERRORS[code].status;
  }
  toBody(): RestErrorBody {
    return { detail: { error: this.message, code: this.code } };
  }
}
