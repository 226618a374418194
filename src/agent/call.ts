// One call with the assistant (spec sections 4 and 6): session -> peer connection -> offer -> SDP exchange ->
// answer -> connected; then data-channel events are dispatched (transcripts, client-side functions) until the
// transport closes or the liveness watchdog declares the peer gone. The agent (agent.ts) re-creates calls.
import type { Logger } from '../common/logger.js';
import { assistantTranscriptOf, parseServerEvent, type FunctionCallItem, type ServerEvent } from '../protocol/events.js';
import { isDeviceFunction, type FunctionOutput } from '../protocol/functions.js';
import { runDeviceFunction } from './deviceFunctions.js';
import { AgentError, toAgentError } from './errors.js';
import { LivenessWatchdog } from './liveness.js';
import type { Mixer } from './mixer/mixer.js';
import type { ServiceClient } from './serviceClient.js';
import type { CallRoute, InboundRtp, TransportLayer } from './transport/transportLayer.js';

export type TranscriptRole = 'user' | 'assistant';

export interface FunctionRecord {
  callId: string;
  name: string;
  /** the arguments as received (a JSON string from the peer; never contains secrets) */
  arguments: string;
  /** undefined when the function is not client-side (the server handles it) */
  output?: FunctionOutput;
  /** for a device function: whether its output went to the peer (false: the call ended or its channel closed
   *  while the mixer changed; the change stands, the assistant was not told) */
  delivered?: boolean;
  at: string;
}

export interface CallHooks {
  onAudio(packet: InboundRtp, receivedAtNs: bigint): void;
  /** the fraction (0..1) of our audio the peer reports lost since its last report (RTCP) */
  onUplinkLoss?(fractionLost: number): void;
  onTranscript(role: TranscriptRole, text: string): void;
  onFunction(record: FunctionRecord): void;
  /** every valid event from the service, before the call handles it (listening.ts follows the turns) */
  onServerEvent?(event: ServerEvent): void;
}

export interface CallOptions {
  client: ServiceClient;
  transport: TransportLayer;
  mixer: Mixer;
  logger: Logger;
  hooks: CallHooks;
  livenessTimeoutMs: number;
  connectTimeoutMs: number;
}

/** Assistant transcripts in progress (deltas), bounded so a peer that never sends "done" cannot grow them. */
const MAX_PENDING_TRANSCRIPTS = 8;
const MAX_TRANSCRIPT_CHARS = 4_000;

export class Call {
  /** the realtime session id, once created */
  sessionId: string | undefined;
  /** Resolves (never rejects) with the reason once a connected call ends. */
  readonly ended: Promise<AgentError>;
  private resolveEnded!: (reason: AgentError) => void;
  private readonly watchdog: LivenessWatchdog;
  private readonly pending = new Map<string, string>();
  private functionQueue: Promise<void> = Promise.resolve();
  private badMessages = 0;
  private closed = false;
  private up = false;

  constructor(private readonly o: CallOptions) {
    this.ended = new Promise((r) => (this.resolveEnded = r));
    const transport = o.transport;
    this.watchdog = new LivenessWatchdog(
      o.livenessTimeoutMs,
      (_silentMs, why) => this.end(new AgentError('call_failed', why)),
      undefined,
      transport.probe ? () => transport.probe!() : undefined,
    );
  }

  /** Creates the session and connects; rejects with an AgentError (auth, network, server, call_failed). */
  async connect(signal?: AbortSignal): Promise<void> {
    // One controller per attempt, unhooked from the agent's long-lived signal afterwards: AbortSignal.any and
    // AbortSignal.timeout would keep per-attempt state alive (timers for connectTimeoutMs) across thousands of
    // reconnects.
    const ctl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort(new AgentError('call_failed', 'connect timeout'));
    }, this.o.connectTimeoutMs);
    const onParentAbort = () => ctl.abort(signal?.reason);
    signal?.addEventListener('abort', onParentAbort, { once: true });
    try {
      await this.connectWith(ctl.signal, () => timedOut);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onParentAbort);
    }
  }

  private async connectWith(sig: AbortSignal, timedOut: () => boolean): Promise<void> {
    const session = await this.o.client.createSession(['text', 'audio']);
    this.sessionId = session.id;
    const { seen, media } = this.watchdog;
    try {
      await this.o.transport.connect({
        session,
        exchangeSdp: (sdp) => this.o.client.exchangeSdp(sdp),
        signal: sig,
        handlers: {
          onAudio: (p, ns) => {
            media();
            this.o.hooks.onAudio(p, ns);
          },
          onActivity: seen,
          onUplinkLoss: (fraction) => this.o.hooks.onUplinkLoss?.(fraction),
          onMessage: (data) => {
            seen();
            this.onMessage(data);
          },
          onClosed: (reason) => this.end(reason),
        },
      });
    } catch (err) {
      const note = this.o.transport.failureNote?.();
      if (timedOut()) {
        throw new AgentError('call_failed', `the call did not connect within ${this.o.connectTimeoutMs} ms${note ? ` (${note})` : ''}`, { cause: err });
      }
      const failure = toAgentError(err, 'call_failed');
      if (note) failure.message += ` (${note})`;
      throw failure;
    }
    if (this.closed) throw new AgentError('call_failed', 'the call was closed while connecting');
    // GA calls have no session resource: the call id of the answer's Location names the call instead
    if (this.o.client.protocol === 'openai-realtime' && this.o.client.lastCallId) this.sessionId = this.o.client.lastCallId;
    this.up = true;
    this.watchdog.start();
  }

  /** consent checks the liveness watchdog made and how many were answered */
  get liveness(): { probes: number; answered: number } {
    return this.watchdog.stats;
  }

  /** direct, or through a TURN relay; null while not up or where the transport cannot tell */
  get route(): CallRoute | null {
    return (this.up && this.o.transport.route?.()) || null;
  }

  sendAudio(opus: Buffer, samples: number): void {
    if (this.up) this.o.transport.sendAudio(opus, samples);
  }

  /** Asks the service to stop the response under way (the user said stop). */
  cancelResponse(): void {
    if (this.up) this.o.transport.send({ type: 'response.cancel' });
  }

  /** Ends the call: the transport is closed so the server sees the peer go. */
  async close(): Promise<void> {
    this.end(new AgentError('call_failed', 'closed by the agent'));
    await this.o.transport.close();
  }

  private end(reason: AgentError): void {
    if (this.closed) return;
    this.closed = true;
    this.up = false;
    this.watchdog.stop();
    this.pending.clear();
    this.resolveEnded(reason);
    // A dead transport is closed too, freeing its sockets (the agent also calls close(); it is idempotent).
    void this.o.transport.close();
  }

  // ---- events ------------------------------------------------------------------------------------------------

  private onMessage(data: string | Buffer): void {
    const r = parseServerEvent(data);
    if (!r.ok) {
      // Never fatal. Logged, but a peer flooding junk cannot flood the journal.
      this.badMessages++;
      if (this.badMessages <= 20 || this.badMessages % 1000 === 0) {
        const level = r.kind === 'unknown' ? 'debug' : 'warn';
        this.o.logger[level]({ kind: r.kind, type: r.type, count: this.badMessages }, `ignored data-channel message: ${r.reason}`);
      }
      return;
    }
    this.dispatch(r.event);
  }

  private dispatch(e: ServerEvent): void {
    this.o.hooks.onServerEvent?.(e);
    if (e.type === 'conversation.item.input_audio_transcription.completed') {
      // What was said is logged at debug only: at the default level it went to the journal, kept for years on the
      // card and readable by the adm group (a family's kitchen). `status` shows the last few, from memory.
      this.o.logger.debug({ role: 'user' }, `user: ${e.transcript}`);
      this.o.hooks.onTranscript('user', e.transcript);
      return;
    }
    const t = assistantTranscriptOf(e);
    if (t) {
      const key = ('item_id' in e && e.item_id) || ('response_id' in e && e.response_id) || '';
      if (t.phase === 'delta') {
        if (!this.pending.has(key) && this.pending.size >= MAX_PENDING_TRANSCRIPTS) {
          this.pending.delete(this.pending.keys().next().value as string);
        }
        this.pending.set(key, ((this.pending.get(key) ?? '') + t.text).slice(-MAX_TRANSCRIPT_CHARS));
      } else {
        const text = t.text || this.pending.get(key) || '';
        this.pending.delete(key);
        this.o.logger.debug({ role: 'assistant' }, `assistant: ${text}`); // debug only, as the user's words
        this.o.hooks.onTranscript('assistant', text);
      }
      return;
    }
    switch (e.type) {
      case 'response.output_item.done':
        if (e.item.type === 'function_call') this.onFunctionCall(e.item as FunctionCallItem);
        return;
      case 'error':
        this.o.logger.warn({ code: e.error.code, type: e.error.type }, `the server reported an error: ${e.error.message}`);
        return;
      default:
        return;
    }
  }

  private onFunctionCall(item: FunctionCallItem): void {
    const at = new Date().toISOString();
    if (!isDeviceFunction(item.name)) {
      // stop_audio and anything else run on the voice server (spec section 6): no action, no output.
      this.o.logger.debug({ function: item.name, callId: item.call_id }, 'function handled by the server');
      this.o.hooks.onFunction({ callId: item.call_id, name: item.name, arguments: item.arguments, at });
      return;
    }
    // One at a time, in arrival order: "up" then "up" must give +20.
    this.functionQueue = this.functionQueue.then(async () => {
      const output = await runDeviceFunction(this.o.mixer, item.name, item.arguments);
      // The mixer changed whatever happens to the call: status must show it. Before, a call that ended while the
      // mixer ran left `status` with the old volume, and an output the channel refused was logged as sent.
      const delivered =
        !this.closed &&
        this.o.transport.send({
          type: 'conversation.item.create',
          item: { type: 'function_call_output', call_id: item.call_id, output: JSON.stringify(output) },
        }) &&
        this.o.transport.send({ type: 'response.create' });
      const log = output.success ? this.o.logger.info.bind(this.o.logger) : this.o.logger.warn.bind(this.o.logger);
      log({ function: item.name, callId: item.call_id, output }, `function ${item.name}: ${output.success ? output.result.message : output.error}`);
      if (!delivered) this.o.logger.warn({ function: item.name, callId: item.call_id }, `function ${item.name}: its output was not sent (the call ended or its data channel closed); the assistant was not told`);
      this.o.hooks.onFunction({ callId: item.call_id, name: item.name, arguments: item.arguments, output, delivered, at });
    });
  }
}
