// The live calls of the server: starts them, enforces maxCalls, and ends the ones that never connect
// (connectTimeoutMs) or go silent (no RTP and no data-channel message for idleTimeoutMs). One sweep timer for
// all calls; one shared frame pacer for all outgoing tracks.
import type { GaSessionConfig } from './gaSession.js';
import type { Logger } from 'pino';
import type { IceServer } from '../../protocol/session.js';
import type { Recognizer } from '../speech/recognizer.js';
import type { Synthesizer, VoiceParams } from '../speech/synthesizer.js';
import type { Brain } from './brain.js';
import { Call } from './call.js';
import type { TranscriptFamily } from './eventWriter.js';
import { FramePacer, type PacerStats } from './framePacer.js';
import type { SessionRecord } from './sessionRegistry.js';
import { ThreadSpeechEncoder, type SpeechEncoder } from './speechEncoder.js';
import { CodedError } from '../../common/errors.js';

export interface CallRegistryOptions {
  iceServers: IceServer[];
  additionalHostAddresses: string[];
  transcriptFamily: TranscriptFamily;
  maxCalls: number;
  idleTimeoutMs: number;
  connectTimeoutMs: number;
  vadHangoverMs: number;
  voice: VoiceParams;
}

export interface CallRegistryDeps {
  recognizer: Recognizer;
  synthesizer: Synthesizer;
  brain: Brain;
  logger: Logger;
  /** default: a ThreadSpeechEncoder owned (and closed) by the registry */
  speechEncoder?: SpeechEncoder;
}

export interface RealtimeStats {
  calls: number;
  connectedCalls: number;
  pacer: PacerStats;
  /** over calls that ended and calls still live */
  recognizedAudioMs: number;
  recognizeWaitMs: number;
  /** outgoing frames of live calls: assistant speech vs silence */
  speechFrames: number;
  silenceFrames: number;
}

export class CallLimitError extends CodedError<'too_many_calls'> {
  override name = 'CallLimitError';
  constructor(message: string) {
    super('too_many_calls', message);
  }
}

export class CallRegistry {
  readonly pacer = new FramePacer();
  private readonly calls = new Map<string, Call>();
  private readonly sweepTimer: NodeJS.Timeout;
  private closedRecognition = { audioMs: 0, waitMs: 0 };
  private shuttingDown = false;
  private readonly speechEncoder: SpeechEncoder;
  private readonly ownsEncoder: boolean;

  constructor(
    private readonly opts: CallRegistryOptions,
    private readonly deps: CallRegistryDeps,
  ) {
    this.sweepTimer = setInterval(() => this.sweep(), Math.min(1000, Math.max(100, opts.idleTimeoutMs / 4)));
    this.sweepTimer.unref();
    this.ownsEncoder = !deps.speechEncoder;
    this.speechEncoder = deps.speechEncoder ?? new ThreadSpeechEncoder();
  }

  get size(): number {
    return this.calls.size;
  }

  /** Whether an offer from this device would be taken: its own unconnected call does not count (superseded). */
  hasRoomFor(workspaceId: string, clientId: string): boolean {
    if (this.shuttingDown) return false;
    let held = this.calls.size;
    for (const c of this.calls.values()) if (this.isPendingOf(c, workspaceId, clientId)) held--;
    return held < this.opts.maxCalls;
  }

  private isPendingOf(c: Call, workspaceId: string, clientId: string): boolean {
    return !c.connected && c.session.clientId === clientId && c.session.workspaceId === workspaceId;
  }

  /** Creates the call's peer and returns the SDP answer. Throws CallLimitError, CallPeerError or a fault.
   *  A device holds at most one call that has not connected yet: its new offer supersedes the old one (a device
   *  retrying after its own connect timeout, or one posting offers it never completes, cannot take the slots of
   *  every other device; each offer costs a werift peer and its sockets until the 15 s connect timeout). */
  async start(session: SessionRecord, offerSdp: string, extra: { ga?: GaSessionConfig } = {}): Promise<{ call: Call; answer: string }> {
    const superseded = [...this.calls.values()].filter((c) => this.isPendingOf(c, session.workspaceId, session.clientId));
    await Promise.all(superseded.map((c) => c.close('superseded', 'the device posted a newer offer')));
    if (this.shuttingDown || this.calls.size >= this.opts.maxCalls) {
      throw new CallLimitError(`the server holds its maximum of ${this.opts.maxCalls} calls`);
    }
    const call = new Call(
      session,
      {
        iceServers: this.opts.iceServers,
        additionalHostAddresses: this.opts.additionalHostAddresses,
        transcriptFamily: this.opts.transcriptFamily,
        voice: this.opts.voice,
        vadHangoverMs: this.opts.vadHangoverMs,
        ga: extra.ga,
      },
      { ...this.deps, pacer: this.pacer, speechEncoder: this.speechEncoder, onClosed: (c) => this.forget(c) },
    );
    this.calls.set(call.id, call);
    try {
      const answer = await call.answer(offerSdp);
      return { call, answer };
    } catch (err) {
      await call.close('transport', 'negotiation failed');
      throw err;
    }
  }

  /** A live call by id (GA hangup). */
  get(callId: string): Call | undefined {
    return this.calls.get(callId);
  }

  stats(): RealtimeStats {
    let audioMs = this.closedRecognition.audioMs;
    let waitMs = this.closedRecognition.waitMs;
    let connected = 0;
    let speechFrames = 0;
    let silenceFrames = 0;
    for (const c of this.calls.values()) {
      speechFrames += c.stats.outgoing.speechFrames;
      silenceFrames += c.stats.outgoing.silenceFrames;
      audioMs += c.stats.incoming.recognizedAudioMs;
      waitMs += c.stats.incoming.recognizeWaitMs;
      if (c.connected) connected++;
    }
    return { calls: this.calls.size, connectedCalls: connected, pacer: { ...this.pacer.stats }, recognizedAudioMs: audioMs, recognizeWaitMs: waitMs, speechFrames, silenceFrames };
  }

  /** Ends every call (server shutdown). */
  async close(): Promise<void> {
    this.shuttingDown = true;
    clearInterval(this.sweepTimer);
    await Promise.all([...this.calls.values()].map((c) => c.close('server_shutdown')));
    this.pacer.stop();
    if (this.ownsEncoder) await this.speechEncoder.close();
  }

  private sweep(): void {
    const now = performance.now(); // the calls' clock (call.ts): monotonic
    for (const c of this.calls.values()) {
      if (!c.connected && now - c.createdAt > this.opts.connectTimeoutMs) void c.close('connect_timeout');
      else if (c.connected && now - c.lastActivityAt > this.opts.idleTimeoutMs) void c.close('idle_timeout');
    }
  }

  private forget(call: Call): void {
    if (this.calls.get(call.id) !== call) return;
    this.calls.delete(call.id);
    this.closedRecognition.audioMs += call.stats.incoming.recognizedAudioMs;
    this.closedRecognition.waitMs += call.stats.incoming.recognizeWaitMs;
  }
}
