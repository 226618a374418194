// The speaker agent: opens the sound card once, keeps a call with the assistant up forever (re-creating it
// with the reconnect policy after any failure), routes audio between the card and the call, and keeps a
// status snapshot for `speaker-agent status`. The CLI wraps it with sd_notify and a status socket.
import { EventEmitter } from 'node:events';
import type { Logger } from '../common/logger.js';
import type { AudioBackend, Xruns } from './audio/audioDevice.js';
import type { AecStats } from './audio/echoCanceller.js';
import { Call, type FunctionRecord, type TranscriptRole } from './call.js';
import { openCallAudio, type CallAudio } from './callAudio.js';
import { AgentError, toAgentError } from './errors.js';
import { fingerprint, type Identity } from './identity.js';
import type { Mixer, MixerState } from './mixer/mixer.js';
import { DefaultReconnectPolicy, type ReconnectPolicy } from './reconnectPolicy.js';
import { serviceClient, webrtcTransportOptions } from './device.js';
import type { ServiceClient } from './serviceClient.js';
import type { Settings } from './settings.js';
import type { CallRoute, TransportFactory } from './transport/transportLayer.js';
import { ListeningStateMachine, type ListeningChange, type ListeningMode, type ListeningState, type ServiceSignal } from './listening.js';
import { EarconPlayer, loadEarcons, type EarconName } from './audio/earcons.js';
import { readMicMuted, writeMicMuted } from './micMute.js';
import { FailureStreak } from './failureStreak.js';
import { openWakeWordEngine, type WakeEngineChoice, type WakeEvent, type WakeWordEngine } from './wake/wakeWord.js';
import { everyMs, type SharedInterval } from '../common/sharedInterval.js';
import type { ServerEvent } from '../protocol/events.js';
import { isDeviceFunction } from '../protocol/functions.js';
// Static on purpose: werift then loads with the agent, not after start(), where it would wait behind the sound
// card's (synchronous) opening and delay the first call by ~0.4 s (bench agent-call).
import { WebrtcTransport } from './transport/webrtcTransport.js';

/** how far before the end of a wake word its start lies, about (flite's "hey jarvis" is 0.7-0.9 s long): the
 *  speaker heard anywhere in it makes the wake word suspect (onWake) */
const WAKE_PHRASE_SPAN_MS = 1_000;
/** The wake thread's backlog when fed live (WakeWordOptions.maxBacklogMs): further behind, audio is dropped rather
 *  than queued without a bound (~100 KB a second behind). Its delay is 0.1-0.35 s here (README, issue #16). */
const WAKE_BACKLOG_MS = 3_000;
/** A wake event later than this after the end of its phrase is ignored (onWake); one earlier opens with all that
 *  was said since, so the wake gate keeps this much (~480 KB): a ring shorter than the delay sent the words from
 *  its oldest frame, the first ones lost. */
const WAKE_TOO_LATE_MS = 5_000;

export type AgentState = 'connecting' | 'connected' | 'backoff' | 'stopped';

export interface TranscriptEntry {
  role: TranscriptRole;
  text: string;
  at: string;
}

export interface AgentStatus {
  state: AgentState;
  server: string;
  clientId: string;
  secretFingerprint: string;
  callId: string | null;
  connectedSince: string | null;
  /** how long the call has been up, on the monotonic clock: connectedSince is the wall clock's, which a board
   *  without a real-time clock steps when NTP syncs (a call then showed "up 2160h") */
  connectedForMs?: number | null;
  /** the connected call's packets: straight to the service, or through its TURN relay (an extra hop; the relay's
   *  operator carries the encrypted media); null while not connected */
  route?: CallRoute | null;
  /** calls re-created after the first one */
  reconnects: number;
  /** agoMs: on the monotonic clock (see connectedForMs) */
  lastError: { code: string; message: string; at: string; agoMs?: number } | null;
  /** the most recent transcripts, oldest first (bounded) */
  lastTranscripts: TranscriptEntry[];
  volume: MixerState | null;
  startedAt: string | null;
  /** when the next attempt starts while in backoff */
  nextAttemptAt: string | null;
  /** the same on the monotonic clock (see connectedForMs) */
  nextAttemptInMs?: number | null;
  /** the sound card's devices (reopened in the background when they fail) */
  audioDevices: { microphone: string; speaker: string } | null;
  /** the sound card's xruns since start (PortAudio's count: speaker underruns, microphone overruns); null where
   *  the backend does not count them */
  xruns: Xruns | null;
  /** the echo canceller (audio.duplex auto): state, delay, echo reduction; null when it does not run */
  echoCanceller: AecStats | null;
  /** issue #16: the listening state (the LED's), the mode, the privacy mute, the wake word engine */
  listening: ListeningStatus;
}

/** What setMicMuted did besides muting: whether the state is kept across a restart (mic.json written). */
export interface MicMuteResult {
  kept: boolean;
  /** why not */
  problem?: string;
}

export interface ListeningStatus {
  state: ListeningState;
  mode: ListeningMode;
  micMuted: boolean;
  /** whether microphone audio goes onto the call now */
  micOnWire: boolean;
  wakeWord: { phrase: string; engine: 'loading' | 'ready' | 'unavailable' | 'not used'; error?: string; /** which engine runs: openwakeword or pocketsphinx */ kind?: string };
}

/** One line of the state stream (GET /events, `status --follow`). */
export interface ListeningEvent extends ListeningStatus {
  reason: string;
  previous: ListeningState;
  at: string;
}

export type WakeEngineFactory = (o: { phrase: string; sensitivity: number; engine?: WakeEngineChoice; model?: string; logger: Logger }) => Promise<WakeWordEngine>;

export interface SpeakerAgentDeps {
  settings: Settings;
  identity: Identity;
  audio: AudioBackend;
  mixer: Mixer;
  logger: Logger;
  reconnectPolicy?: ReconnectPolicy;
  /** default: device.ts's (a WebrtcTransport per call) */
  transportFactory?: TransportFactory;
  /** default: device.ts's client for these settings and identity */
  client?: ServiceClient;
  /** where the privacy mute is kept across restarts (micMute.ts); none: not persisted */
  micStateFile?: string;
  /** default: the local engine (wake/wakeWord.ts) */
  wakeEngineFactory?: WakeEngineFactory;
}

export const MAX_TRANSCRIPTS = 20;

const TOFU_EXPLANATION =
  'The server uses trust on first use: it accepts only the secret this client id first connected with. ' +
  'If identity.json was lost or replaced, restore it from a backup, or ask the workspace admin to reset this ' +
  'client (the next connection then enrolls this secret for the same id); if the workspace key is wrong, ' +
  '`speaker-agent enroll --workspace-key KEY`. Retrying slowly meanwhile.';

export interface SpeakerAgentEvents {
  state: [AgentState];
  connected: [{ callId: string }];
  transcript: [TranscriptEntry];
  function: [FunctionRecord];
  listening: [ListeningEvent];
  error: never;
}

export class SpeakerAgent extends EventEmitter {
  private readonly policy: ReconnectPolicy;
  private readonly transportFactory: TransportFactory;
  private readonly client: ServiceClient;
  private readonly log: Logger;
  private state: AgentState = 'stopped';
  private audio: CallAudio | undefined;
  private call: Call | undefined;
  private loop: Promise<void> | undefined;
  private stopper: AbortController | undefined;
  private readonly transcripts: TranscriptEntry[] = [];
  readonly listening: ListeningStateMachine;
  private wakeEngine: WakeWordEngine | undefined;
  private wakeEngineSince = 0;
  private wakeRestarts = 0;
  private wakeLastReason = '';
  private wakeReloadTimer: NodeJS.Timeout | undefined;
  /** a wake word engine being started (its thread loading its models), which stop() waits for */
  private wakeLoading: Promise<void> | undefined;
  private wakeStatus: ListeningStatus['wakeWord'];
  private keepAliveTimer: SharedInterval | undefined;
  /** where the wake gate's pre-roll starts when the next change opens it (set by a wake event) */
  private preRollFromNs: bigint | undefined;
  private micMuted: boolean;
  private muteQueue: Promise<unknown> = Promise.resolve();
  /** hrtime (ns) of the last wake event handled and of the listening it opened, for the bench */
  readonly wakeTiming = { endedAtNs: 0n, handledAtNs: 0n };
  private status = {
    callId: null as string | null,
    connectedSince: null as string | null,
    reconnects: 0,
    lastError: null as AgentStatus['lastError'],
    volume: null as MixerState | null,
    startedAt: null as string | null,
    nextAttemptAt: null as string | null,
  };
  /** performance.now() of the same moments, for the durations status shows */
  private readonly monoAt = { connected: 0, lastError: 0, nextAttempt: 0 };
  /** what the journal hears of failed attempts (failureStreak.ts) */
  private readonly failures = new FailureStreak();

  constructor(private readonly deps: SpeakerAgentDeps) {
    super();
    const s = deps.settings;
    this.log = deps.logger;
    this.policy =
      deps.reconnectPolicy ??
      new DefaultReconnectPolicy({
        initialDelayMs: s.reconnect.initialDelayMs,
        maxDelayMs: s.reconnect.maxDelayMs,
        authRejectedDelayMs: s.reconnect.authRejectedDelayMs,
        fastRetryWindowMs: s.reconnect.fastRetryWindowMs,
        fastRetryMaxDelayMs: s.reconnect.fastRetryMaxDelayMs,
      });
    const transportOptions = webrtcTransportOptions(s); // once: the calls share one choice of TURN URL
    this.transportFactory = deps.transportFactory ?? (() => new WebrtcTransport(transportOptions));
    this.client = deps.client ?? serviceClient(s, deps.identity);
    this.listening = new ListeningStateMachine({ mode: s.listening.mode, silenceMs: s.listening.silenceMs, followUpMs: s.listening.followUpMs });
    const kept = deps.micStateFile ? readMicMuted(deps.micStateFile) : { muted: false };
    if (kept.problem) this.log.warn({ file: deps.micStateFile }, `privacy mute: ${kept.problem}; the microphone stays muted until \`speaker-agent mic on\``);
    this.micMuted = kept.muted;
    this.listening.setMuted(kept.muted);
    this.wakeStatus = { phrase: s.listening.wakePhrase, engine: s.listening.mode === 'wake' ? 'loading' : 'not used' };
    this.listening.on('change', (c) => this.onListeningChange(c));
    this.listening.on('opened', () => this.earcon('opened'));
    this.listening.on('closed', () => this.earcon('closed'));
  }

  /** Starts keeping the call up and opens the sound card (a busy or missing device is retried in the
   *  background, the call goes on meanwhile; AgentError 'audio' only if the audio stack itself cannot load). */
  async start(): Promise<void> {
    if (this.loop) return;
    this.status.startedAt = new Date().toISOString();
    this.log.info(
      { server: this.deps.settings.server.url, clientId: this.deps.identity.clientId, secretFingerprint: fingerprint(this.deps.identity.clientSecret), mixer: this.deps.mixer.description },
      'speaker agent starting',
    );
    this.stopper = new AbortController();
    // The first call is set up while the sound card opens: both take a few hundred ms at start-up.
    this.loop = this.keepCallUp(this.stopper.signal);
    this.deps.mixer.get().then(
      (v) => (this.status.volume = v),
      (err) => this.log.warn({ err: toAgentError(err, 'mixer').toJSON() }, 'cannot read the mixer'),
    );
    try {
      const earcons = new EarconPlayer(loadEarcons(this.deps.settings.earcons));
      const mutedAtOpen = this.micMuted;
      this.audio = await openCallAudio({
        backend: this.deps.audio,
        settings: this.deps.settings.audio,
        logger: this.log,
        listening: {
          preRollMs: this.deps.settings.listening.preRollMs,
          maxWakeLatencyMs: WAKE_TOO_LATE_MS,
          gateOpen: false,
          microphoneMuted: mutedAtOpen,
          earcons,
          onServiceAudio: (audible) => this.listening.playback(audible),
        },
      });
      if (mutedAtOpen) this.log.info('privacy mute is on (kept from before): the microphone is not opened');
      // A `mic off` (or `on`) while the sound card opened (the status socket answers from the start) found no
      // device to close: applied now, in the mute commands' order. Without this the capture device stayed open
      // for the whole run while the status said muted.
      const audio = this.audio;
      const reconcile = this.muteQueue.then(async () => {
        if (this.micMuted !== mutedAtOpen) await audio.setMicrophoneOpen(!this.micMuted);
      });
      this.muteQueue = reconcile.catch(() => undefined);
      await reconcile;
      this.keepAliveTimer = everyMs(250, () => this.audio?.uplink.keepAlive());
      if (this.deps.settings.listening.mode === 'wake') this.startWakeLoad();
    } catch (err) {
      await this.stop();
      throw toAgentError(err, 'audio');
    }
    const call = this.call;
    if (call && this.state === 'connected') this.audio.setSink((opus, samples) => call.sendAudio(opus, samples));
  }

  /** Closes the call cleanly (the server sees the peer go) and the audio devices. */
  private stopping: Promise<void> | undefined;

  /** Idempotent: a second caller (e.g. a repeated SIGTERM) waits for the same shutdown. */
  stop(): Promise<void> {
    if (!this.loop) return this.stopping ?? Promise.resolve();
    this.stopping ??= this.doStop().finally(() => (this.stopping = undefined));
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    // Closing sockets and audio streams can leave nothing that holds the event loop open (native callbacks
    // pending); without this the process would exit half-way through a SIGTERM shutdown.
    const keepAlive = setInterval(() => undefined, 1_000);
    try {
      this.stopper?.abort(new AgentError('call_failed', 'agent stopping'));
      this.keepAliveTimer?.stop();
      this.keepAliveTimer = undefined;
      const call = this.call;
      await call?.close();
      await this.loop;
      this.loop = undefined;
      await this.audio?.close().catch((err) => this.log.warn({ err: toAgentError(err, 'audio').toJSON() }, 'closing audio failed'));
      clearTimeout(this.wakeReloadTimer);
      this.wakeReloadTimer = undefined;
      // An engine still starting closes itself once it has (the loop is gone): waited for, since the process
      // exiting under a thread that is loading its models terminates it inside ONNX Runtime, which aborts the
      // process (SIGABRT at `systemctl stop` soon after a start, on a slow board: check-systemd-vm.sh).
      // (bounded: the daemon exits at its deadline, and exitNow leaves without terminating the thread)
      await Promise.race([this.wakeLoading?.catch(() => undefined), new Promise((r) => setTimeout(r, 1_000).unref())]);
      const engine = this.wakeEngine;
      this.wakeEngine = undefined;
      await engine?.close().catch((err) => this.log.warn({ err: (err as Error).message }, 'closing the wake word engine failed'));
      this.audio = undefined;
      this.setState('stopped');
      this.log.info('speaker agent stopped');
    } finally {
      clearInterval(keepAlive);
    }
  }

  snapshot(): AgentStatus {
    return {
      state: this.state,
      server: this.deps.settings.server.url,
      clientId: this.deps.identity.clientId,
      secretFingerprint: fingerprint(this.deps.identity.clientSecret),
      callId: this.status.callId,
      connectedSince: this.status.connectedSince,
      connectedForMs: this.status.connectedSince ? Math.round(performance.now() - this.monoAt.connected) : null,
      route: this.state === 'connected' ? (this.call?.route ?? null) : null,
      reconnects: this.status.reconnects,
      lastError: this.status.lastError && { ...this.status.lastError, agoMs: Math.round(performance.now() - this.monoAt.lastError) },
      lastTranscripts: [...this.transcripts],
      volume: this.status.volume,
      startedAt: this.status.startedAt,
      nextAttemptAt: this.status.nextAttemptAt,
      nextAttemptInMs: this.status.nextAttemptAt ? Math.max(0, Math.round(this.monoAt.nextAttempt - performance.now())) : null,
      audioDevices: this.audio?.deviceStates() ?? null,
      xruns: this.deps.audio.xruns?.() ?? null,
      echoCanceller: this.audio?.echoCanceller() ?? null,
      listening: this.listeningStatus(),
    };
  }

  listeningStatus(): ListeningStatus {
    return {
      state: this.listening.state,
      mode: this.listening.mode,
      micMuted: this.micMuted,
      micOnWire: this.listening.micOnWire,
      wakeWord: { ...this.wakeStatus },
    };
  }

  // ---- listening (issue #16) -----------------------------------------------------------------------------

  /** `speaker-agent listen`: opens listening now (any mode). False when it cannot (muted, or no call: then the
   *  "service unreachable" earcon says so). */
  listen(): boolean {
    if (this.micMuted) {
      // the button was pressed and nothing will be heard: the mute says so again (it was silent)
      this.earcon('muted');
      return false;
    }
    if (this.listening.state === 'offline') {
      this.earcon('unreachable');
      return false;
    }
    return this.listening.listen();
  }

  /** `stop`: closes listening and cuts the assistant's answer (response.cancel, playback dropped). */
  stopListening(): void {
    const speaking = this.listening.state === 'speaking' || this.listening.state === 'thinking';
    this.listening.stop();
    if (speaking) {
      this.call?.cancelResponse();
      this.audio?.resetDownlink();
    }
  }

  /**
   * Privacy mute. A mute is applied at once, then written to disk; an unmute is written first, then applied: so a
   * card slow to write (an SD card stalled for seconds) never keeps the microphone open after `mic off` (a crash
   * in the moment before the file is written, the command not yet answered, restarts unmuted; an unmute's crash
   * restarts muted). A disk that refuses the write (an SD card
   * the kernel remounted read-only after errors, a full disk) does not stop it: the mute (or unmute) is applied
   * all the same, and the answer says it is not kept across a restart. Before, the write came first and its
   * error ended the command with the microphone open and sending. (An unmute not kept starts the next run muted,
   * or as the file last said.)
   */
  setMicMuted(muted: boolean): Promise<MicMuteResult> {
    const run = async (): Promise<MicMuteResult> => {
      if (muted) await this.applyMicMuted(true);
      const result = await this.keepMicMuted(muted);
      if (!muted) await this.applyMicMuted(false);
      return result;
    };
    const p = this.muteQueue.then(run);
    this.muteQueue = p.catch(() => undefined);
    return p;
  }

  /** Reads mic.json again and applies a mute found there. The daemon calls it once its status socket listens: a
   *  `mic off` in the moment between the constructor's read and the socket (no socket yet: the CLI wrote the file
   *  and said "MUTED") was otherwise not applied, and the agent listened. An unmute there is left for `mic on`. */
  async reloadMicMute(): Promise<void> {
    if (!this.deps.micStateFile || this.micMuted) return;
    if (readMicMuted(this.deps.micStateFile).muted) {
      this.log.info('privacy mute: mic.json was set to muted while the agent started: applied');
      await this.setMicMuted(true);
    }
  }

  private async applyMicMuted(muted: boolean): Promise<void> {
    if (muted === this.micMuted) return;
    this.micMuted = muted;
    this.listening.setMuted(muted); // first: nothing goes on the wire from here on
    this.earcon(muted ? 'muted' : 'unmuted');
    await this.audio?.setMicrophoneOpen(!muted);
    this.log.info(muted ? 'privacy mute on: the microphone is closed' : 'privacy mute off: the microphone is open (listening for the wake word)');
  }

  /** mic.json written; its failure is reported, not thrown */
  private async keepMicMuted(muted: boolean): Promise<MicMuteResult> {
    if (!this.deps.micStateFile) return { kept: true };
    try {
      await writeMicMuted(this.deps.micStateFile, muted);
      return { kept: true };
    } catch (err) {
      const problem = `cannot write ${this.deps.micStateFile}: ${(err as Error).message}`;
      this.log.error({ err: problem }, `privacy mute ${muted ? 'on' : 'off'} is applied but not kept across a restart`);
      return { kept: false, problem };
    }
  }

  private startWakeLoad(): void {
    const loading = this.loadWakeEngine().finally(() => {
      if (this.wakeLoading === loading) this.wakeLoading = undefined;
    });
    this.wakeLoading = loading;
  }

  private async loadWakeEngine(): Promise<void> {
    const l = this.deps.settings.listening;
    const factory = this.deps.wakeEngineFactory ?? openWakeWordEngine;
    try {
      const engine = await factory({ phrase: l.wakePhrase, sensitivity: l.wakeSensitivity, engine: l.wakeEngine, model: l.wakeModel, logger: this.log, maxBacklogMs: WAKE_BACKLOG_MS, startTimeoutMs: l.wakeStartTimeoutMs });
      if (!this.loop) {
        await engine.close();
        return;
      }
      this.wakeEngine = engine;
      engine.onWake((e) => this.onWake(e));
      engine.onFailure?.((err) => this.onWakeEngineFailed(engine, err));
      this.wakeEngineSince = performance.now();
      this.audio?.wakeGate.setEngine(engine);
      const kind = (engine as { engine?: string }).engine;
      this.wakeStatus = { phrase: l.wakePhrase, engine: 'ready', ...(kind ? { kind } : {}) };
      this.log.info({ phrase: l.wakePhrase, sensitivity: l.wakeSensitivity, engine: kind }, 'wake word engine ready');
    } catch (err) {
      const e = toAgentError(err, 'internal');
      if (e.code === 'config_invalid') {
        this.wakeStatus = { phrase: l.wakePhrase, engine: 'unavailable', error: e.message };
        // Safe side: the microphone stays off the wire; only `speaker-agent listen` opens it.
        this.log.error({ err: e.toJSON() }, 'the wake word engine did not load: only `speaker-agent listen` opens the microphone');
        return;
      }
      // Anything else may pass (a thread that died while starting, a model read failing on a worn card, a library
      // apt installs later): tried again. Before, a reload after a crash that failed once left the speaker
      // without its wake word until a restart, and `status` said `unavailable` for weeks.
      if (this.loop) this.scheduleWakeReload(e.message, false);
    }
  }

  /** A crashed engine is loaded again, after 1 s, doubling to 60 s while it keeps failing within a minute. Until
   *  then `wake` behaves like `manual` (the safe side), and status says the engine is loading. */
  private onWakeEngineFailed(engine: WakeWordEngine, err: Error): void {
    if (this.wakeEngine !== engine || !this.loop) return;
    this.wakeEngine = undefined;
    this.audio?.wakeGate.setEngine(undefined);
    this.scheduleWakeReload(err.message, true);
  }

  /** The next load of the wake word engine, after wakeReloadDelayMs; an engine that ran for a minute before it
   *  failed starts the count again. Logged in full for the first five tries and whenever the reason changes (a
   *  board without its model would otherwise log a line at every try). */
  private scheduleWakeReload(reason: string, afterRun: boolean): void {
    const l = this.deps.settings.listening;
    this.wakeRestarts = afterRun && performance.now() - this.wakeEngineSince > 60_000 ? 1 : this.wakeRestarts + 1;
    const delayMs = wakeReloadDelayMs(this.wakeRestarts);
    this.wakeStatus = { phrase: l.wakePhrase, engine: 'loading', error: reason };
    const what = afterRun ? 'wake word engine failed: loading it again' : 'the wake word engine did not load: trying again (until then only `speaker-agent listen` opens the microphone)';
    if (this.wakeRestarts <= 5 || reason !== this.wakeLastReason) this.log.warn({ err: reason, restartInMs: delayMs, attempt: this.wakeRestarts }, what);
    else this.log.debug({ err: reason, restartInMs: delayMs, attempt: this.wakeRestarts }, what);
    this.wakeLastReason = reason;
    clearTimeout(this.wakeReloadTimer);
    this.wakeReloadTimer = setTimeout(() => {
      this.wakeReloadTimer = undefined;
      if (this.loop && !this.wakeEngine) this.startWakeLoad();
    }, delayMs);
    this.wakeReloadTimer.unref();
  }

  private onWake(e: WakeEvent): void {
    // how long after the end of the wake word it was heard (the engine's delay): the pre-roll covers it
    const heardAfterMs = Math.round(Number(process.hrtime.bigint() - e.endedAtNs) / 1e6);
    this.log.info({ phrase: e.phrase, score: e.score, heardAfterMs }, 'wake word heard');
    if (heardAfterMs > WAKE_TOO_LATE_MS) {
      // An engine that fell far behind (a stall of its thread): the microphone would open on the room long after
      // anyone asked, with an earcon nobody waits for any more (before the backlog's bound, minutes late). The
      // user says it again; the log says why. A wake a few seconds late still opens it, with all said since:
      // the user who waits for the earcon then speaks.
      this.log.warn({ heardAfterMs, maxMs: WAKE_TOO_LATE_MS }, 'wake word ignored: heard too late (the engine is behind)');
      return;
    }
    if (this.micMuted) return;
    if (this.listening.state === 'offline') {
      this.earcon('unreachable');
      return;
    }
    // The assistant's own voice must not open the microphone: the engine hears the microphone before the
    // half-duplex gate, so with the speaker's sound uncancelled (duplex half; auto before the canceller
    // converged) "hey jarvis" in an answer, an announcement or a story opened listening and cut the answer.
    // A wake word with the speaker playing at any time in its last second is ignored; where the echo is cancelled (auto,
    // converged; full: the sound server's) the wake word over an answer still cuts it.
    const agoMs = Number(process.hrtime.bigint() - e.endedAtNs) / 1e6;
    if (this.audio?.heardSpeakerUncancelled(agoMs + WAKE_PHRASE_SPAN_MS, agoMs)) {
      this.log.info({ phrase: e.phrase, state: this.listening.state }, 'wake word ignored: heard while the speaker played uncancelled (it may be the assistant\'s own voice)');
      return;
    }
    if (this.listening.state === 'speaking' || this.listening.state === 'thinking') {
      // the wake word over an answer interrupts it, as on any smart speaker: "hey jarvis, stop"
      this.call?.cancelResponse();
      this.audio?.resetDownlink();
      this.log.info({ state: this.listening.state }, 'wake word over the answer: answer cut');
    }
    this.preRollFromNs = e.endedAtNs - BigInt(this.deps.settings.listening.preRollMs) * 1_000_000n;
    this.wakeTiming.endedAtNs = e.endedAtNs;
    this.wakeTiming.handledAtNs = process.hrtime.bigint();
    this.listening.wake();
    this.preRollFromNs = undefined;
    this.log.debug({ preRollFrames: this.audio?.wakeGate.backlog }, 'listening opened by the wake word');
  }

  private onListeningChange(c: ListeningChange): void {
    const gate = this.audio?.wakeGate;
    if (gate) {
      if (c.micOnWire && !gate.open) gate.openFrom(this.preRollFromNs);
      else if (!c.micOnWire && gate.open) gate.close();
    }
    // debug: five or six lines per exchange, kept by journald for years (an SD-card review); `status --follow`
    // streams these states, and "wake word heard" and the functions stay at info
    this.log.debug({ state: c.state, previous: c.previous, reason: c.reason, micOnWire: c.micOnWire }, `listening: ${c.state}`);
    this.emit('listening', { ...this.listeningStatus(), reason: c.reason, previous: c.previous, at: new Date().toISOString() });
  }

  /** when the last earcon was asked for and its first frame written (hrtime ns), for the bench */
  get earconTiming(): { requestedNs: bigint; firstWrittenNs: bigint } | undefined {
    return this.audio?.earcons.timing;
  }

  /** Plays an earcon and emits 'earcon' (its name) for tests and observers. */
  private earcon(name: EarconName): void {
    this.audio?.earcons.play(name);
    this.emit('earcon', name);
  }

  private onServerEvent(e: ServerEvent): void {
    let signal: ServiceSignal | undefined;
    switch (e.type) {
      case 'input_audio_buffer.speech_started':
      case 'input_audio_buffer.speech_stopped':
      case 'conversation.item.input_audio_transcription.completed':
      case 'response.created':
      case 'response.done':
      case 'output_audio_buffer.started':
      case 'output_audio_buffer.stopped':
        signal = e.type;
        break;
      case 'response.output_audio_transcript.delta':
      case 'response.audio_transcript.delta':
        signal = 'assistant_transcript';
        break;
      case 'response.output_item.done':
        if (e.item.type === 'function_call' && isDeviceFunction(e.item.name)) signal = 'function_call';
        break;
      default:
        break;
    }
    if (signal) this.listening.service(signal);
  }

  private setState(s: AgentState): void {
    if (s === this.state) return;
    this.state = s;
    this.emit('state', s);
  }

  private async keepCallUp(signal: AbortSignal): Promise<void> {
    let attempt = 0;
    let streakStart = 0;
    let calls = 0;
    let lastErrorCode: string | undefined;
    const stableAfterMs = this.deps.settings.reconnect.stableAfterMs;
    while (!signal.aborted) {
      this.setState('connecting');
      const call = new Call({
        client: this.client,
        transport: this.transportFactory(),
        mixer: this.deps.mixer,
        logger: this.log,
        livenessTimeoutMs: this.deps.settings.call.livenessTimeoutMs,
        connectTimeoutMs: this.deps.settings.call.connectTimeoutMs,
        hooks: {
          onAudio: (p, ns) => this.audio?.push(p, ns),
          onUplinkLoss: (fraction) => this.audio?.uplink.reportLoss(fraction),
          onServerEvent: (e) => this.onServerEvent(e),
          onTranscript: (role, text) => this.addTranscript(role, text),
          onFunction: (rec) => {
            if (rec.output?.success) {
              this.status.volume = { volumePercent: rec.output.result.volume_level, muted: rec.output.result.muted };
            }
            this.emit('function', rec);
          },
        },
      });
      this.call = call;
      let reason: AgentError;
      let upSince = 0;
      try {
        await call.connect(signal);
        if (signal.aborted) throw new AgentError('call_failed', 'agent stopping');
        upSince = performance.now();
        if (calls > 0) this.status.reconnects++;
        calls++;
        this.status.callId = call.sessionId ?? null;
        this.status.connectedSince = new Date().toISOString();
        this.monoAt.connected = performance.now();
        this.status.nextAttemptAt = null;
        lastErrorCode = undefined;
        this.audio?.setSink((opus, samples) => call.sendAudio(opus, samples));
        this.setState('connected');
        this.listening.setCallUp(true);
        const streak = this.failures.end();
        const after = streak.attempts ? { failedAttempts: streak.attempts, failingForMs: Math.round(streak.forMs) } : {};
        this.log.info({ callId: call.sessionId, route: call.route, reconnects: this.status.reconnects, ...after }, 'call connected');
        this.emit('connected', { callId: call.sessionId ?? '' });
        reason = await call.ended;
      } catch (err) {
        reason = toAgentError(err, 'call_failed');
      }
      this.audio?.setSink(undefined);
      // A call lost in the middle of a conversation is said so, once. One lost while nobody talks to the speaker
      // is not: a session at its maximum length, a DHCP renewal or a router reboot at 3 am played the tone into
      // a sleeping house, although the next call was usually up within a second; a wake word said while the
      // call is down still plays it.
      // (in `always` mode, listening is its resting state: only thinking and speaking count there)
      const st = this.listening.state;
      const inConversation = st === 'thinking' || st === 'speaking' || (st === 'listening' && this.deps.settings.listening.mode !== 'always');
      this.listening.setCallUp(false);
      if (upSince && !signal.aborted && inConversation) this.earcon('unreachable');
      await call.close();
      this.client.dropIdleConnections(); // what ended the call may have left a pooled socket nothing answers on
      this.call = undefined;
      this.audio?.resetDownlink();
      this.status.callId = null;
      this.status.connectedSince = null;
      if (signal.aborted) break;
      this.status.lastError = { code: reason.code, message: reason.message, at: new Date().toISOString() };
      this.monoAt.lastError = performance.now();

      // Backoff: a call that stayed up long enough starts a fresh streak.
      if (upSince && performance.now() - upSince >= stableAfterMs) attempt = 0;
      if (attempt === 0) streakStart = performance.now();
      attempt++;
      const delay = this.policy.nextDelayMs({ attempt, lastError: reason, elapsedMs: performance.now() - streakStart });
      this.logFailure(reason, lastErrorCode, delay, upSince > 0);
      lastErrorCode = reason.code;
      if (delay === null) {
        this.log.error({ err: reason.toJSON() }, 'the reconnect policy gave up: no more calls');
        break;
      }
      this.setState('backoff');
      this.status.nextAttemptAt = new Date(Date.now() + delay).toISOString();
      this.monoAt.nextAttempt = performance.now() + delay;
      await sleep(delay, signal);
    }
    this.status.nextAttemptAt = null;
  }

  private logFailure(reason: AgentError, lastCode: string | undefined, delay: number | null, wasUp: boolean): void {
    const fields = { err: reason.toJSON(), retryInMs: delay };
    if (reason.code === 'auth_rejected') {
      // Once per streak with the explanation; repeats would only fill the journal.
      if (lastCode !== 'auth_rejected') this.log.error(fields, `${reason.message}. ${TOFU_EXPLANATION}`);
      else this.log.debug(fields, reason.message);
      return;
    }
    if (wasUp) return this.log.warn(fields, `call ended: ${reason.message}`);
    const line = this.failures.failed(reason.code);
    if (line.level === 'debug') this.log.debug(fields, `call failed: ${reason.message}`);
    else if ('attempts' in line) {
      const minutes = Math.round(line.forMs / 60_000);
      this.log.warn({ ...fields, attempts: line.attempts, failingForMs: Math.round(line.forMs) }, `call still failing (${line.attempts} attempts in ${minutes} min): ${reason.message}`);
    } else this.log.warn(fields, `call failed: ${reason.message}`);
  }

  private addTranscript(role: TranscriptRole, text: string): void {
    const entry = { role, text, at: new Date().toISOString() };
    this.transcripts.push(entry);
    if (this.transcripts.length > MAX_TRANSCRIPTS) this.transcripts.shift();
    this.emit('transcript', entry);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** How long before the `attempt`th load in a row of the wake word engine (1 = the first after a failure): 1 s,
 *  doubling while loads keep failing, to an hour from the 13th (68 minutes in). Each try starts a thread that loads
 *  koffi and pocketsphinx, and each leaves memory behind for good (measured, 2 Dec: 150 starts failing on a missing
 *  acoustic model, RSS 97.6 -> 103.7 MB after the first 25, ~50 KB a start): at the old ceiling of 60 s, a speaker
 *  whose engine can never load tried 1,440 times a day (~70 MB a day); now 24 times. A transient cause (a model
 *  unreadable for a moment, a library installed later) is still retried within the hour. */
export function wakeReloadDelayMs(attempt: number): number {
  return Math.min(3_600_000, 1_000 * 2 ** Math.min(12, Math.max(0, attempt - 1)));
}
