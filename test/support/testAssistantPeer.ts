// TEST PEER — stands in for the companion server (the real peer, built separately) in the agent's tests and
// benchmark. It is a real HTTP server plus a real werift answerer that speaks the spec's realtime routes:
// POST /v1/realtime/sessions and POST /v1/realtime (device headers, trust on first use, the realtime error
// shape), one Opus track each way and the 'oai-events' data channel. It sends audio continuously (silence
// frames unless told to play a tone), as the companion server does.
//
// STAND-IN UPSTREAM (option `upstream`): instead of the spec's routes it answers the GA WebRTC interface of the
// widely used realtime protocol, as its public documentation describes it (there is no internet here):
// POST /v1/realtime/client_secrets with "Authorization: Bearer <API key>" -> {value: "ek_...", expires_at,
// session}; POST /v1/realtime/calls with "Bearer ek_..." and application/sdp -> 201, Location
// /v1/realtime/calls/rtc_..., the answer; on the data channel a session.created without an id. The companion's
// gateway is tested against it.
//
// Two ways to use it:
//  - TestAssistantPeer: in-process.
//  - TestAssistantPeerProcess: the same peer in a child process (testAssistantPeerMain.ts), so a test can kill
//    it for real (SIGKILL) or freeze it (SIGSTOP: a peer that vanishes silently, no close, no RTCP, no ICE).
import opus from '@discordjs/opus';

const { OpusEncoder } = opus;
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {
  RTCPeerConnection,
  RTCRtpCodecParameters,
  RtpHeader,
  RtpPacket,
  type RTCDataChannel,
  type RTCRtpTransceiver,
} from 'werift';
import { DATA_CHANNEL_LABEL } from '../../src/protocol/events.js';
import { HEADER, isUuid, MIN_SECRET_LENGTH } from '../../src/protocol/headers.js';
import { realtimeErrorBody, type RealtimeErrorCode, REALTIME_ERRORS } from '../../src/protocol/realtimeErrors.js';
import type { IceServer } from '../../src/protocol/session.js';

export interface TestPeerOptions {
  port?: number;
  workspaceKey: string;
  /** returned in every session (default: none) */
  iceServers?: IceServer[];
  /** TOFU enrollments survive a restart through this file (client id -> secret) */
  enrollmentFile?: string;
  /** closed: unknown clients get 404 client_not_found instead of being enrolled */
  enrollment?: 'open' | 'closed';
  /** when false the peer sends no audio at all (default true: continuous silence, like the companion) */
  sendAudio?: boolean;
  /** listen address (default 127.0.0.1) */
  host?: string;
  /** TestAssistantPeerProcess only: run the peer inside this network namespace (test/support/netns.ts) */
  netns?: string;
  /** percent of the packets the device sends that the peer's WebRTC stack drops on arrival (a lossy uplink), from
   *  the moment inboundLossFrom names; its receiver then reports that loss in its RTCP receiver reports, as a real
   *  service would */
  inboundLossPercent?: number;
  /** when that loss starts: once the data channel is open (default), or from the first packet, the SCTP handshake
   *  included (the call-setup bench) */
  inboundLossFrom?: 'open' | 'first packet';
  /** act as the stand-in upstream (see the top) with this API key */
  upstream?: { apiKey: string };
  /** seconds of decoded inbound audio kept for lastReceived (default 12; the echo bench keeps a whole run) */
  ringSeconds?: number;
}

export interface PeerRequestLog {
  method: string;
  path: string;
  status: number;
  contentType: string;
  clientId?: string;
  /** whether X-Client-Secret was present (the secret itself is not kept) */
  hadSecret: boolean;
  appSource?: string;
  /** stand-in upstream: which credential the request carried (never the credential itself) */
  authorization?: 'api_key' | 'client_key' | 'other' | 'none';
}

const FRAME = 960;

class PeerCall {
  readonly id = `sess_${randomUUID()}`;
  dc: RTCDataChannel | undefined;
  readonly received: string[] = [];
  /** decoded inbound audio, the last ringSeconds */
  private readonly ring: Int16Array;
  private ringPos = 0;
  private ringFilled = 0;
  packetsIn = 0;
  packetsOut = 0;
  private seq = Math.floor(Math.random() * 65535);
  private ts = Math.floor(Math.random() * 2 ** 31);
  private toneQueue: Int16Array[] = [];
  private readonly encoder = new OpusEncoder(48_000, 1);
  private readonly decoder = new OpusEncoder(48_000, 1);
  private readonly silence: Buffer;
  closed = false;

  constructor(
    readonly pc: RTCPeerConnection,
    readonly transceiver: RTCRtpTransceiver,
    ringSeconds = 12,
  ) {
    this.ring = new Int16Array(48_000 * ringSeconds);
    this.silence = this.encoder.encode(Buffer.alloc(FRAME * 2));
    transceiver.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((rtp) => {
        this.packetsIn++;
        try {
          const pcm = this.decoder.decode(rtp.payload);
          this.append(new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2));
        } catch {
          /* undecodable frame: counted, not stored */
        }
      }),
    );
  }

  private append(pcm: Int16Array): void {
    for (let i = 0; i < pcm.length; i++) {
      this.ring[this.ringPos] = pcm[i];
      this.ringPos = (this.ringPos + 1) % this.ring.length;
    }
    this.ringFilled = Math.min(this.ring.length, this.ringFilled + pcm.length);
  }

  /** The last `ms` of audio received from the device. */
  lastReceived(ms: number): Int16Array {
    const n = Math.min(this.ringFilled, Math.round((ms / 1000) * 48_000));
    const out = new Int16Array(n);
    for (let i = 0; i < n; i++) out[i] = this.ring[(this.ringPos - n + i + this.ring.length) % this.ring.length];
    return out;
  }

  queueTone(pcm: Int16Array): void {
    for (let i = 0; i + FRAME <= pcm.length; i += FRAME) this.toneQueue.push(pcm.subarray(i, i + FRAME));
  }

  sendFrame(): void {
    if (this.closed || this.pc.connectionState !== 'connected') return;
    const next = this.toneQueue.shift();
    const payload = next ? this.encoder.encode(Buffer.from(next.buffer, next.byteOffset, next.byteLength)) : this.silence;
    const header = new RtpHeader({ payloadType: 111, sequenceNumber: this.seq, timestamp: this.ts, marker: false });
    this.seq = (this.seq + 1) & 0xffff;
    this.ts = (this.ts + FRAME) >>> 0;
    this.packetsOut++;
    this.transceiver.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  }

  send(raw: string): boolean {
    if (!this.dc || this.dc.readyState !== 'open') return false;
    this.dc.send(raw);
    return true;
  }
}

export class TestAssistantPeer {
  private server: http.Server | undefined;
  private readonly calls: PeerCall[] = [];
  private readonly enrolled = new Map<string, string>();
  /** stand-in upstream: client keys minted, with the session they were minted for */
  readonly minted = new Map<string, Record<string, unknown>>();
  readonly requests: PeerRequestLog[] = [];
  private pacer: NodeJS.Timeout | undefined;
  port = 0;
  /** called for every data-channel message from the device */
  onEvent: ((raw: string, callId: string) => void) | undefined;
  onCall: ((callId: string) => void) | undefined;

  constructor(readonly opts: TestPeerOptions) {
    if (opts.enrollmentFile) {
      try {
        for (const [id, s] of Object.entries(JSON.parse(readFileSync(opts.enrollmentFile, 'utf8')) as Record<string, string>)) {
          this.enrolled.set(id, s);
        }
      } catch {
        /* first start */
      }
    }
  }

  get url(): string {
    return `http://${this.opts.host ?? '127.0.0.1'}:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.opts.port ?? 0, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as { port: number }).port;
    // Continuous audio, paced on a 20 ms clock that catches up if a timer fires late.
    const t0 = performance.now();
    let frames = 0;
    this.pacer = setInterval(() => {
      const due = Math.floor((performance.now() - t0) / 20);
      for (; frames < due; frames++) {
        if (this.opts.sendAudio === false) continue;
        for (const c of this.calls) c.sendFrame();
      }
    }, 10);
  }

  /** Closes every call and the server (the device sees its peer go). */
  async stop(): Promise<void> {
    clearInterval(this.pacer);
    await Promise.all(this.calls.map((c) => this.closeCall(c)));
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server?.closeAllConnections();
  }

  get activeCalls(): PeerCall[] {
    return this.calls.filter((c) => !c.closed);
  }

  get latestCall(): PeerCall | undefined {
    return this.calls[this.calls.length - 1];
  }

  /** Sends a raw data-channel message on the latest call. */
  sendEvent(event: object | string): boolean {
    const c = this.activeCalls.at(-1);
    return c ? c.send(typeof event === 'string' ? event : JSON.stringify(event)) : false;
  }

  playTone(pcm: Int16Array): void {
    this.activeCalls.at(-1)?.queueTone(pcm);
  }

  private async closeCall(c: PeerCall): Promise<void> {
    if (c.closed) return;
    c.closed = true;
    // SCTP first, so its ABORT reaches the device before DTLS goes (werift's close() alone sends nothing).
    await c.pc.sctpTransport?.stop().catch(() => undefined);
    await c.pc.close().catch(() => undefined);
  }

  private fail(res: http.ServerResponse, code: RealtimeErrorCode, message: string, log: PeerRequestLog): void {
    log.status = REALTIME_ERRORS[code].status;
    res.writeHead(log.status, { 'content-type': 'application/json' }).end(JSON.stringify(realtimeErrorBody(code, message)));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const h = (n: string) => {
      const v = req.headers[n];
      return typeof v === 'string' ? v : undefined;
    };
    const url = new URL(req.url ?? '/', 'http://x');
    const log: PeerRequestLog = {
      method: req.method ?? '',
      path: url.pathname,
      status: 0,
      contentType: h('content-type') ?? '',
      clientId: h(HEADER.clientId),
      hadSecret: Boolean(h(HEADER.clientSecret)),
      appSource: h(HEADER.appSource),
    };
    this.requests.push(log);
    if (this.requests.length > 1000) this.requests.splice(0, 500);
    if (this.opts.upstream) return this.handleUpstream(req, res, url, body, log);
    try {
      if (req.method !== 'POST' || (url.pathname !== '/v1/realtime/sessions' && url.pathname !== '/v1/realtime')) {
        log.status = 404;
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: { error: 'no such route', code: 'NOT_FOUND' } }));
        return;
      }
      // Device authentication (spec section 5), realtime error shape (section 7).
      for (const [name, header] of [['X-Workspace-Key', HEADER.workspaceKey], ['X-Client-Id', HEADER.clientId], ['X-Client-Secret', HEADER.clientSecret]] as const) {
        if (!h(header)) return this.fail(res, 'missing_header', `missing required header ${name}`, log);
      }
      const clientId = h(HEADER.clientId)!;
      const secret = h(HEADER.clientSecret)!;
      if (!isUuid(clientId)) return this.fail(res, 'invalid_client_id', 'X-Client-Id must be a UUID', log);
      if (secret.length < MIN_SECRET_LENGTH) return this.fail(res, 'invalid_client_secret', `X-Client-Secret must have at least ${MIN_SECRET_LENGTH} characters`, log);
      if (h(HEADER.workspaceKey) !== this.opts.workspaceKey) return this.fail(res, 'invalid_workspace_key', 'unknown workspace key', log);
      const known = this.enrolled.get(clientId);
      if (known === undefined) {
        if (this.opts.enrollment === 'closed') return this.fail(res, 'client_not_found', 'client not found', log);
        this.enrolled.set(clientId, secret);
        if (this.opts.enrollmentFile) writeFileSync(this.opts.enrollmentFile, JSON.stringify(Object.fromEntries(this.enrolled)));
      } else if (known !== secret) {
        return this.fail(res, 'secret_mismatch', 'this client is enrolled with another secret', log);
      }

      if (url.pathname === '/v1/realtime/sessions') {
        if (!log.contentType.startsWith('application/json')) return this.fail(res, 'unsupported_content_type', 'Content-Type must be application/json', log);
        let parsed: { modalities?: unknown };
        try {
          parsed = JSON.parse(body) as { modalities?: unknown };
        } catch {
          return this.fail(res, 'invalid_json', 'body is not JSON', log);
        }
        const m = parsed?.modalities;
        if (!Array.isArray(m) || !m.every((x) => x === 'text' || x === 'audio')) {
          return this.fail(res, 'invalid_modalities', 'modalities must be an array of "text"/"audio"', log);
        }
        log.status = 200;
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({ id: `sess_${randomUUID()}`, iceServers: this.opts.iceServers ?? [] }),
        );
        return;
      }
      if (!log.contentType.startsWith('application/sdp')) return this.fail(res, 'unsupported_content_type', 'Content-Type must be application/sdp', log);
      if (!body.startsWith('v=')) return this.fail(res, 'invalid_sdp', 'the offer is not SDP', log);
      if (!/m=audio[^\n]*\n(?:[^m][^\n]*\n)*?a=rtpmap:\d+ opus\/48000/i.test(body)) {
        return this.fail(res, 'no_audio_in_offer', 'the offer has no Opus audio section', log);
      }
      const answer = await this.answer(body);
      log.status = 200;
      res.writeHead(200, { 'content-type': 'application/sdp' }).end(answer);
    } catch (err) {
      if (!res.headersSent) this.fail(res, 'server_error', (err as Error).message, log);
    }
  }

  private async handleUpstream(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: string, log: PeerRequestLog): Promise<void> {
    const bearer = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    log.authorization = bearer === undefined ? 'none' : bearer === this.opts.upstream!.apiKey ? 'api_key' : this.minted.has(bearer) ? 'client_key' : 'other';
    const error = (status: number, code: string, message: string) => {
      log.status = status;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error', code, param: null } }));
    };
    try {
      if (req.method === 'POST' && url.pathname === '/v1/realtime/client_secrets') {
        if (log.authorization !== 'api_key') return error(401, 'invalid_api_key', 'Incorrect API key provided.');
        let session: Record<string, unknown> = {};
        try {
          session = ((JSON.parse(body) as { session?: Record<string, unknown> }).session ?? {}) as Record<string, unknown>;
        } catch {
          return error(400, 'invalid_json', 'We could not parse the JSON body of your request.');
        }
        const value = `ek_${randomUUID().replace(/-/g, '')}`;
        this.minted.set(value, session);
        log.status = 200;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value, expires_at: Math.floor(Date.now() / 1000) + 600, session: { type: 'realtime', ...session } }));
        return;
      }
      if (req.method === 'POST' && url.pathname === '/v1/realtime/calls') {
        if (log.authorization !== 'client_key' && log.authorization !== 'api_key') return error(401, 'invalid_api_key', 'Incorrect API key provided.');
        if (!log.contentType.startsWith('application/sdp') || !body.startsWith('v=')) return error(400, 'invalid_offer', 'Expected an SDP offer.');
        const session = bearer ? this.minted.get(bearer) : undefined;
        const answer = await this.answer(body, session ?? {});
        log.status = 201;
        res.writeHead(201, { 'content-type': 'application/sdp', location: `/v1/realtime/calls/${this.calls.at(-1)!.id}` }).end(answer);
        return;
      }
      error(404, 'not_found', 'Invalid URL');
    } catch (err) {
      if (!res.headersSent) error(500, 'server_error', (err as Error).message);
    }
  }

  private async answer(offer: string, gaSession?: Record<string, unknown>): Promise<string> {
    const pc = new RTCPeerConnection({
      iceServers: [],
      iceAdditionalHostAddresses: ['127.0.0.1'],
      codecs: {
        audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2, payloadType: 111, parameters: 'minptime=10;useinbandfec=1' })],
        video: [],
      },
    });
    // werift's debug option drops an inbound packet when inboundPacketLoss / 100 < Math.random(), that is
    // with probability 1 - inboundPacketLoss / 100: the value given is the share that gets through. It drops
    // SCTP as well as SRTP, so by default it is switched on only once the data channel is open (the channel the
    // device opens, DATA_CHANNEL_LABEL): werift as shipped resent a lost SCTP handshake packet after 3 s each
    // time, and a 20 % loss during the handshake made the call miss its test's deadline now and then (CI, Node 26,
    // 28 Nov: "timed out waiting for the call"; the agent's werift is patched since, see bench call-setup). The
    // DTLS transport reads pc.config.debug at every packet, so setting it later takes effect at once.
    const startLoss = (): void => {
      if (this.opts.inboundLossPercent) pc.config.debug = { ...pc.config.debug, inboundPacketLoss: 100 - this.opts.inboundLossPercent };
    };
    if (this.opts.inboundLossFrom === 'first packet') startLoss();
    const transceiver = pc.addTransceiver('audio', { direction: 'sendrecv' });
    const call = new PeerCall(pc, transceiver, this.opts.ringSeconds);
    this.calls.push(call);
    // Bounded: only the recent calls are kept.
    while (this.calls.length > 20) this.calls.shift();
    pc.onDataChannel.subscribe((dc) => {
      if (dc.label !== DATA_CHANNEL_LABEL) return;
      call.dc = dc;
      dc.onMessage.subscribe((data) => {
        const raw = data.toString();
        call.received.push(raw);
        if (call.received.length > 500) call.received.splice(0, 250);
        this.onEvent?.(raw, call.id);
      });
      dc.stateChanged.subscribe((s) => {
        // the GA interface names no session id: session.created carries the session config only
        if (s === 'open' && gaSession) dc.send(JSON.stringify({ type: 'session.created', event_id: `event_${randomUUID()}`, session: { type: 'realtime', object: 'realtime.session', ...gaSession } }));
        if (s === 'open') startLoss();
        if (s === 'open') this.onCall?.(call.id);
        // The device closing its call aborts SCTP: the data channel closes while ICE/DTLS still look connected.
        if (s === 'closed') call.closed = true;
      });
    });
    pc.connectionStateChange.subscribe((s) => {
      if (s === 'closed' || s === 'failed') call.closed = true;
    });
    await pc.setRemoteDescription({ type: 'offer', sdp: offer });
    await pc.setLocalDescription(await pc.createAnswer());
    return pc.localDescription!.sdp;
  }
}

// ---- the same peer in a child process ---------------------------------------------------------------------

type FromChild =
  | { t: 'ready'; port: number }
  | { t: 'event'; raw: string; callId: string }
  | { t: 'call'; callId: string }
  | { t: 'reply'; id: number; value: unknown };

export interface PeerStats {
  activeCalls: number;
  packetsIn: number;
  packetsOut: number;
  requests: PeerRequestLog[];
  /** stand-in upstream: the sessions client keys were minted for, newest last */
  minted: Record<string, unknown>[];
}

/** Controls a TestAssistantPeer running in its own process (test/support/testAssistantPeerMain.ts). */
export class TestAssistantPeerProcess {
  private child: ChildProcess | undefined;
  port = 0;
  /** every data-channel message from the device, across calls and restarts (parsed when JSON) */
  readonly events: Array<{ raw: string; callId: string }> = [];
  readonly callIds: string[] = [];
  private nextId = 1;
  private readonly waiting = new Map<number, (v: unknown) => void>();
  private listeners: Array<() => void> = [];

  constructor(readonly opts: TestPeerOptions) {}

  get url(): string {
    return `http://${this.opts.host ?? '127.0.0.1'}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    const main = path.join(import.meta.dirname, 'testAssistantPeerMain.ts');
    const child = fork(main, [JSON.stringify({ ...this.opts, port: this.opts.port ?? this.port })], {
      // inside a network namespace: `ip netns exec NS node ...` (the IPC channel is an inherited descriptor)
      ...(this.opts.netns ? { execPath: 'ip', execArgv: ['netns', 'exec', this.opts.netns, process.execPath, '--import', 'tsx'] } : { execArgv: ['--import', 'tsx'] }),
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    this.child = child;
    child.on('message', (m: FromChild) => {
      if (m.t === 'event') this.events.push({ raw: m.raw, callId: m.callId });
      else if (m.t === 'call') this.callIds.push(m.callId);
      else if (m.t === 'reply') {
        this.waiting.get(m.id)?.(m.value);
        this.waiting.delete(m.id);
      }
      for (const l of this.listeners) l();
    });
    this.port = await new Promise<number>((resolve, reject) => {
      const onMsg = (m: FromChild) => m.t === 'ready' && resolve(m.port);
      child.on('message', onMsg);
      child.once('exit', (code) => reject(new Error(`test peer exited with ${code} before it was ready`)));
    });
    this.opts.port = this.port;
  }

  /** SIGKILL: the server and every call vanish at once (no close sent; the OS closes the sockets). */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** SIGSTOP: the peer goes silent without closing anything. Use kill() afterwards. */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  /** SIGCONT: a frozen peer carries on where it stopped (its calls are long dead for the device by then). */
  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** Clean stop: closes every call (the device sees the close) and the server. */
  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    await this.request('stop').catch(() => undefined);
    await this.signal('SIGTERM');
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(sig);
    if (sig !== 'SIGKILL') c.kill('SIGCONT');
    await exited;
    for (const [, resolve] of this.waiting) resolve(undefined);
    this.waiting.clear();
  }

  request(cmd: string, arg?: unknown): Promise<unknown> {
    const c = this.child;
    if (!c?.connected) return Promise.reject(new Error('test peer is not running'));
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      c.send({ id, cmd, arg });
    });
  }

  sendEvent(event: object | string): Promise<boolean> {
    return this.request('sendEvent', typeof event === 'string' ? event : JSON.stringify(event)) as Promise<boolean>;
  }

  /** Plays PCM (48 kHz mono) to the device on the latest call. */
  playTone(pcm: Int16Array): Promise<unknown> {
    return this.request('playTone', Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'));
  }

  /** The last `ms` of audio the device sent on the latest call. */
  async lastReceived(ms: number): Promise<Int16Array> {
    const b64 = (await this.request('lastReceived', ms)) as string;
    const buf = Buffer.from(b64, 'base64');
    return new Int16Array(buf.buffer, buf.byteOffset, buf.length / 2);
  }

  stats(): Promise<PeerStats> {
    return this.request('stats') as Promise<PeerStats>;
  }

  /** Resolves when pred() holds (checked on every message from the child), or rejects after timeoutMs. */
  waitFor(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const l = () => {
        if (pred()) {
          cleanup();
          resolve();
        }
      };
      const t = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(t);
        this.listeners = this.listeners.filter((x) => x !== l);
      };
      this.listeners.push(l);
    });
  }
}
