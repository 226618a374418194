// The conversation's events as a stock client sees them: a real Conversation (real EventWriter, rule brain, espeak-ng
// synthesis, outgoing track with its Opus encoder, played out by a fast hand-driven pacer) whose events go through
// the official SDK's own parser and transport (@openai/agents-realtime's OpenAIRealtimeBase), whose requests
// (conversation.item.retrieve, sendMessage, sendFunctionCallOutput) come back to the conversation. The user's turns
// enter as the recogniser's results (the audio pipeline is covered by realtimeCall.test.ts and gaRoutes.test.ts).
import { OpenAIRealtimeBase } from '@openai/agents-realtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/common/logger.js';
import type { ToolDefinition } from '../../../src/companion/realtime/brain.js';
import { Conversation } from '../../../src/companion/realtime/conversation.js';
import { EventWriter } from '../../../src/companion/realtime/eventWriter.js';
import { OutgoingAudio } from '../../../src/companion/realtime/outgoingAudio.js';
import { NO_DEVICE_FUNCTION_TEXT, RuleBrain } from '../../../src/companion/realtime/ruleBrain.js';
import { EspeakSynthesizer } from '../../../src/companion/speech/espeakSynthesizer.js';
import { DEVICE_FUNCTION_TOOLS } from '../../../src/protocol/functions.js';

type Wire = Record<string, any>;

interface SdkTransportApi {
  _onMessage(e: { data: string }): void;
  on(name: string, listener: (e: any) => void): void;
  sendMessage(text: string, other: Record<string, unknown>): void;
  sendFunctionCallOutput(call: Wire, output: string, startResponse?: boolean): void;
}

/** The SDK's transport base with its wire replaced: what it sends goes back to the conversation. */
class SdkTransport extends (OpenAIRealtimeBase as unknown as new () => SdkTransportApi) {
  readonly sent: Wire[] = [];
  loop: ((json: string) => void) | undefined;
  sendEvent(e: Wire): void {
    this.sent.push(e);
    const loop = this.loop;
    // later, as over a data channel: the SDK sends from inside its own event handlers
    if (loop) setImmediate(() => loop(JSON.stringify(e)));
  }
}

const SDK_EVENTS = ['audio_transcript_delta', 'audio_done', 'function_call', 'item_update', 'item_deleted', 'turn_started', 'turn_done', 'error'];
const STORY = 'Once upon a time a little kite wanted to fly higher than the birds. '.repeat(12);

let synthesizer: EspeakSynthesizer;
const live: { close: () => void }[] = [];

beforeAll(async () => {
  synthesizer = new EspeakSynthesizer({ realtimeWorkers: 1, bulkWorkers: 0 });
  await synthesizer.ready();
});
afterAll(async () => {
  for (const h of live) h.close();
  await synthesizer?.close();
});

function harness(o: { ga: boolean; tools?: ToolDefinition[] }) {
  const wire: Wire[] = [];
  const sdk = new SdkTransport();
  const seen: Record<string, Wire[]> = {};
  for (const name of SDK_EVENTS) sdk.on(name, (e) => (seen[name] ??= []).push(e ?? {}));
  let waiters: { pred: (e: Wire) => boolean; resolve: (e: Wire) => void }[] = [];
  let conv!: Conversation;
  let clears = 0;
  const events = new EventWriter((json) => {
    const e = JSON.parse(json) as Wire;
    wire.push(e);
    sdk._onMessage({ data: json });
    waiters = waiters.filter((w) => (w.pred(e) ? (w.resolve(e), false) : true));
  }, 'ga');
  const out = new OutgoingAudio(() => {}, (id) => conv.utterancePlayed(id));
  let playing = true;
  // plays 50 frames (1 s of speech) every 2 ms
  const pacer = setInterval(() => {
    if (playing) for (let i = 0; i < 50; i++) out.tick();
  }, 2);
  conv = new Conversation({
    events,
    out,
    brain: new RuleBrain({ list: () => [{ name: 'The Brave Little Kite', slug: 'kite', transcript: STORY }] }),
    synthesizer,
    voice: { language: 'en-us' },
    workspaceId: 'w',
    logger: createLogger({ level: 'silent' }),
    clearInput: () => void clears++,
    commitInput: () => false, // nothing is being said (a real commit: gaRoutes.test.ts)
    clientTools: () => o.tools ?? [],
    ga: o.ga,
  });
  sdk.loop = (json) => conv.clientMessage(json);
  let ms = 0;
  const h = {
    wire,
    sdk,
    seen,
    conv,
    get clears() {
      return clears;
    },
    types: (from = 0) => wire.slice(from).map((e) => e.type as string),
    /** the first event sent that matches (the test fails if there is none) */
    first(pred: (e: Wire) => boolean): Wire {
      const e = wire.find(pred);
      if (!e) throw new Error(`no such event; got ${h.types().join(', ')}`);
      return e;
    },
    waitFor(pred: (e: Wire) => boolean, timeoutMs = 15_000): Promise<Wire> {
      const had = wire.find(pred);
      if (had) return Promise.resolve(had);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no such event within ${timeoutMs} ms; got ${h.types().join(', ')}`)), timeoutMs);
        waiters.push({ pred, resolve: (e) => (clearTimeout(t), resolve(e)) });
      });
    },
    /** the user says `text` (as the recogniser heard it) */
    speak(text: string): void {
      conv.speechStarted((ms += 100));
      conv.speechStopped((ms += 900), Promise.resolve({ text, grammarMatch: true }));
    },
    /** the user says `text`; resolves with the response.done of the reply */
    async say(text: string): Promise<Wire> {
      const from = wire.length;
      h.speak(text);
      return h.waitFor((e) => e.type === 'response.done' && wire.indexOf(e) >= from);
    },
    send: (e: Wire) => conv.clientMessage(JSON.stringify(e)),
    hold: () => void (playing = false),
    close: () => {
      clearInterval(pacer);
      conv.close();
      out.close();
    },
  };
  live.push(h);
  return h;
}

/** The event types of one response, from its response.created on, consecutive deltas as one. */
function responseTypes(wire: Wire[], responseId: string): string[] {
  const start = wire.findIndex((e) => e.type === 'response.created' && e.response.id === responseId);
  const types: string[] = [];
  for (const e of wire.slice(start)) {
    if (e.type === types.at(-1) && e.type.endsWith('.delta')) continue;
    if (e.type === 'conversation.item.retrieved') continue; // the answer to the SDK's own request, whenever it asks
    if (e.type === 'input_audio_buffer.speech_started') break;
    types.push(e.type);
    if (e.type.startsWith('output_audio_buffer.') && e.type !== 'output_audio_buffer.started') break;
  }
  return types;
}

describe('Conversation on a GA call, through the stock SDK', () => {
  it('regression: transcript deltas lacked output_index/content_index, so the SDK never fired audio_transcript_delta', async () => {
    const h = harness({ ga: true });
    await h.say('hello');
    const deltas = h.wire.filter((e) => e.type === 'response.output_audio_transcript.delta');
    expect(deltas.length).toBeGreaterThan(0);
    for (const d of deltas) expect(d).toMatchObject({ output_index: 0, content_index: 0 });
    expect(h.wire.find((e) => e.type === 'response.output_audio_transcript.done')).toMatchObject({ output_index: 0, content_index: 0 });
    expect((h.seen.audio_transcript_delta ?? []).map((d) => d.delta).join('')).toBe('Hello! How can I help?');
  });

  it('regression: a client that declared no tools got function_call items for the device functions and stop_audio', async () => {
    const h = harness({ ga: true, tools: [] });
    const refused = await h.say('set the volume to forty percent');
    expect(h.seen.function_call).toBeUndefined();
    expect(refused.response.status).toBe('completed');
    expect(NO_DEVICE_FUNCTION_TEXT).toMatch(/volume/);
    expect(h.wire.find((e) => e.type === 'response.output_audio_transcript.done')?.transcript).toBe(NO_DEVICE_FUNCTION_TEXT);

    // "stop" over a story: the story is cut (barge-in), then the stop itself is a cancelled response, no item
    h.hold();
    const from = h.wire.length;
    h.speak('read me a story');
    const delta = await h.waitFor((e) => e.type === 'response.output_audio_transcript.delta' && h.wire.indexOf(e) >= from);
    const stopFrom = h.wire.length;
    h.speak('stop');
    const stopped = await h.waitFor((e) => e.type === 'response.done' && h.wire.indexOf(e) >= stopFrom && e.response.id !== delta.response_id);
    expect(stopped.response).toMatchObject({ status: 'cancelled', output: [], status_details: { type: 'cancelled' } });
    expect(h.wire.slice(stopFrom).filter((e) => e.type === 'response.done').map((e) => e.response.status)).toEqual(['cancelled', 'cancelled']);
    expect(h.wire.some((e) => e.item?.type === 'function_call')).toBe(false);
    expect(h.seen.function_call).toBeUndefined();
  });

  it('a client that declared the device functions (the agent) gets them, each function_call once', async () => {
    const h = harness({ ga: true, tools: DEVICE_FUNCTION_TOOLS as unknown as ToolDefinition[] });
    await h.say('set the volume to forty percent');
    expect(h.seen.function_call).toHaveLength(1);
    expect(h.seen.function_call![0]).toMatchObject({ name: 'set_device_volume', arguments: '{"volume_level":40}' });
  });

  it('regression: response.output_audio.done was never sent (the SDK never fired audio_done), also not on a cut', async () => {
    const h = harness({ ga: true });
    const done = await h.say('hello');
    expect(responseTypes(h.wire, done.response.id)).toContain('response.output_audio.done');
    expect(h.seen.audio_done).toHaveLength(1);

    h.hold();
    const from = h.wire.length;
    h.speak('read me a story');
    const delta = await h.waitFor((e) => e.type === 'response.output_audio_transcript.delta' && h.wire.indexOf(e) >= from);
    h.send({ type: 'response.cancel' });
    const cancelled = await h.waitFor((e) => e.type === 'response.done' && e.response.id === delta.response_id);
    expect(cancelled.response.status).toBe('cancelled');
    const types = responseTypes(h.wire, delta.response_id);
    expect(types.indexOf('response.output_audio.done')).toBeGreaterThan(types.indexOf('response.output_audio_transcript.delta'));
    expect(types.indexOf('response.output_audio.done')).toBeLessThan(types.indexOf('response.output_item.done'));
    expect(h.seen.audio_done).toHaveLength(2);
  });

  it('regression: the item and content lifecycle events were missing; a reply now follows the public order', async () => {
    const h = harness({ ga: true });
    const done = await h.say('hello');
    expect(responseTypes(h.wire, done.response.id)).toEqual([
      'response.created',
      'response.output_item.added',
      'conversation.item.added',
      'response.content_part.added',
      'output_audio_buffer.started',
      'response.output_audio_transcript.delta',
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'response.output_item.done',
      'conversation.item.done',
      'response.done',
      'output_audio_buffer.stopped',
    ]);
    const item = h.first((e) => e.type === 'response.output_item.done').item;
    expect(item).toMatchObject({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_audio', transcript: 'Hello! How can I help?' }] });
    expect(h.wire.find((e) => e.type === 'response.content_part.done')).toMatchObject({ item_id: item.id, output_index: 0, content_index: 0, part: { type: 'audio', transcript: 'Hello! How can I help?' } });

    // the user's item: committed and added when the turn ends (server VAD), before its transcript
    const user = h.types().slice(h.types().indexOf('input_audio_buffer.speech_stopped') + 1, h.types().indexOf('response.created'));
    expect(user).toEqual(['input_audio_buffer.committed', 'conversation.item.added', 'conversation.item.input_audio_transcription.completed']);
    const committed = h.first((e) => e.type === 'input_audio_buffer.committed');
    expect(h.wire.find((e) => e.type === 'conversation.item.added')).toMatchObject({ item: { id: committed.item_id, type: 'message', role: 'user' } });
    // the SDK placed both items in its history
    await h.waitFor((e) => e.type === 'conversation.item.retrieved');
    expect(new Set((h.seen.item_update ?? []).map((i) => i.itemId))).toEqual(new Set([committed.item_id, item.id]));
    expect(h.seen.error).toBeUndefined();
  });

  it('regression: a function call lacked output_item.added, conversation.item.*, function_call_arguments.done; its output got no ack', async () => {
    const h = harness({ ga: true, tools: DEVICE_FUNCTION_TOOLS as unknown as ToolDefinition[] });
    const done = await h.say('volume up');
    expect(responseTypes(h.wire, done.response.id)).toEqual([
      'response.created',
      'response.output_item.added',
      'conversation.item.added',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'conversation.item.done',
      'response.done',
    ]);
    const call = h.seen.function_call![0];
    expect(h.wire.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ call_id: call.callId, item_id: call.id, arguments: '{"action":"increase"}' });
    const from = h.wire.length;
    h.sdk.sendFunctionCallOutput(call, JSON.stringify({ success: true, result: { volume_level: 60, muted: false, message: 'volume 60%' } }));
    const ack = await h.waitFor((e) => e.type === 'conversation.item.added' && h.wire.indexOf(e) >= from);
    expect(ack.item).toMatchObject({ type: 'function_call_output', call_id: call.callId });
    expect((await h.waitFor((e) => e.type === 'response.output_audio_transcript.done' && h.wire.indexOf(e) >= from)).transcript).toBe('The volume is now 60 percent.');
    expect(h.wire.filter((e) => e.type === 'error')).toEqual([]);
    expect(h.seen.function_call).toHaveLength(1);
  });

  it('regression: a text message (conversation.item.create) was refused and its response.create answered no_pending_function_output', async () => {
    const h = harness({ ga: true });
    h.sdk.sendMessage('hello', {});
    const added = await h.waitFor((e) => e.type === 'conversation.item.added');
    expect(added.item).toMatchObject({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] });
    const spoken = await h.waitFor((e) => e.type === 'response.output_audio_transcript.done');
    expect(spoken.transcript).toBe('Hello! How can I help?');
    await h.waitFor((e) => e.type === 'response.done');
    expect(h.wire.filter((e) => e.type === 'error')).toEqual([]);
    // the spoken path is not the only one: empty text is refused clearly
    h.send({ type: 'conversation.item.create', event_id: 'e1', item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: '' }] } });
    expect((await h.waitFor((e) => e.type === 'error')).error).toMatchObject({ code: 'invalid_event', event_id: 'e1' });
  });

  it('regression (from a review): two response.create in one tick after a typed message gave two replies', async () => {
    const h = harness({ ga: true });
    h.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } });
    h.send({ type: 'response.create' });
    h.send({ type: 'response.create', event_id: 'again' });
    await h.waitFor((e) => e.type === 'response.done');
    await new Promise((r) => setTimeout(r, 300));
    expect(h.wire.filter((e) => e.type === 'response.created')).toHaveLength(1);
    // the second asks for a response with nothing to answer: said so
    expect(h.first((e) => e.type === 'error').error).toMatchObject({ code: 'no_pending_function_output', event_id: 'again' });
  });

  it('regression: output_audio_buffer.clear, input_audio_buffer.commit, conversation.item.truncate/delete were unknown_event', async () => {
    const h = harness({ ga: true });
    // idle: clear is acknowledged; commit with no speech is the public protocol's error
    h.send({ type: 'output_audio_buffer.clear' });
    await h.waitFor((e) => e.type === 'output_audio_buffer.cleared');
    h.send({ type: 'input_audio_buffer.commit', event_id: 'c1' });
    expect((await h.waitFor((e) => e.type === 'error')).error).toMatchObject({ code: 'input_audio_buffer_commit_empty', event_id: 'c1' });
    h.send({ type: 'input_audio_buffer.clear' });
    await h.waitFor((e) => e.type === 'input_audio_buffer.cleared');
    expect(h.clears).toBe(1);

    // clear while speaking (the SDK's WebRTC interrupt()): the response is cut, then cleared
    h.hold();
    const from = h.wire.length;
    h.speak('read me a story');
    const delta = await h.waitFor((e) => e.type === 'response.output_audio_transcript.delta' && h.wire.indexOf(e) >= from);
    h.send({ type: 'output_audio_buffer.clear' });
    const cleared = await h.waitFor((e) => e.type === 'output_audio_buffer.cleared' && e.response_id === delta.response_id);
    const cut = h.first((e) => e.type === 'response.done' && e.response.id === delta.response_id);
    expect(cut.response).toMatchObject({ status: 'cancelled', status_details: { type: 'cancelled', reason: 'client_cancelled' } });
    expect(h.wire.indexOf(cut)).toBeLessThan(h.wire.indexOf(cleared));

    // truncate the assistant's item: truncated, then the SDK fetches it again
    h.send({ type: 'conversation.item.truncate', item_id: delta.item_id, content_index: 0, audio_end_ms: 1200 });
    expect(await h.waitFor((e) => e.type === 'conversation.item.truncated')).toMatchObject({ item_id: delta.item_id, content_index: 0, audio_end_ms: 1200 });
    await h.waitFor((e) => e.type === 'conversation.item.retrieved' && e.item.id === delta.item_id);
    // delete it: deleted, the SDK drops it; a second delete names the unknown item
    h.send({ type: 'conversation.item.delete', item_id: delta.item_id });
    await h.waitFor((e) => e.type === 'conversation.item.deleted' && e.item_id === delta.item_id);
    expect(h.seen.item_deleted).toEqual([{ itemId: delta.item_id }]);
    h.send({ type: 'conversation.item.delete', item_id: delta.item_id, event_id: 'd2' });
    expect((await h.waitFor((e) => e.type === 'error' && e.error.event_id === 'd2')).error.code).toBe('unknown_item_id');
    expect(h.wire.filter((e) => e.error?.code === 'unknown_event')).toEqual([]);
  });

  it('regression: on barge-in response.done went before speech_started, output_audio_buffer.stopped before response.done; no status_details', async () => {
    const h = harness({ ga: true });
    const done = await h.say('hello');
    const types = responseTypes(h.wire, done.response.id);
    expect(types.indexOf('output_audio_buffer.stopped')).toBe(types.indexOf('response.done') + 1);

    h.hold();
    const from = h.wire.length;
    h.speak('read me a story');
    const delta = await h.waitFor((e) => e.type === 'response.output_audio_transcript.delta' && h.wire.indexOf(e) >= from);
    const bargeFrom = h.wire.length;
    h.conv.speechStarted(99_000);
    const after = h.types(bargeFrom);
    expect(after[0]).toBe('input_audio_buffer.speech_started');
    expect(after.slice(-2)).toEqual(['response.done', 'output_audio_buffer.cleared']);
    const cancelled = h.first((e) => e.type === 'response.done' && e.response.id === delta.response_id);
    expect(cancelled.response).toMatchObject({ status: 'cancelled', status_details: { type: 'cancelled', reason: 'turn_detected' } });
    // the item ends incomplete with what was said so far
    const item = h.first((e) => e.type === 'response.output_item.done' && e.item.id === delta.item_id).item;
    expect(item.status).toBe('incomplete');
    const full = `The Brave Little Kite. ${STORY}`;
    expect(item.content[0].transcript.length).toBeLessThan(full.length);
    expect(full.startsWith(item.content[0].transcript)).toBe(true);
  });
});

describe('Conversation on the spec route (the device agent)', () => {
  it('keeps its events as they were: no GA lifecycle events, the device functions and stop_audio as function calls', async () => {
    const h = harness({ ga: false });
    h.sdk.loop = undefined; // the device sends no conversation.item.retrieve
    const done = await h.say('hello');
    expect(h.types()).toEqual([
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'conversation.item.input_audio_transcription.completed',
      'response.created',
      ...h.wire.filter((e) => e.type === 'response.output_audio_transcript.delta').map((e) => e.type),
      'response.output_audio_transcript.done',
      'response.output_item.done',
      'response.done',
    ]);
    expect(done.response.status).toBe('completed');
    await h.say('set the volume to forty percent');
    expect(h.wire.at(-2)?.item).toMatchObject({ type: 'function_call', name: 'set_device_volume' });

    // barge-in: the device's order (the cut response ends before the new speech starts), then "stop" as stop_audio
    h.hold();
    const from = h.wire.length;
    h.speak('read me a story');
    await h.waitFor((e) => e.type === 'response.output_audio_transcript.delta' && h.wire.indexOf(e) >= from);
    const bargeFrom = h.wire.length;
    h.conv.speechStarted(50_000);
    expect(h.types(bargeFrom)).toEqual(['response.output_item.done', 'response.done', 'input_audio_buffer.speech_started']);
    h.conv.speechStopped(51_000, Promise.resolve({ text: 'stop', grammarMatch: true }));
    await h.waitFor((e) => e.type === 'response.output_item.done' && e.item.name === 'stop_audio');
  });
});
