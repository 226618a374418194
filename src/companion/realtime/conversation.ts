// Turn-taking for one call: listening -> thinking -> speaking (or waiting for the device's function output) ->
// listening. The user starting to speak while the assistant talks (barge-in) or saying "stop" runs the server's
// own stop_audio: the outgoing speech is cut at once and the response ends as cancelled.
import type { Logger } from 'pino';
import { parseClientEvent } from '../../protocol/events.js';
import { isDeviceFunction } from '../../protocol/functions.js';
import type { Recognition } from '../speech/recognizer.js';
import type { Synthesizer, VoiceParams } from '../speech/synthesizer.js';
import { ASSISTANT_TOOLS, type Brain, type FunctionRequest, type ToolDefinition, type Turn } from './brain.js';
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
  /** functions the client declared (GA session.update): called like device functions, output awaited */
  clientTools?: () => readonly ToolDefinition[];
  /** send output_audio_buffer.started/stopped/cleared (GA WebRTC calls) */
  audioBufferEvents?: boolean;
  /** session.update (GA calls apply it; the spec's calls ignore it) */
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
  abort: AbortController;
  /** resolves when the last frame was sent or the response was cut */
  played: () => void;
  cancelled: boolean;
}

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
  private readonly items = new Map<string, Record<string, unknown>>();

  constructor(private readonly d: ConversationDeps) {}

  get state(): ConversationState {
    return this.stateNow;
  }

  // ---- from the incoming audio --------------------------------------------------------------------------------

  speechStarted(audioStartMs: number): void {
    this.turn++;
    this.currentItemId = newId('item');
    if (this.active) this.stopAudio('barge_in');
    this.d.events.emit({ type: 'input_audio_buffer.speech_started', audio_start_ms: audioStartMs, item_id: this.currentItemId });
  }

  speechStopped(audioEndMs: number, result: Promise<Recognition>): void {
    const turn = this.turn;
    const itemId = this.currentItemId;
    this.d.events.emit({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: audioEndMs, item_id: itemId });
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
      this.remember({ role: 'user', text: transcript });
      this.pending.clear(); // a new request supersedes unanswered function calls
      let reply;
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
    });
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
      case 'conversation.item.create': {
        const p = this.pending.get(e.item.call_id);
        if (!p) {
          this.d.events.error('unknown_call_id', `no function call with call_id "${e.item.call_id}" is waiting for output`, e.event_id);
          return;
        }
        p.output = e.item.output;
        this.remember({ role: 'function', name: p.call.name, text: e.item.output });
        return;
      }
      case 'response.create': {
        const answered = [...this.pending.values()].filter((p) => p.output !== undefined);
        if (answered.length === 0) {
          this.d.events.error('no_pending_function_output', 'response.create needs a function_call_output for a waiting call first', e.event_id);
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
        if (item) this.d.events.emit({ type: 'conversation.item.retrieved', item: item as { id: string } });
        else this.d.events.error('unknown_item_id', `no item "${e.item_id}" in this conversation`, e.event_id);
        return;
      }
      case 'response.cancel':
        if (this.active) this.stopAudio('response.cancel');
        return;
      case 'input_audio_buffer.clear':
        this.d.clearInput();
        return;
      case 'session.update':
        this.d.updateSession?.(e.session, e.event_id);
        return;
    }
  }

  // ---- responses ----------------------------------------------------------------------------------------------

  private functionCall(fc: FunctionRequest): void {
    const responseId = newId('resp');
    const item = {
      type: 'function_call' as const,
      id: newId('item'),
      call_id: newId('call'),
      name: fc.name,
      arguments: JSON.stringify(fc.arguments ?? {}),
      status: 'completed',
    };
    if (fc.name === 'stop_audio') {
      this.stopAudio('stop_audio');
    } else if (isDeviceFunction(fc.name) || this.isClientTool(fc.name)) {
      this.pending.set(item.call_id, { callId: item.call_id, call: fc });
    } else {
      this.d.logger.warn({ name: fc.name }, 'the brain asked for an unknown function; ignored');
      this.settle();
      return;
    }
    this.d.events.emit({ type: 'response.created', response: { id: responseId, object: 'realtime.response', status: 'in_progress' } });
    this.keepItem(item);
    this.d.events.emit({ type: 'response.output_item.done', response_id: responseId, output_index: 0, item });
    this.d.events.emit({ type: 'response.done', response: { id: responseId, object: 'realtime.response', status: 'completed', output: [item] } });
    this.remember({ role: 'assistant', text: `[${fc.name} ${item.arguments}]` });
    this.stateNow = this.pending.size > 0 ? 'awaiting_function_output' : 'listening';
  }

  private tools(): readonly ToolDefinition[] {
    const client = this.d.clientTools?.() ?? [];
    return client.length === 0 ? ASSISTANT_TOOLS : [...ASSISTANT_TOOLS, ...client.filter((t) => !ASSISTANT_TOOLS.some((a) => a.name === t.name))];
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
    const r: ActiveResponse = { id: newId('resp'), itemId: newId('item'), text, abort: new AbortController(), played, cancelled: false };
    this.active = r;
    this.stateNow = 'speaking';
    ev.emit({ type: 'response.created', response: { id: r.id, object: 'realtime.response', status: 'in_progress' } });
    out.begin(r.id, this.d.synthesizer.sampleRate);
    if (this.d.audioBufferEvents) ev.emit({ type: 'output_audio_buffer.started', response_id: r.id });
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
          ev.transcriptDelta(r.id, r.itemId, text.slice(pos, end));
          pos = end;
        }
        const partEnd = part.offset + part.text.length;
        if (pos < partEnd) {
          ev.transcriptDelta(r.id, r.itemId, text.slice(pos, partEnd));
          pos = partEnd;
        }
      }
      out.finish();
      ev.transcriptDone(r.id, r.itemId, text);
    } catch (err) {
      if (r.cancelled) return;
      this.d.logger.warn({ err }, 'speech synthesis failed');
      out.cut();
      this.finishResponse(r, 'failed');
      return;
    }
    await done;
    if (r.cancelled) return;
    this.remember({ role: 'assistant', text });
    this.finishResponse(r, 'completed');
  }

  /** OutgoingAudio reports the last frame of a response was sent. */
  utterancePlayed(responseId: string): void {
    if (this.active?.id === responseId) this.active.played();
  }

  /** stop_audio: cut the assistant's speech now (the user said stop, barged in, or the client cancelled). */
  private stopAudio(reason: string): void {
    const r = this.active;
    const droppedMs = this.d.out.cut();
    if (!r) return;
    r.cancelled = true;
    r.abort.abort();
    r.played();
    this.d.logger.debug({ reason, droppedMs }, 'assistant speech cut');
    this.finishResponse(r, 'cancelled');
  }

  private finishResponse(r: ActiveResponse, status: 'completed' | 'cancelled' | 'failed'): void {
    if (this.active === r) this.active = undefined;
    if (this.d.audioBufferEvents) {
      this.d.events.emit({ type: status === 'completed' ? 'output_audio_buffer.stopped' : 'output_audio_buffer.cleared', response_id: r.id });
    }
    const item = {
      type: 'message' as const,
      id: r.itemId,
      role: 'assistant',
      status: status === 'completed' ? 'completed' : 'incomplete',
      content: [{ type: 'output_audio', transcript: r.text }],
    };
    this.keepItem(item);
    this.d.events.emit({ type: 'response.output_item.done', response_id: r.id, output_index: 0, item });
    this.d.events.emit({ type: 'response.done', response: { id: r.id, object: 'realtime.response', status, output: [item] } });
    this.settle();
  }

  private settle(): void {
    if (this.active) this.stateNow = 'speaking';
    else if (this.pending.size > 0) this.stateNow = 'awaiting_function_output';
    else this.stateNow = 'listening';
  }

  private keepItem(item: { id: string } & Record<string, unknown>): void {
    this.items.set(item.id, item);
    if (this.items.size > MAX_ITEMS) this.items.delete(this.items.keys().next().value as string);
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

function safeEventId(raw: string): string | undefined {
  try {
    const v = JSON.parse(raw) as { event_id?: unknown };
    return typeof v?.event_id === 'string' ? v.event_id : undefined;
  } catch {
    return undefined;
  }
}
