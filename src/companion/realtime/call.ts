// One live call: the werift peer, the incoming pipeline (Opus -> VAD -> recogniser), the outgoing paced track and
// the conversation, plus the liveness facts the service's sweep uses to end calls that never connect or go silent.
import type { Logger } from 'pino';
import type { Recognizer } from '../speech/recognizer.js';
import type { Synthesizer, VoiceParams } from '../speech/synthesizer.js';
import type { Brain } from './brain.js';
import { CallPeer } from './callPeer.js';
import { Conversation } from './conversation.js';
import { EventWriter, newId, type TranscriptFamily } from './eventWriter.js';
import type { FramePacer } from './framePacer.js';
import { IncomingAudio } from './incomingAudio.js';
import { OutgoingAudio } from './outgoingAudio.js';
import type { SpeechEncoder } from './speechEncoder.js';
import type { IceServer } from '../../protocol/session.js';
import type { SessionRecord } from './sessionRegistry.js';
import { gaSessionObject, mergeGaSession, type GaSessionConfig } from './gaSession.js';

export interface CallOptions {
  iceServers: IceServer[];
  additionalHostAddresses: string[];
  transcriptFamily: TranscriptFamily;
  voice: VoiceParams;
  vadHangoverMs: number;
  /** a GA call (POST /v1/realtime/calls): its session configuration, GA session events and output_audio_buffer.* */
  ga?: GaSessionConfig;
}

export interface CallDeps {
  recognizer: Recognizer;
  synthesizer: Synthesizer;
  brain: Brain;
  pacer: FramePacer;
  /** turns assistant speech into Opus ahead of playback (shared by all calls) */
  speechEncoder: SpeechEncoder;
  logger: Logger;
  /** the call ended (for whatever reason) and released its resources */
  onClosed: (call: Call) => void;
}

export type CallEndReason = 'connect_timeout' | 'idle_timeout' | 'transport' | 'server_shutdown' | 'superseded' | 'hangup';

export class Call {
  readonly id = newId('call');
  // performance.now(), not Date.now(): a board without a real-time clock steps its wall clock forward when NTP
  // syncs after boot, and the sweep then took every quiet call for idle (a backward step: a call never set up
  // was never given up)
  readonly createdAt = performance.now();
  lastActivityAt = performance.now();
  connected = false;
  private readonly peer: CallPeer;
  private readonly incoming: IncomingAudio;
  readonly outgoing: OutgoingAudio;
  private readonly conversation: Conversation;
  private readonly events: EventWriter;
  private readonly logger: Logger;
  private channelOpen = false;
  private readonly beforeOpen: string[] = [];
  private closing: Promise<void> | undefined;
  private ga: GaSessionConfig | undefined;

  constructor(
    readonly session: SessionRecord,
    private readonly opts: CallOptions,
    private readonly deps: CallDeps,
  ) {
    this.logger = deps.logger.child({ call: this.id, session: session.id });
    this.ga = opts.ga;
    // transcriptFamily is the spec route's setting (custom-pipeline assistants may use legacy names); a GA call
    // always speaks the public protocol's names
    this.events = new EventWriter((json) => this.sendEvent(json), opts.ga ? 'ga' : opts.transcriptFamily);
    this.outgoing = new OutgoingAudio(
      (packet) => this.peer.sendRtp(packet),
      (responseId) => this.conversation.utterancePlayed(responseId),
      deps.speechEncoder,
    );
    this.conversation = new Conversation({
      events: this.events,
      out: this.outgoing,
      brain: deps.brain,
      synthesizer: deps.synthesizer,
      voice: opts.voice,
      workspaceId: session.workspaceId,
      logger: this.logger,
      clearInput: () => this.incoming.clear(),
      commitInput: () => this.incoming.commit(),
      clientTools: () => this.ga?.tools ?? [],
      ga: opts.ga !== undefined,
      updateSession: (s, eventId) => this.updateSession(s, eventId),
    });
    this.incoming = new IncomingAudio(deps.recognizer, this.conversation, { hangoverMs: opts.ga?.silenceDurationMs ?? opts.vadHangoverMs });
    this.peer = new CallPeer(
      { iceServers: opts.iceServers, additionalHostAddresses: opts.additionalHostAddresses },
      {
        audio: (payload) => {
          this.lastActivityAt = performance.now();
          this.incoming.handleOpus(payload);
        },
        message: (text) => {
          this.lastActivityAt = performance.now();
          this.conversation.clientMessage(text);
        },
        channelOpen: () => this.openChannel(),
        connected: () => {
          if (this.connected) return;
          this.connected = true;
          this.lastActivityAt = performance.now();
          this.deps.pacer.add(this.outgoing);
          this.logger.info('call connected');
        },
        ended: (reason) => void this.close('transport', reason),
      },
    );
  }

  answer(offerSdp: string): Promise<string> {
    return this.peer.answer(offerSdp);
  }

  get stats() {
    return { incoming: this.incoming.stats, outgoing: this.outgoing.stats, state: this.conversation.state };
  }

  close(reason: CallEndReason, detail?: string): Promise<void> {
    this.closing ??= (async () => {
      this.logger.info({ reason, detail }, 'call ended');
      this.deps.pacer.remove(this.outgoing);
      this.conversation.close();
      this.incoming.close();
      this.outgoing.close();
      await this.peer.close();
      this.deps.onClosed(this);
    })();
    return this.closing;
  }

  private sendEvent(json: string): void {
    if (this.channelOpen) {
      this.peer.sendText(json);
    } else if (this.beforeOpen.length < 100) {
      this.beforeOpen.push(json);
    }
  }

  /** session.update: a GA call applies what the offline assistant can honour (gaSession.ts) and answers
   *  session.updated; a call of the spec's route (the spec names no session.update) changes nothing and says so
   *  with session.updated carrying its unchanged session. */
  private updateSession(update: Record<string, unknown>, eventId: string | undefined): void {
    if (!this.ga) {
      this.events.emit({ type: 'session.updated', session: this.specSession() });
      return;
    }
    const r = mergeGaSession(this.ga, update);
    if (!r.ok) {
      this.events.error('invalid_event', r.message, eventId);
      return;
    }
    this.ga = r.config;
    this.incoming.setHangoverMs(r.config.silenceDurationMs);
    this.events.emit({ type: 'session.updated', session: gaSessionObject(r.config, this.session.id) });
  }

  private openChannel(): void {
    if (this.channelOpen) return;
    this.channelOpen = true;
    this.events.emit({ type: 'session.created', session: this.ga ? gaSessionObject(this.ga, this.session.id) : this.specSession() });
    for (const json of this.beforeOpen.splice(0)) this.peer.sendText(json);
  }

  /** The session object of a call of the spec's route. */
  private specSession(): Record<string, unknown> {
    return {
      id: this.session.id,
      object: 'realtime.session',
      modalities: this.session.modalities,
      voice: this.opts.voice.language,
      input_audio_format: 'opus',
      output_audio_format: 'opus',
      turn_detection: { type: 'server_vad', silence_duration_ms: this.opts.vadHangoverMs },
    };
  }
}
