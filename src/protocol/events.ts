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
/** Any conversation item (message, function_call, function_call_output), as the GA item events carry it. */
const ConversationItem = z.looseObject({ id: z.string(), type: z.string() });
/** Where a part of a response is: GA clients (the JavaScript SDK) require all four on content and transcript events. */
const partRef = { response_id: z.string(), item_id: z.string(), output_index: z.number(), content_index: z.number() };
const ContentPart = z.looseObject({ type: z.string() });

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
  // GA family (the spec lists only delta; output_index/content_index are the public protocol's, optional here)
  z.object({ ...base, type: z.literal('response.output_audio_transcript.delta'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), output_index: z.optional(z.number()), content_index: z.optional(z.number()), delta: z.string() }),
  z.object({ ...base, type: z.literal('response.output_audio_transcript.done'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), output_index: z.optional(z.number()), content_index: z.optional(z.number()), transcript: z.string() }),
  // legacy family (custom-pipeline assistants)
  z.object({ ...base, type: z.literal('response.audio_transcript.delta'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), output_index: z.optional(z.number()), content_index: z.optional(z.number()), delta: z.string() }),
  z.object({ ...base, type: z.literal('response.audio_transcript.done'), response_id: z.optional(z.string()), item_id: z.optional(z.string()), output_index: z.optional(z.number()), content_index: z.optional(z.number()), transcript: z.string() }),
  z.object({ ...base, type: z.literal('response.output_item.done'), response_id: z.optional(z.string()), output_index: z.optional(z.number()), item: z.union([FunctionCallItem, MessageItem]) }),
  // the GA lifecycle of items, parts and the input buffer (the companion's GA calls; the device ignores them)
  z.object({ ...base, type: z.literal('response.output_item.added'), response_id: z.optional(z.string()), output_index: z.optional(z.number()), item: z.union([FunctionCallItem, MessageItem]) }),
  z.object({ ...base, type: z.literal('response.content_part.added'), ...partRef, part: ContentPart }),
  z.object({ ...base, type: z.literal('response.content_part.done'), ...partRef, part: ContentPart }),
  z.object({ ...base, type: z.literal('response.output_audio.done'), ...partRef }),
  z.object({ ...base, type: z.literal('response.function_call_arguments.done'), response_id: z.string(), item_id: z.string(), output_index: z.number(), call_id: z.string(), arguments: z.string() }),
  z.object({ ...base, type: z.literal('conversation.item.added'), previous_item_id: z.nullish(z.string()), item: ConversationItem }),
  z.object({ ...base, type: z.literal('conversation.item.done'), previous_item_id: z.nullish(z.string()), item: ConversationItem }),
  z.object({ ...base, type: z.literal('conversation.item.truncated'), item_id: z.string(), content_index: z.number(), audio_end_ms: z.number() }),
  z.object({ ...base, type: z.literal('conversation.item.deleted'), item_id: z.string() }),
  z.object({ ...base, type: z.literal('input_audio_buffer.committed'), item_id: z.string(), previous_item_id: z.nullish(z.string()) }),
  z.object({ ...base, type: z.literal('input_audio_buffer.cleared') }),
  z.object({ ...base, type: z.literal('response.done'), response: z.looseObject({ id: z.string(), status: z.optional(z.string()) }) }),
  z.object({ ...base, type: z.literal('error'), error: z.looseObject({ type: z.optional(z.string()), code: z.nullish(z.string()), message: z.string(), event_id: z.nullish(z.string()) }) }),
]);
export type ServerEvent = z.infer<typeof ServerEvent>;
export type ServerEventType = ServerEvent['type'];
export type ServerEventOf<T extends ServerEventType> = Extract<ServerEvent, { type: T }>;

// ---- client -> server --------------------------------------------------------------------------------------

export const FunctionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  id: z.optional(z.nonEmpty()),
  call_id: z.nonEmpty(),
  output: z.string(),
});

/** A message a GA client adds to the conversation (typed text: the SDK's sendMessage). The spec's route takes
 *  function_call_output items only (spec section 6) and refuses it. */
export const MessageInputItem = z.looseObject({
  type: z.literal('message'),
  id: z.optional(z.nonEmpty()),
  role: z.enum(['user', 'assistant', 'system']),
  content: z.array(z.looseObject({ type: z.string(), text: z.optional(z.string()) })),
});

export const ClientEvent = z.discriminatedUnion('type', [
  z.object({ ...base, type: z.literal('conversation.item.create'), previous_item_id: z.nullish(z.string()), item: z.discriminatedUnion('type', [FunctionCallOutputItem, MessageInputItem]) }),
  z.object({ ...base, type: z.literal('response.create'), response: z.optional(z.looseObject({})) }),
  z.object({ ...base, type: z.literal('response.cancel'), response_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('input_audio_buffer.clear') }),
  // the public protocol's ordinary client events (the spec names none of them): end the user's turn now, drop the
  // assistant's audio (the JavaScript SDK's WebRTC interrupt() sends it), shorten or remove an item
  z.object({ ...base, type: z.literal('input_audio_buffer.commit') }),
  z.object({ ...base, type: z.literal('output_audio_buffer.clear'), response_id: z.optional(z.string()) }),
  z.object({ ...base, type: z.literal('conversation.item.truncate'), item_id: z.nonEmpty(), content_index: z.number(), audio_end_ms: z.number().check(z.nonnegative()) }),
  z.object({ ...base, type: z.literal('conversation.item.delete'), item_id: z.nonEmpty() }),
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
