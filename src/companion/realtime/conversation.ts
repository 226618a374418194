// Turn-taking for one call: listening -> thinking -> speaking (or waiting for the device's function output) ->
// listening. The user starting to speak while the assistant talks (barge-in) or saying "stop" runs the server's
// own stop_audio: the outgoing speech is cut at once and the response ends as cancelled.
//
// Two dialects of events. The spec's route (the device agent) gets the events it always had. A GA call (POST
// /v1/realtime/calls: stock clients such as the JavaScript SDK) gets the public protocol's: each response's item
// and content lifecycle, the user's item committed when a turn ends, acks of created items, the audio buffer's
// end after response.done, and only the tools the client declared ("stop" cancels the response there: a stock
// client has no stop_audio to be called).
import type { Logger } from 'pino';
import { parseClientEvent, type ClientEvent } from '../../protocol/events.js';
import { isDeviceFunction } from '../../protocol/functions.js';
import type { Recognition } from '../speech/recognizer.js';
import type { Synthesizer, VoiceParams } from '../speech/synthesizer.js';
import { ASSISTANT_TOOLS, STOP_AUDIO_TOOL, type Brain, type BrainReply, type FunctionRequest, type ToolDefinition, type Turn } from './brain.js';
import { EventWriter, newId } from './eventWriter.js';
import type { IncomingAudioHandler } from './incomingAudio.js';
import type { OutgoingAudio } from './outgoingAudio.js';

export type ConversationState = 'listening' | 'thinking' | 'speaking' | 'awaiting_function_output';

export interface ConversationDeps {
  events: EventWriter;
  out: OutgoingAudio;
  brain: Brain;
  synthesizer: Synthesizer;
  voice: VoiceParams;
  workspaceId: string;
  logger: Logger;
  /** drops the user's utterance in progress (input_audio_buffer.clear) */
  clearInput: () => void;
  /** ends the user's utterance in progress now (input_audio_buffer.commit); false when nobody is speaking */
  commitInput?: () => boolean;
  /** functions the client declared (GA session.update): called like device functions, output awaited */
  clientTools?: () => readonly ToolDefinition[];
  /** a GA call: the public protocol's lifecycle events, output_audio_buffer.*, only the client's tools */
  ga?: boolean;
  /** session.update (GA calls apply it; the spec's calls answer with their unchanged session) */
  updateSession?: (session: Record<string, unknown>, eventId: string | undefined) => void;
}

interface PendingCall {
  callId: string;
  call: FunctionRequest;
  output?: string;
}

interface ActiveResponse {
  id: string;
  itemId: string;
  text: string;
  /** the transcript sent so far (deltas) */
  sent: string;
  /** GA: output_audio.done and the part's end were sent */
  audioDone: boolean;
  abort: AbortController;
  /** resolves when the last frame was sent or the response was cut */
  played: () => void;
  cancelled: boolean;
}

/** why a response was cancelled (the public protocol's status_details.reason) */
type CancelReason = 'turn_detected' | 'client_cancelled';

type Item = { id: string; type: string } & Record<string, unknown>;

const MAX_HISTORY = 20;
/** conversation items kept for conversation.item.retrieve */
const MAX_ITEMS = 50;
/** audio synthesised ahead of playback */
const LEAD_MS = 3000;
/** text synthesised per step (sentences are joined up to this length) */
const CHUNK_CHARS = 240;

/** Splits text at sentence ends into parts of up to about CHUNK_CHARS, with their offsets in the text. */
export function speechChunks(text: string): { text: string; offset: number }[] {
  const parts: { text: string; offset: number }[] = [];
  const re = /[^.!?]+[.!?]*\s*/g;
  let start = 0;
  let end = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const next = m.index + m[0].length;
    if (next - start > CHUNK_CHARS && end > start) {
      parts.push({ text: text.slice(start, end), offset: start });
      start = end;
    }
    end = next;
  }
  if (end > start) parts.push({ text: text.slice(start, end), offset: start });
  if (parts.length === 0 && text) parts.push({ text, offset: 0 });
  return parts;
}
const SORRY_TEXT = 'Sorry, something went wrong on my side.';

export class Conversation implements IncomingAudioHandler {
  private stateNow: ConversationState = 'listening';
  private readonly history: Turn[] = [];
  private readonly pending = new Map<string, PendingCall>();
  private active: ActiveResponse | undefined;
  /** bumped by every new user utterance: work for an older turn that has not started speaking is dropped */
  private turn = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private currentItemId = '';
  /** the conversation's items, oldest first (Map order) */
  private readonly items = new Map<string, Item>();
  /** GA: a user message from conversation.item.create, answered at the next response.create */
  private pendingText: { itemId: string; text: string } | undefined;

  constructor(private readonly d: ConversationDeps) {}

  get state(): ConversationState {
    return this.stateNow;
  }

  // ---- from the incoming audio --------------------------------------------------------------------------------

  speechStarted(audioStartMs: number): void {
    this.turn++;
    this.currentItemId = newId('item');
    const started = { type: 'input_audio_buffer.speech_started', audio_start_ms: audioStartMs, item_id: this.currentItemId } as const;
    if (this.d.ga) {
      // the public order: the new turn, then the response it interrupts ends
      this.d.events.emit(started);
      if (this.active) this.stopAudio('turn_detected');
    } else {
      // the order devices have always had: the cut response ends before the speech that cut it starts
      if (this.active) this.stopAudio('turn_detected');
      this.d.events.emit(started);
    }
  }

  speechStopped(audioEndMs: number, result: Promise<Recognition>): void {
    const turn = this.turn;
    const itemId = this.currentItemId;
    this.d.events.emit({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: audioEndMs, item_id: itemId });
    if (this.d.ga) {
      // server VAD commits the turn as the user's item; its transcript follows once recognised
      this.d.events.emit({ type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: this.newestItemId() });
      this.addItem({ type: 'message', id: itemId, object: 'realtime.item', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] });
    }
    if (this.stateNow === 'listening') this.stateNow = 'thinking';
    this.enqueue(async () => {
      let transcript: string;
      try {
        transcript = (await result).text.trim();
      } catch (err) {
        this.d.logger.warn({ err }, 'speech recognition failed');
        this.settle();
        return;
      }
      if (this.closed) return;
      this.d.events.emit({ type: 'conversation.item.input_audio_transcription.completed', item_id: itemId, content_index: 0, transcript });
      this.keepItem({ type: 'message', id: itemId, object: 'realtime.item', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript }] });
      // An empty result is a cough or noise: no reply, so the assistant does not chatter at the room.
      if (transcript === '' || turn !== this.turn) return this.settle();
      this.remember({ role: 'user', text: transcript, itemId });
      await this.answer(transcript, turn);
    });
  }

  /** The brain's reply to the user's turn (spoken or typed): a function call or speech. */
  private async answer(transcript: string, turn: number): Promise<void> {
    this.pending.clear(); // a new request supersedes unanswered function calls
    this.pendingText = undefined;
    let reply: BrainReply;
    try {
      reply = await this.d.brain.respond({ transcript, history: this.history, tools: this.tools(), workspaceId: this.d.workspaceId });
    } catch (err) {
      this.d.logger.warn({ err }, 'brain failed');
      reply = { say: SORRY_TEXT };
    }
    if (turn !== this.turn || this.closed) return;
    if (reply.functionCall) this.functionCall(reply.functionCall);
    else if (reply.say) await this.speak(reply.say);
    else this.settle();
  }

  // ---- from the data channel ----------------------------------------------------------------------------------

  clientMessage(raw: string): void {
    const r = parseClientEvent(raw);
    if (!r.ok) {
      const clientEventId = safeEventId(raw);
      this.d.events.error(r.kind === 'unknown' ? 'unknown_event' : 'invalid_event', r.reason, clientEventId);
      return;
    }
    const e = r.event;
    switch (e.type) {
      case 'conversation.item.create':
        if (e.item.type === 'function_call_output') this.functionOutput(e.item, e.event_id);
        else this.createMessage(e.item, e.event_id);
        return;
      case 'response.create': {
        if (this.pendingText) {
          const { text } = this.pendingText;
          this.pendingText = undefined; // taken now: a second response.create in the same tick gets no second reply
          const turn = this.turn;
          if (this.stateNow === 'listening') this.stateNow = 'thinking';
          this.enqueue(() => this.answer(text, turn));
          return;
        }
        const answered = [...this.pending.values()].filter((p) => p.output !== undefined);
        if (answered.length === 0) {
          const what = this.d.ga ? 'a user message (conversation.item.create) or a function_call_output' : 'a function_call_output';
          this.d.events.error('no_pending_function_output', `response.create needs ${what} for a waiting call first`, e.event_id);
          return;
        }
        for (const p of answered) this.pending.delete(p.callId);
        const turn = this.turn;
        this.enqueue(async () => {
          for (const p of answered) {
            let say: string;
            try {
              say = (await this.d.brain.afterFunction({ call: p.call, output: p.output!, history: this.history, workspaceId: this.d.workspaceId })).say;
            } catch (err) {
              this.d.logger.warn({ err }, 'brain failed after a function');
              say = SORRY_TEXT;
            }
            if (turn !== this.turn || this.closed) return;
            await this.speak(say);
          }
        });
        return;
      }
      case 'conversation.item.retrieve': {
        const item = this.items.get(e.item_id);
        if (item) this.d.events.emit({ type: 'conversation.item.retrieved', item });
        else this.d.events.error('unknown_item_id', `no item "${e.item_id}" in this conversation`, e.event_id);
        return;
      }
      case 'conversation.item.truncate': {
        const item = this.items.get(e.item_id);
        if (!item) return this.d.events.error('unknown_item_id', `no item "${e.item_id}" in this conversation`, e.event_id);
        if (item.type !== 'message' || item.role !== 'assistant') {
          return this.d.events.error('invalid_event', 'conversation.item.truncate: only an assistant message can be truncated', e.event_id);
        }
        // the client stopped playing it: what the server still sends of it goes too
        if (this.active?.itemId === e.item_id) this.stopAudio('client_cancelled');
        this.d.events.emit({ type: 'conversation.item.truncated', item_id: e.item_id, content_index: e.content_index, audio_end_ms: e.audio_end_ms });
        return;
      }
      case 'conversation.item.delete': {
        if (!this.items.delete(e.item_id)) return this.d.events.error('unknown_item_id', `no item "${e.item_id}" in this conversation`, e.event_id);
        // the brain forgets it too
        for (let i = this.history.length - 1; i >= 0; i--) if (this.history[i].itemId === e.item_id) this.history.splice(i, 1);
        if (this.pendingText?.itemId === e.item_id) this.pendingText = undefined;
        this.d.events.emit({ type: 'conversation.item.deleted', item_id: e.item_id });
        return;
      }
      case 'response.cancel':
        if (this.active) this.stopAudio('client_cancelled');
        return;
      case 'output_audio_buffer.clear': {
        const cut = this.active;
        this.stopAudio('client_cancelled');
        // a GA call's cut response already ended with output_audio_buffer.cleared
        if (!cut || !this.d.ga) this.d.events.emit({ type: 'output_audio_buffer.cleared', ...(cut ? { response_id: cut.id } : {}) });
        return;
      }
      case 'input_audio_buffer.commit':
        if (!this.d.commitInput?.()) this.d.events.error('input_audio_buffer_commit_empty', 'input_audio_buffer.commit: the user is not speaking, there is no audio to commit', e.event_id);
        return;
      case 'input_audio_buffer.clear':
        this.d.clearInput();
        this.d.events.emit({ type: 'input_audio_buffer.cleared' });
        return;
      case 'session.update':
        this.d.updateSession?.(e.session, e.event_id);
        return;
    }
  }

  private functionOutput(item: FunctionOutputItem, eventId: string | undefined): void {
    const p = this.pending.get(item.call_id);
    if (!p) {
      this.d.events.error('unknown_call_id', `no function call with call_id "${item.call_id}" is waiting for output`, eventId);
      return;
    }
    p.output = item.output;
    const itemId = item.id ?? newId('item');
    this.remember({ role: 'function', name: p.call.name, text: item.output, itemId });
    if (this.d.ga) this.addItem({ type: 'function_call_output', id: itemId, object: 'realtime.item', status: 'completed', call_id: item.call_id, output: item.output }, true);
  }

  /** GA: a message the client adds (typed text); a user message is answered at the next response.create. */
  private createMessage(item: MessageInputItem, eventId: string | undefined): void {
    const refuse = (why: string) => this.d.events.error('invalid_event', `conversation.item.create: ${why}`, eventId);
    if (!this.d.ga) return refuse('item.type must be "function_call_output" on this route');
    if (item.role === 'system') return refuse('system messages are not supported; set session.instructions');
    const textType = item.role === 'user' ? 'input_text' : 'output_text';
    const text = item.content.map((c) => (c.type === textType || c.type === 'text' ? (c.text ?? '') : undefined));
    if (text.some((t) => t === undefined) || text.join('').trim() === '') {
      return refuse(`a ${item.role} message takes ${textType} content with text here (speak on the audio track for audio)`);
    }
    const id = item.id ?? newId('item');
    if (this.items.has(id)) return refuse(`an item "${id}" already exists`);
    const said = text.join(' ').trim();
    this.addItem({ type: 'message', id, object: 'realtime.item', role: item.role, status: 'completed', content: item.content.map((c) => ({ type: c.type, text: c.text })) }, true);
    this.remember({ role: item.role, text: said, itemId: id });
    if (item.role === 'user') this.pendingText = { itemId: id, text: said };
  }

  // ---- responses ----------------------------------------------------------------------------------------------

  private functionCall(fc: FunctionRequest): void {
    const ev = this.d.events;
    const responseId = newId('resp');
    const item = {
      type: 'function_call' as const,
      id: newId('item'),
      call_id: newId('call'),
      name: fc.name,
      arguments: JSON.stringify(fc.arguments ?? {}),
      status: 'completed',
    };
    if (fc.name === STOP_AUDIO_TOOL.name && !this.isClientTool(fc.name)) {
      this.stopAudio('turn_detected');
      if (this.d.ga) {
        // a stock client has no stop_audio: the user's "stop" is a response cancelled with nothing in it
        ev.emit({ type: 'response.created', response: { id: responseId, object: 'realtime.response', status: 'in_progress' } });
        ev.emit({ type: 'response.done', response: { id: responseId, object: 'realtime.response', status: 'cancelled', status_details: { type: 'cancelled', reason: 'turn_detected' }, output: [] } });
        this.settle();
        return;
      }
    } else if (this.offers(fc.name)) {
      this.pending.set(item.call_id, { callId: item.call_id, call: fc });
    } else {
      this.d.logger.warn({ function: fc.name }, 'the brain asked for a function this call does not offer; ignored');
      this.settle();
      return;
    }
    ev.emit({ type: 'response.created', response: { id: responseId, object: 'realtime.response', status: 'in_progress' } });
    if (this.d.ga) {
      // in_progress: the JavaScript SDK runs a completed function_call from output_item.added as well
      const added = { ...item, status: 'in_progress', arguments: '' };
      ev.emit({ type: 'response.output_item.added', response_id: responseId, output_index: 0, item: added });
      this.addItem(added);
      ev.emit({ type: 'response.function_call_arguments.done', response_id: responseId, item_id: item.id, output_index: 0, call_id: item.call_id, arguments: item.arguments });
    }
    this.keepItem(item);
    ev.emit({ type: 'response.output_item.done', response_id: responseId, output_index: 0, item });
    if (this.d.ga) ev.emit({ type: 'conversation.item.done', item });
    ev.emit({ type: 'response.done', response: { id: responseId, object: 'realtime.response', status: 'completed', output: [item] } });
    this.remember({ role: 'assistant', text: `[${fc.name} ${item.arguments}]`, itemId: item.id });
    this.stateNow = this.pending.size > 0 ? 'awaiting_function_output' : 'listening';
  }

  /** The tools the brain may call: on a GA call only the client's (plus the server's own stop_audio, which is
   *  never sent as a function_call there); on the spec's route the device functions too. */
  private tools(): readonly ToolDefinition[] {
    const client = this.d.clientTools?.() ?? [];
    if (this.d.ga) return client.some((t) => t.name === STOP_AUDIO_TOOL.name) ? client : [...client, STOP_AUDIO_TOOL];
    return client.length === 0 ? ASSISTANT_TOOLS : [...ASSISTANT_TOOLS, ...client.filter((t) => !ASSISTANT_TOOLS.some((a) => a.name === t.name))];
  }

  /** Whether a function_call for `name` may go to the client. */
  private offers(name: string): boolean {
    return this.isClientTool(name) || (!this.d.ga && isDeviceFunction(name));
  }

  private isClientTool(name: string): boolean {
    return (this.d.clientTools?.() ?? []).some((t) => t.name === name);
  }

  /** Speaks `text` on the outgoing track; resolves when it was played out or cut. Long text is synthesised a
   *  sentence or two at a time, keeping about LEAD_MS of audio ahead of playback: memory stays flat for a long
   *  story and the transcript deltas stream as the speech advances. */
  private async speak(text: string): Promise<void> {
    const ev = this.d.events;
    const out = this.d.out;
    let played!: () => void;
    const done = new Promise<void>((resolve) => (played = resolve));
    const r: ActiveResponse = { id: newId('resp'), itemId: newId('item'), text, sent: '', audioDone: false, abort: new AbortController(), played, cancelled: false };
    this.active = r;
    this.stateNow = 'speaking';
    ev.emit({ type: 'response.created', response: { id: r.id, object: 'realtime.response', status: 'in_progress' } });
    out.begin(r.id, this.d.synthesizer.sampleRate);
    if (this.d.ga) {
      const added = { type: 'message' as const, id: r.itemId, role: 'assistant', status: 'in_progress', content: [] };
      ev.emit({ type: 'response.output_item.added', response_id: r.id, output_index: 0, item: added });
      this.addItem(added);
      ev.emit({ type: 'response.content_part.added', ...partOf(r), part: { type: 'audio', transcript: '' } });
      ev.emit({ type: 'output_audio_buffer.started', response_id: r.id });
    }
    try {
      let pos = 0; // transcript sent so far
      for (const part of speechChunks(text)) {
        await out.waitForRoom(LEAD_MS);
        if (r.cancelled) return;
        const result = await this.d.synthesizer.synthesize(part.text, this.d.voice, {
          lane: 'realtime',
          signal: r.abort.signal,
          onAudio: (pcm) => {
            if (!r.cancelled) out.write(pcm);
          },
        });
        if (r.cancelled) return;
        // deltas word by word, each with the text since the previous word (spaces, punctuation)
        for (const w of result.words) {
          const end = Math.min(text.length, part.offset + w.textOffset + w.textLength);
          if (end <= pos) continue;
          this.delta(r, text.slice(pos, end));
          pos = end;
        }
        const partEnd = part.offset + part.text.length;
        if (pos < partEnd) {
          this.delta(r, text.slice(pos, partEnd));
          pos = partEnd;
        }
      }
      out.finish();
      if (this.d.ga) this.endAudioPart(r);
      else ev.transcriptDone(r.id, r.itemId, text);
    } catch (err) {
      if (r.cancelled) return;
      this.d.logger.warn({ err }, 'speech synthesis failed');
      out.cut();
      this.finishResponse(r, 'failed');
      return;
    }
    await done;
    if (r.cancelled) return;
    this.remember({ role: 'assistant', text, itemId: r.itemId });
    this.finishResponse(r, 'completed');
  }

  private delta(r: ActiveResponse, text: string): void {
    r.sent += text;
    this.d.events.transcriptDelta(r.id, r.itemId, text);
  }

  /** GA: the reply's audio part is complete (synthesised to the end, or cut): its transcript is what was sent. */
  private endAudioPart(r: ActiveResponse): void {
    r.audioDone = true;
    this.d.events.emit({ type: 'response.output_audio.done', ...partOf(r) });
    this.d.events.transcriptDone(r.id, r.itemId, r.sent);
    this.d.events.emit({ type: 'response.content_part.done', ...partOf(r), part: { type: 'audio', transcript: r.sent } });
  }

  /** OutgoingAudio reports the last frame of a response was sent. */
  utterancePlayed(responseId: string): void {
    if (this.active?.id === responseId) this.active.played();
  }

  /** stop_audio: cut the assistant's speech now (the user said stop, barged in, or the client cancelled). */
  private stopAudio(reason: CancelReason): void {
    const r = this.active;
    const droppedMs = this.d.out.cut();
    if (!r) return;
    r.cancelled = true;
    r.abort.abort();
    r.played();
    this.d.logger.debug({ reason, droppedMs }, 'assistant speech cut');
    this.finishResponse(r, 'cancelled', reason);
  }

  private finishResponse(r: ActiveResponse, status: 'completed' | 'cancelled' | 'failed', reason?: CancelReason): void {
    if (this.active === r) this.active = undefined;
    const ev = this.d.events;
    if (this.d.ga && !r.audioDone) this.endAudioPart(r);
    const item = {
      type: 'message' as const,
      id: r.itemId,
      role: 'assistant',
      status: status === 'completed' ? 'completed' : 'incomplete',
      // a GA item holds what was said; the spec's route has always reported the whole reply
      content: [{ type: 'output_audio', transcript: this.d.ga ? r.sent : r.text }],
    };
    this.keepItem(item);
    ev.emit({ type: 'response.output_item.done', response_id: r.id, output_index: 0, item });
    if (this.d.ga) ev.emit({ type: 'conversation.item.done', item });
    const details =
      status === 'cancelled' ? { status_details: { type: 'cancelled', reason } }
      : status === 'failed' ? { status_details: { type: 'failed', error: { type: 'server_error', message: 'speech synthesis failed' } } }
      : {};
    ev.emit({ type: 'response.done', response: { id: r.id, object: 'realtime.response', status, ...details, output: [item] } });
    // the public order: the audio buffer's end follows the response's
    if (this.d.ga) ev.emit({ type: status === 'completed' ? 'output_audio_buffer.stopped' : 'output_audio_buffer.cleared', response_id: r.id });
    this.settle();
  }

  private settle(): void {
    if (this.active) this.stateNow = 'speaking';
    else if (this.pending.size > 0) this.stateNow = 'awaiting_function_output';
    else this.stateNow = 'listening';
  }

  private keepItem(item: Item): void {
    this.items.set(item.id, item);
    if (this.items.size > MAX_ITEMS) this.items.delete(this.items.keys().next().value as string);
  }

  /** GA: a new item joins the conversation after the newest one (conversation.item.added; `done` for an item that
   *  is complete as added: the client's own). */
  private addItem(item: Item, done = false): void {
    this.d.events.emit({ type: 'conversation.item.added', previous_item_id: this.newestItemId(), item });
    this.keepItem(item);
    if (done) this.d.events.emit({ type: 'conversation.item.done', item });
  }

  private newestItemId(): string | null {
    let newest: string | null = null;
    for (const id of this.items.keys()) newest = id;
    return newest;
  }

  private remember(t: Turn): void {
    this.history.push(t);
    if (this.history.length > MAX_HISTORY) this.history.splice(0, this.history.length - MAX_HISTORY);
  }

  /** Turns are handled one after another, so replies never overlap on the track. */
  private enqueue(work: () => Promise<void>): void {
    this.chain = this.chain.then(work).catch((err) => this.d.logger.error({ err }, 'conversation turn failed'));
  }

  close(): void {
    this.closed = true;
    this.turn++;
    if (this.active) {
      this.active.cancelled = true;
      this.active.abort.abort();
      this.active.played();
      this.active = undefined;
    }
  }
}

type FunctionOutputItem = Extract<ClientEvent, { type: 'conversation.item.create' }>['item'] & { type: 'function_call_output' };
type MessageInputItem = Extract<ClientEvent, { type: 'conversation.item.create' }>['item'] & { type: 'message' };

/** Where a reply's transcript and audio are: its one item's one part. */
function partOf(r: ActiveResponse) {
  return { response_id: r.id, item_id: r.itemId, output_index: 0, content_index: 0 };
}

function safeEventId(raw: string): string | undefined {
  try {
    const v = JSON.parse(raw) as { event_id?: unknown };
    return typeof v?.event_id === 'string' ? v.event_id : undefined;
  } catch {
    return undefined;
  }
}
