// Data-channel events (spec section 6), declared once as schemas. Both sides parse with these; nothing that
// arrives on the wire is trusted: parse functions never throw and say why a message was refused.
import * as z from '../common/zodMini.js';

/** The data channel label of the widely used realtime protocol. */
export const DATA_CHANNEL_LABEL = 'oai-events';

const base = { event_id: z.optional(z.string()) };

// ---- server -> client --------------------------------------------------------------------------------------

export const FunctionCallItem = z.object({
  type: z.literal('function_call'),
  id: z.string(),
  call_id: z.nonEmpty(),
  name: z.nonEmpty(),
  arguments: z.string(),
  status: z.optional(z.string()),
});
export type FunctionCallItem = z.infer<typeof FunctionCallItem>;

const MessageItem = z.looseObject({ type: z.literal('message'), id: z.optional(z.string()) });

export const ServerEvent = z.discriminatedUnion('type', [
  // GA sessions (POST /v1/realtime/calls) may carry no id
  z.object({ ...base, type: z.literal('session.created'), session: z.looseObject({ id: z.optional(z.string()) }) }),
  z.object({ ...base, type: z.literal('session.updated'), session: z.looseObject({}) }),
  // where a service sends them (WebRTC realtime services, the companion's GA calls): its outgoing audio started,
  // played out, or was dropped (response.cancel, barge-in); the agent's listening state follows them
  z.object({ ...base, type: z.literal('output_audio_buffer.started'), response_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('output_audio_buffer.stopped'), response_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('output_audio_buffer.cleared'), response_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('conversation.item.retrieved'), item: z.looseObject({ id: z.string() }) }),
  z.object({ ...base, type: z.literal('input_audio_buffer.speech_started'), audio_start_ms: z.optional(z.number()), item_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('input_audio_buffer.speech_stopped'), audio_end_ms: z.optional(z.number()), item_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('conversation.item.input_audio_transcription.completed'), item_id: z.optional(z.string()), content_index: z.optional(z.number()), transcript: z.string() }),
  z.object({ ...base, type: z.literal('response.created'), response: z.looseObject({ id: z.string() }) }),
  // GA family
  z.object({ ...base, type: z.literal('response.output_audio_transcript.delta'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), delta: z.string() }),
  z.object({ ...base, type: z.literal('response.output_audio_transcript.done'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), transcript: z.string() }),
  // legacy family (custom-pipeline assistants)
  z.object({ ...base, type: z.literal('response.audio_transcript.delta'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), delta: z.string() }),
  z.object({ ...base, type: z.literal('response.audio_transcript.done'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), transcript: z.string() }),
  z.object({ ...base, type: z.literal('response.output_item.done'), response_id: z.optional(z.string()), output_index: z.optional(z.number()), item: z.union([FunctionCallItem, MessageItem]) }),
  z.object({ ...base, type: z.literal('response.done'), response: z.looseObject({ id: z.string(), status: z.optional(z.string()) }) }),
  z.object({ ...base, type: z.literal('error'), error: z.looseObject({ type: z.optional(z.string()), code: z.nullish(z.string()), message: z.string(), event_id: z.nullish(z.string()) }) }),
]);
export type ServerEvent = z.infer<typeof ServerEvent>;
export type ServerEventType = ServerEvent['type'];
export type ServerEventOf<T extends ServerEventType> = Extract<ServerEvent, { type: T }>;

// ---- client -> server --------------------------------------------------------------------------------------

export const FunctionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  call_id: z.nonEmpty(),
  output: z.string(),
});

export const ClientEvent = z.discriminatedUnion('type', [
  z.object({ ...base, type: z.literal('conversation.item.create'), item: FunctionCallOutputItem }),
  z.object({ ...base, type: z.literal('response.create'), response: z.optional(z.looseObject({})) }),
  z.object({ ...base, type: z.literal('response.cancel') }),
  z.object({ ...base, type: z.literal('input_audio_buffer.clear') }),
  z.object({ ...base, type: z.literal('session.update'), session: z.looseObject({}) }),
  // GA clients (the JavaScript SDK) fetch a user item to read its transcript
  z.object({ ...base, type: z.literal('conversation.item.retrieve'), item_id: z.nonEmpty() }),
]);
export type ClientEvent = z.infer<typeof ClientEvent>;

// ---- parsing -----------------------------------------------------------------------------------------------

export type ParseResult<E> =
  | { ok: true; event: E }
  /** `unknown`: well-formed JSON with a type we do not handle; `invalid`: anything else. */
  | { ok: false; kind: 'invalid' | 'unknown'; type?: string; reason: string };

function parseWith<E>(schema: z.ZodMiniType<E>, known: ReadonlySet<string>, raw: unknown): ParseResult<E> {
  let value: unknown = raw;
  if (typeof raw === 'string' || Buffer.isBuffer(raw)) {
    try {
      value = JSON.parse(raw.toString());
    } catch {
      return { ok: false, kind: 'invalid', reason: 'not valid JSON' };
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, kind: 'invalid', reason: 'not a JSON object' };
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') return { ok: false, kind: 'invalid', reason: 'missing "type"' };
  if (!known.has(type)) return { ok: false, kind: 'unknown', type, reason: `unknown event type "${type}"` };
  const r = schema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'event';
    return { ok: false, kind: 'invalid', type, reason: `${type}: ${where}: ${issue?.message ?? 'invalid'}` };
  }
  return { ok: true, event: r.data };
}

/** The `type` literals of a union's options: every option is an object whose `type` is a literal. */
function typesOf(schema: z.ZodMiniDiscriminatedUnion<readonly z.ZodMiniObject<{ type: z.ZodMiniLiteral<string> }>[]>): Set<string> {
  return new Set(schema.def.options.flatMap((o) => o.def.shape.type.def.values.map(String)));
}

const SERVER_TYPES = typesOf(ServerEvent);
const CLIENT_TYPES = typesOf(ClientEvent);

export function parseServerEvent(raw: unknown): ParseResult<ServerEvent> {
  return parseWith(ServerEvent as z.ZodMiniType<ServerEvent>, SERVER_TYPES, raw);
}

export function parseClientEvent(raw: unknown): ParseResult<ClientEvent> {
  return parseWith(ClientEvent as z.ZodMiniType<ClientEvent>, CLIENT_TYPES, raw);
}

/** Both transcript families, mapped to one role so clients handle them alike. */
export function assistantTranscriptOf(
  e: ServerEvent,
): { phase: 'delta'; text: string } | { phase: 'done'; text: string } | undefined {
  switch (e.type) {
    case 'response.output_audio_transcript.delta':
    case 'response.audio_transcript.delta':
      return { phase: 'delta', text: e.delta };
    case 'response.output_audio_transcript.done':
    case 'response.audio_transcript.done':
      return { phase: 'done', text: e.transcript };
    default:
      return undefined;
  }
}
