// The listening state machine (issue #16): when the microphone may go onto the call, and what the speaker is
// doing, for the status socket's state stream (LEDs) and the earcons. Pure logic: the agent feeds it the wake
// word, the service's data-channel events, the downlink's audibility and the user's commands; time comes from
// an injectable clock.
//
// Two facts, kept apart on purpose:
//  - `open`: a conversation the USER opened (wake word, `speaker-agent listen`, a follow-up after an answer, or
//    mode `always`). Only then does microphone audio go onto the wire (micOnWire). The service cannot open it:
//    audio or events it sends while closed make the state `speaking`/`thinking` but never open the microphone.
//  - the phase: idle | listening | thinking | speaking, overridden by muted (privacy mute) and offline (no call).
// An open conversation closes after `silenceMs` without any sign of life (speech events, the assistant's audio),
// or after `followUpMs` when it was reopened as a follow-up and the user said nothing.
import { EventEmitter } from 'node:events';

export type ListeningState = 'idle' | 'listening' | 'thinking' | 'speaking' | 'muted' | 'offline';
export type ListeningMode = 'wake' | 'always' | 'manual';
/** why a conversation opened or closed (in the state stream) */
export type ListeningReason =
  | 'wake'
  | 'manual'
  | 'follow_up'
  | 'always'
  | 'silence'
  | 'follow_up_expired'
  | 'stop'
  | 'muted'
  | 'unmuted'
  | 'call_up'
  | 'call_down'
  | 'speech_started'
  | 'speech_stopped'
  | 'response'
  | 'assistant_audio'
  | 'answered';

export interface ListeningChange {
  state: ListeningState;
  previous: ListeningState;
  /** whether microphone audio goes onto the call now */
  micOnWire: boolean;
  reason: ListeningReason;
  /** clock ms */
  at: number;
}

export interface ListeningClock {
  now(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const realClock: ListeningClock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimer: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface ListeningOptions {
  mode: ListeningMode;
  /** an open conversation with no speech event and no assistant audio for this long closes (ms) */
  silenceMs: number;
  /** after an answer, listening reopens without the wake word for this long (ms; 0: no follow-up) */
  followUpMs: number;
  /** the assistant's audio counts as finished after this much inaudible playback (ms) */
  speakingTailMs?: number;
  /** a response.done with none of its audio heard yet waits this long for it (the data channel outruns the
   *  audio's jitter buffer) before the answer counts as over (ms) */
  audioGraceMs?: number;
  clock?: ListeningClock;
}

/** The service events the machine understands (names as on the data channel). */
export type ServiceSignal =
  | 'input_audio_buffer.speech_started'
  | 'input_audio_buffer.speech_stopped'
  | 'conversation.item.input_audio_transcription.completed'
  | 'response.created'
  | 'response.done'
  | 'assistant_transcript'
  | 'output_audio_buffer.started'
  | 'output_audio_buffer.stopped'
  /** the response asked the device to run a function: the device answers with response.create, so the
   *  response's done is not the end of the answer */
  | 'function_call';

type Phase = 'idle' | 'listening' | 'thinking' | 'speaking';
/** the longest wait for an answer in `thinking` (silenceMs when that is longer) */
export const THINKING_MS = 30_000;

export interface ListeningEvents {
  change: [ListeningChange];
  /** a conversation the user opened (earcon "listening opened") */
  opened: [ListeningReason];
  /** it closed (earcon "listening closed") */
  closed: [ListeningReason];
}

export class ListeningStateMachine extends EventEmitter<ListeningEvents> {
  readonly mode: ListeningMode;
  private readonly silenceMs: number;
  /** how long an answer may take once the user has spoken: a slow service (a tool call, a long think) is not
   *  silence; the user's silence is over, the service's has not begun */
  private readonly thinkingMs: number;
  private readonly followUpMs: number;
  private readonly tailMs: number;
  private readonly clock: ListeningClock;
  private phase: Phase = 'idle';
  private open = false;
  private callUp = false;
  private muted = false;
  /** a response is under way (response.created .. response.done / output_audio_buffer.stopped) */
  private responding = false;
  private responseDone = false;
  private functionPending = false;
  /** audible frames played since the response began */
  private heardAudio = false;
  private responseDoneAt = 0;
  private readonly graceMs: number;
  private lastAudibleAt = -Infinity;
  private timer: unknown;
  private current: ListeningState = 'offline';

  constructor(o: ListeningOptions) {
    super();
    if (!(o.silenceMs > 0)) throw new RangeError(`listening silenceMs must be > 0, got ${o.silenceMs}`);
    if (!(o.followUpMs >= 0)) throw new RangeError(`listening followUpMs must be >= 0, got ${o.followUpMs}`);
    this.mode = o.mode;
    this.silenceMs = o.silenceMs;
    this.thinkingMs = Math.max(o.silenceMs, THINKING_MS);
    this.followUpMs = o.followUpMs;
    this.tailMs = o.speakingTailMs ?? 400;
    this.graceMs = o.audioGraceMs ?? 1_500;
    this.clock = o.clock ?? realClock;
  }

  get state(): ListeningState {
    return this.current;
  }

  get micMuted(): boolean {
    return this.muted;
  }

  /** Whether microphone audio may go onto the call now. */
  get micOnWire(): boolean {
    return this.callUp && !this.muted && this.open;
  }

  // ---- inputs --------------------------------------------------------------------------------------------

  setCallUp(up: boolean): void {
    if (up === this.callUp) return;
    this.callUp = up;
    this.resetResponse();
    if (!up) {
      this.close('call_down', false);
      this.phase = 'idle';
      this.update('call_down');
      return;
    }
    this.phase = 'idle';
    if (this.mode === 'always' && !this.muted) this.openConversation('always');
    else this.update('call_up');
  }

  setMuted(muted: boolean): void {
    if (muted === this.muted) return;
    this.muted = muted;
    if (muted) {
      this.close('muted', false);
      this.phase = 'idle';
      this.update('muted');
      return;
    }
    if (this.callUp && this.mode === 'always') this.openConversation('always');
    else this.update('unmuted');
  }

  /** The wake word was heard. Ignored unless mode is `wake`. Returns whether it opened listening. */
  wake(): boolean {
    if (this.mode !== 'wake') return false;
    return this.requestOpen('wake');
  }

  /** `speaker-agent listen` / the socket's listen (push-to-talk). Works in every mode. */
  listen(): boolean {
    return this.requestOpen('manual');
  }

  /** `stop`: close the conversation now (the agent also cuts the assistant's audio). */
  stop(): void {
    this.resetResponse();
    if (this.mode === 'always' && this.callUp && !this.muted) {
      this.phase = 'listening';
      this.armTimer(undefined);
      this.update('stop');
      return;
    }
    this.close('stop', true);
    this.phase = 'idle';
    this.update('stop');
  }

  service(signal: ServiceSignal): void {
    if (!this.callUp || this.muted) return;
    switch (signal) {
      case 'input_audio_buffer.speech_started':
        // Only a conversation the user opened listens; a service that hears speech while closed heard silence.
        if (!this.open) return;
        this.phase = 'listening';
        this.armTimer(this.silenceMs);
        this.update('speech_started');
        return;
      case 'input_audio_buffer.speech_stopped':
      case 'conversation.item.input_audio_transcription.completed':
        if (!this.open || this.phase === 'speaking') return;
        this.phase = 'thinking';
        this.armTimer(this.thinkingMs);
        this.update('speech_stopped');
        return;
      case 'response.created':
        this.responding = true;
        this.responseDone = false;
        this.heardAudio = false;
        if (this.phase !== 'speaking') this.phase = 'thinking';
        if (this.open) this.armTimer(this.phase === 'thinking' ? this.thinkingMs : this.silenceMs);
        this.update('response');
        return;
      case 'assistant_transcript':
      case 'output_audio_buffer.started':
        this.responding = true;
        this.speakingNow();
        return;
      case 'function_call':
        this.functionPending = true;
        return;
      case 'response.done':
        if (this.functionPending) {
          this.functionPending = false;
          return;
        }
        this.responseDone = true;
        this.responseDoneAt = this.clock.now();
        this.maybeAnswered();
        return;
      case 'output_audio_buffer.stopped':
        this.responseDone = true;
        this.responseDoneAt = -Infinity; // the service says its audio is over: no grace
        this.heardAudio = true;
        this.maybeAnswered();
        return;
    }
  }

  /** The downlink played a frame of the service's audio (audible or not): call for every frame. */
  playback(audible: boolean): void {
    if (!this.callUp || this.muted) return;
    if (audible) {
      this.lastAudibleAt = this.clock.now();
      this.heardAudio = true;
      if (this.phase !== 'speaking') this.speakingNow();
      else if (this.open) this.armTimer(this.silenceMs);
      return;
    }
    if (this.phase === 'speaking' || this.responseDone) this.maybeAnswered();
  }

  // ---- internals -----------------------------------------------------------------------------------------

  private requestOpen(reason: ListeningReason): boolean {
    if (!this.callUp || this.muted) return false;
    if (this.open && this.phase === 'listening') {
      this.armTimer(this.silenceMs); // already listening: the user asked again, so give them the full window
      return false;
    }
    this.resetResponse();
    this.openConversation(reason);
    return true;
  }

  private openConversation(reason: ListeningReason): void {
    const was = this.open;
    this.open = true;
    this.phase = 'listening';
    this.armTimer(reason === 'always' ? undefined : reason === 'follow_up' ? this.followUpMs : this.silenceMs, reason === 'follow_up' ? 'follow_up_expired' : 'silence');
    this.update(reason);
    if (!was && reason !== 'always') this.emit('opened', reason);
  }

  private close(reason: ListeningReason, emitClosed: boolean): void {
    this.armTimer(undefined);
    const was = this.open;
    this.open = false;
    if (was && emitClosed && this.mode !== 'always') this.emit('closed', reason);
  }

  private speakingNow(): void {
    this.phase = 'speaking';
    if (this.open) this.armTimer(this.silenceMs);
    this.update('assistant_audio');
  }

  /** The answer is over once the service said so and its audio has been inaudible for the tail. */
  private maybeAnswered(): void {
    // Audio with no response around it (an announcement, a service that sends no events) ends with its sound.
    if (this.responding && !this.responseDone) return;
    const now = this.clock.now();
    if (now - this.lastAudibleAt < this.tailMs) return;
    if (this.responding && !this.heardAudio && now - this.responseDoneAt < this.graceMs) return;
    if (this.phase !== 'speaking' && this.phase !== 'thinking') return;
    this.resetResponse();
    if (this.mode === 'always') {
      this.phase = 'listening';
      this.update('answered');
      return;
    }
    if (this.open && this.followUpMs > 0) {
      this.phase = 'listening';
      this.armTimer(this.followUpMs, 'follow_up_expired');
      this.update('follow_up');
      return;
    }
    this.close('answered', true);
    this.phase = 'idle';
    this.update('answered');
  }

  private resetResponse(): void {
    this.heardAudio = false;
    this.functionPending = false;
    this.responding = false;
    this.responseDone = false;
  }

  private armTimer(ms: number | undefined, why: ListeningReason = 'silence'): void {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    if (ms === undefined || this.mode === 'always') return;
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      this.close(why, true);
      this.phase = 'idle';
      this.resetResponse();
      this.update(why);
    }, ms);
  }

  private update(reason: ListeningReason): void {
    const next: ListeningState = this.muted ? 'muted' : !this.callUp ? 'offline' : this.phase;
    if (next === this.current && reason !== 'follow_up' && reason !== 'wake' && reason !== 'manual') return;
    const previous = this.current;
    this.current = next;
    this.emit('change', { state: next, previous, micOnWire: this.micOnWire, reason, at: this.clock.now() });
  }
}
