// Server -> client events on the `oai-events` data channel, in the widely used realtime protocol's format.
// Ids are short and per call; the assistant transcript event names follow the configured family
// (spec section 6: 'ga' = response.output_audio_transcript.*, 'legacy' = response.audio_transcript.*).
import { randomBytes } from 'node:crypto';
import type { ServerEvent } from '../../protocol/events.js';
import type { ClientEventErrorCode } from '../../protocol/realtimeErrors.js';

export type TranscriptFamily = 'ga' | 'legacy';

type Distribute<T> = T extends unknown ? Omit<T, 'event_id'> : never;
export type OutgoingEvent = Distribute<ServerEvent>;

export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}

export class EventWriter {
  private seq = 0;
  private readonly prefix = randomBytes(4).toString('hex');

  constructor(
    private readonly send: (json: string) => void,
    readonly family: TranscriptFamily,
  ) {}

  emit(event: OutgoingEvent): void {
    this.send(JSON.stringify({ event_id: `event_${this.prefix}${(this.seq++).toString(36)}`, ...event }));
  }

  // A reply is one item with one audio part: output_index and content_index are 0 (the JavaScript SDK drops
  // transcript events without them).
  transcriptDelta(responseId: string, itemId: string, delta: string): void {
    const type = this.family === 'ga' ? 'response.output_audio_transcript.delta' : 'response.audio_transcript.delta';
    this.emit({ type, response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, delta });
  }

  transcriptDone(responseId: string, itemId: string, transcript: string): void {
    const type = this.family === 'ga' ? 'response.output_audio_transcript.done' : 'response.audio_transcript.done';
    this.emit({ type, response_id: responseId, item_id: itemId, output_index: 0, content_index: 0, transcript });
  }

  error(code: ClientEventErrorCode, message: string, clientEventId?: string): void {
    this.emit({ type: 'error', error: { type: 'invalid_request_error', code, message, event_id: clientEventId ?? null } });
  }
}
