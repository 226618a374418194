// HTTP client for the Voice Assistant Service: the realtime routes (session, SDP exchange) and a generic
// request for the /v1/app REST routes. Device headers go on every request (not on signed audio URLs); failures
// become AgentErrors with the server's code, and only the service's own error shapes count as its word (a
// proxy's or a captive portal's page rejects nobody). Nothing here logs or returns the secret.
//
// Requests go through node:http/https, not fetch: Node's fetch (undici, its HTTP parser compiled to WebAssembly)
// costs a long-running process ~9 MB of memory for the three small requests a call needs (measured on Node 20).
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { certificateClockProblem } from '../common/certificateClock.js';
import { certificateTrustProblem } from '../common/certificateTrust.js';
import { http } from '../common/nodeHttp.js';
import { DEVICE_FUNCTION_TOOLS } from '../protocol/functions.js';
import { deviceHeaders, type DeviceCredentials } from '../protocol/headers.js';
import { parseRealtimeErrorBody, REALTIME_NOT_A_REJECTION_404 } from '../protocol/realtimeErrors.js';
import { CLIENT_REJECTED_CODES, parseRestErrorBody } from '../protocol/restErrors.js';
import { parseRealtimeSession, type Modality, type RealtimeSession } from '../protocol/session.js';
import { AgentError } from './errors.js';

/** Which realtime interface the service speaks (settings server.protocol):
 *  - 'spec': the Voice Assistant Service's routes (POST /v1/realtime/sessions, POST /v1/realtime), device headers;
 *  - 'openai-realtime': the GA WebRTC interface of the widely used realtime protocol: a short-lived client key
 *    from a token endpoint (which gets the device headers: the companion's /v1/realtime/client_secrets, or a
 *    maker's own), then the offer to {url}/v1/realtime/calls with only "Authorization: Bearer <key>" (the device's
 *    secret never goes to the realtime service itself). */
export type RealtimeProtocol = 'spec' | 'openai-realtime';

const CLIENT_KEY_REQUEST = JSON.stringify({ session: { type: 'realtime', tools: DEVICE_FUNCTION_TOOLS } });

export interface ServiceClientOptions {
  baseUrl: string;
  credentials: DeviceCredentials;
  timeoutMs?: number;
  protocol?: RealtimeProtocol;
  /** openai-realtime: where client keys come from (default {baseUrl}/v1/realtime/client_secrets) */
  tokenUrl?: string;
}

export interface AppRequestOptions {
  /** The service synthesises before it answers, and the answer may be large (a narration's WAV): the headers may
   *  take up to LONG_ANSWER_MS, then the body as long as it keeps flowing (no pause over timeoutMs). */
  longAnswer?: boolean;
}

/** How long a synthesising route may take to answer: the service synthesises the whole text (up to 15,000
 *  characters; a story's narration, sent with Content-Length) before its first byte. */
const LONG_ANSWER_MS = 180_000;

/** Retry-After is honoured within these: 0 would be a tight loop, a date far ahead (a wrong clock, a proxy's
 *  mistake) would silence the speaker for days. */
const RETRY_AFTER_MIN_MS = 1_000;
const RETRY_AFTER_MAX_MS = 600_000;

export interface AppResponse {
  status: number;
  contentType: string;
  /** parsed JSON when the response is JSON, else undefined */
  json?: unknown;
  /** raw bytes (for audio/wav and other binary answers) */
  body: Buffer;
}

interface SendOptions {
  /** replace the device headers: the GA call route gets the client key only, a signed URL nothing */
  headers?: Record<string, string>;
  /** the status and headers within this (default timeoutMs) */
  answerWithinMs?: number;
  /** the body may take as long as it keeps flowing (no pause over timeoutMs); otherwise the whole answer must
   *  come within timeoutMs */
  flowing?: boolean;
  /** hand 3xx answers back (download follows them) instead of failing */
  returnRedirects?: boolean;
}

interface Answer {
  ok: boolean;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text(): string;
}

export class ServiceClient {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  readonly protocol: RealtimeProtocol;
  private readonly tokenUrl: string;
  /** openai-realtime: the client key of the call being set up (never logged) */
  private clientKey: string | undefined;
  /** openai-realtime: the call id the service named in Location (status shows it) */
  lastCallId: string | undefined;
  /** Its own connection pools, so that dropIdleConnections closes only this client's: made from node's global
   *  ones' options (keep-alive, idle sockets closed after 5 s, and from Node 24 the proxy of NODE_USE_ENV_PROXY,
   *  which node gives its global pools only). */
  private readonly agents = {
    'http:': new http.Agent({ ...(http.globalAgent as unknown as { options: https.AgentOptions }).options, keepAlive: true, timeout: 5_000, scheduling: 'lifo' }),
    'https:': new https.Agent({ ...https.globalAgent.options, keepAlive: true, timeout: 5_000, scheduling: 'lifo' }),
  };

  constructor(o: ServiceClientOptions) {
    this.base = o.baseUrl.replace(/\/+$/, '');
    this.headers = deviceHeaders(o.credentials);
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.protocol = o.protocol ?? 'spec';
    this.tokenUrl = o.tokenUrl ?? `${this.base}/v1/realtime/client_secrets`;
  }

  /** spec: POST /v1/realtime/sessions -> {id, iceServers}. openai-realtime: a fresh client key from the token
   *  endpoint (the GA interface has no session resource; ICE servers are not handed out: the service's answer
   *  carries its candidates). */
  async createSession(modalities: Modality[] = ['text', 'audio']): Promise<RealtimeSession> {
    if (this.protocol === 'openai-realtime') {
      this.clientKey = await this.fetchClientKey();
      return { id: 'ga', iceServers: [] };
    }
    const res = await this.send('/v1/realtime/sessions', 'POST', 'application/json', JSON.stringify({ modalities }));
    const text = res.text();
    if (!res.ok) throw realtimeError(res, 'session request');
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw new AgentError('protocol', 'the session response is not JSON', { status: res.status, cause: err });
    }
    const s = parseRealtimeSession(v);
    if (!s) throw new AgentError('protocol', 'the session response lacks id or a valid iceServers list', { status: res.status });
    return s;
  }

  /** POST /v1/realtime with the SDP offer (application/sdp) -> the SDP answer */
  async exchangeSdp(offerSdp: string): Promise<string> {
    const ga = this.protocol === 'openai-realtime';
    if (ga && !this.clientKey) this.clientKey = await this.fetchClientKey();
    const res = ga
      ? await this.send('/v1/realtime/calls', 'POST', 'application/sdp', offerSdp, { headers: { authorization: `Bearer ${this.clientKey}` } })
      : await this.send('/v1/realtime', 'POST', 'application/sdp', offerSdp);
    // a key opens one call: the next call (a reconnect) mints a new one
    this.clientKey = undefined;
    if (ga) this.lastCallId = String(res.headers.location ?? '').split('/').filter(Boolean).pop() || undefined;
    const text = res.text();
    if (!res.ok) throw realtimeError(res, 'SDP exchange');
    if (!text.startsWith('v=')) throw new AgentError('protocol', 'the SDP answer is not SDP', { status: res.status });
    return text;
  }

  /** POST the token endpoint with the device headers -> {value} (or the older {client_secret: {value}}). The key's
   *  session declares the device functions: a GA service calls only the tools its client declared. */
  private async fetchClientKey(): Promise<string> {
    const url = new URL(this.tokenUrl);
    const res = await this.send(url.href, 'POST', 'application/json', CLIENT_KEY_REQUEST);
    const text = res.text();
    if (!res.ok) throw realtimeError(res, 'client key request');
    let v: { value?: unknown; client_secret?: { value?: unknown } } | undefined;
    try {
      v = JSON.parse(text) as typeof v;
    } catch (err) {
      throw new AgentError('protocol', 'the client key answer is not JSON', { status: res.status, cause: err });
    }
    const key = v?.value ?? v?.client_secret?.value;
    if (typeof key !== 'string' || key.length < 8 || /\s/.test(key)) {
      throw new AgentError('protocol', `the token endpoint (${url.origin}${url.pathname}) answered no client key ("value")`, { status: res.status });
    }
    return key;
  }

  /**
   * A /v1/app REST request. `body`: an object is sent as JSON, undefined as no body. REST errors
   * {detail:{error,code}} become AgentErrors. `longAnswer` for the synthesising routes.
   */
  async requestApp(method: string, path: string, body?: unknown, opts: AppRequestOptions = {}): Promise<AppResponse> {
    const json = body === undefined ? undefined : JSON.stringify(body);
    const res = await this.send(
      path,
      method,
      json === undefined ? undefined : 'application/json',
      json,
      opts.longAnswer ? { answerWithinMs: Math.max(this.timeoutMs, LONG_ANSWER_MS), flowing: true } : {},
    );
    const buf = res.body;
    const ct = res.headers['content-type'] ?? '';
    let parsed: unknown;
    if (ct.includes('json')) {
      try {
        parsed = JSON.parse(buf.toString('utf8'));
      } catch {
        /* left undefined: reported below when it matters */
      }
    }
    if (!res.ok) throw restError(res, parsed, `${method} ${path}`);
    return { status: res.status, contentType: ct, json: parsed, body: buf };
  }

  /** GET of an audio URL the service handed out (signed, absolute): without the device headers (the URL carries
   *  its own signature and may point at a storage host, which must not see the secret), following a few
   *  redirects, the body as long as it keeps flowing. */
  async download(url: string): Promise<AppResponse> {
    let target = new URL(url);
    for (let hops = 0; ; hops++) {
      const res = await this.send(target.href, 'GET', undefined, undefined, { headers: {}, flowing: true, returnRedirects: true });
      const to = isRedirect(res) ? resolveLocation(res.headers.location, target) : undefined;
      if (to && hops < 5) {
        target = to;
        continue;
      }
      if (!res.ok) throw new AgentError('server_error', `downloading the audio failed: HTTP ${res.status}`, { status: res.status });
      return { status: res.status, contentType: res.headers['content-type'] ?? '', body: res.body };
    }
  }

  /** Closes the idle pooled connections (a request in flight keeps its own). Called when a call ends: what ended
   *  it (a new address, a router that rebooted and forgot its NAT mappings) may have left a kept-alive socket
   *  that no answer will come back on, and the next session request, sent on it at once, then waited out the
   *  whole request timeout (10 s) before a new connection was tried. */
  dropIdleConnections(): void {
    for (const agent of Object.values(this.agents)) {
      for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
    }
  }

  /** One request within its timeouts (plain timers, cleared at once: no timer outlives it). `path` under the
   *  base URL, or an absolute URL (the token endpoint, a signed audio URL). */
  private send(path: string, method: string, contentType: string | undefined, body: string | undefined, o: SendOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...(o.headers ?? this.headers) };
    if (contentType) headers['content-type'] = contentType;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const absolute = /^https?:\/\//.test(path);
    const url = new URL(absolute ? path : this.base + path);
    // An absolute URL is named without its query: a signed URL's signature stays out of messages and logs.
    const server = absolute ? url.origin : this.base;
    const what = `${method} ${absolute ? url.pathname : path}`;
    const fail = (why: string, cause?: unknown) => new AgentError('network', `cannot reach ${server} (${what}): ${certificateClockProblem(cause) ?? certificateTrustProblem(cause) ?? why}`, { cause });
    const answerWithinMs = o.answerWithinMs ?? this.timeoutMs;
    const restMs = this.timeoutMs;
    return new Promise<Answer>((resolve, reject) => {
      let settled = false;
      /** bytes of the body so far; undefined until the status and headers came */
      let received: number | undefined;
      const done = (err: AgentError | undefined, answer?: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(answer!);
      };
      const req = (url.protocol === 'https:' ? https : http).request(url, { method, headers, agent: this.agents[url.protocol === 'https:' ? 'https:' : 'http:'] }, (res) => {
        received = 0;
        // A flowing answer may take as long as it keeps coming (a narration over slow Wi-Fi): from here the
        // timer measures the pause between chunks, so a stalled or half-open connection still ends.
        if (o.flowing) {
          clearTimeout(timer);
          timer = setTimeout(timedOut, restMs);
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          received = (received ?? 0) + c.length;
          if (o.flowing) timer.refresh();
        });
        res.on('error', (err) => done(fail(err.message, err)));
        res.on('end', () => {
          const buf = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          const answer = { ok: status >= 200 && status < 300, status, headers: res.headers, body: buf, text: () => buf.toString('utf8') };
          if (isRedirect(answer) && !o.returnRedirects) done(redirectError(answer, url, server, what));
          else done(undefined, answer);
        });
      });
      const timedOut = (): void => {
        if (received === undefined) {
          // No connection is the network; a connection left unanswered is a server too slow (or stuck).
          const connected = req.socket ? !req.socket.connecting : false;
          done(connected ? new AgentError('network', `${server} (${what}) answered too slowly: no answer within ${answerWithinMs} ms`) : fail(`no connection within ${restMs} ms`));
        } else if (o.flowing) {
          done(new AgentError('network', `${server} (${what}) stalled: no data for ${restMs} ms after ${received} bytes of the answer`));
        } else {
          done(new AgentError('network', `${server} (${what}) answered too slowly: not complete within ${restMs} ms (${received} bytes so far)`));
        }
        req.destroy();
      };
      // Connecting gets the ordinary limit, a long answer's allowance only starts once connected: a host that
      // drops packets would otherwise hold `say` for the kernel's SYN retries (~2 minutes), not 10 s.
      let timer = setTimeout(timedOut, Math.min(answerWithinMs, restMs));
      if (answerWithinMs > restMs) {
        req.once('socket', (sock) => {
          const connected = (): void => {
            if (settled || received !== undefined) return;
            clearTimeout(timer);
            timer = setTimeout(timedOut, answerWithinMs);
          };
          if (!sock.connecting) connected();
          else sock.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', connected);
        });
      }
      req.on('error', (err) => done(fail(err.message, err)));
      req.end(body);
    });
  }
}

function isRedirect(res: Answer): boolean {
  return res.status >= 300 && res.status < 400 && res.headers.location !== undefined;
}

function resolveLocation(location: string | undefined, base: URL): URL | undefined {
  try {
    return new URL(location ?? '', base);
  } catch {
    return undefined;
  }
}

/** Redirects are not followed (a POST with the device's secret should not wander). One to another host is
 *  usually the network's doing (a captive portal, a proxy's login), named by its host only (the rest of a portal's
 *  address is noise: MAC, tokens); one on the same host is the address to configure. */
function redirectError(res: Answer, from: URL, server: string, what: string): AgentError {
  const to = resolveLocation(res.headers.location, from);
  if (to && to.host !== from.host) {
    return new AgentError(
      'network',
      `${server} (${what}): possibly a captive portal or a proxy (redirected to ${to.host}): sign this network in; if the service really moved there, set server.url to its address`,
      { status: res.status },
    );
  }
  return new AgentError('protocol', `${server} (${what}) redirects to ${to?.href ?? 'an invalid address'}: set server.url to the service's final address`, { status: res.status });
}

/** Retry-After (RFC 9110 10.2.3: delta-seconds or an HTTP-date) in ms, clamped; read on 429 (RFC 6585) and 503, the
 *  statuses that give it the meaning "come back then" (the spec names no rate limit; 3xx are not followed). */
function retryAfterMs(res: Answer): number | undefined {
  const v = res.headers['retry-after']?.trim();
  if ((res.status !== 429 && res.status !== 503) || !v) return undefined;
  // Date.parse takes nearly anything ("3.5" is a date to V8): an HTTP-date starts with the day's name. It is
  // measured from the answer's own Date where there is one: this device's clock may be months off (no real-time
  // clock, NTP not yet synced), which made a 30 s ask into 10 minutes, or into 1 s.
  const httpDate = /^[A-Za-z]{3,9},? /;
  const sent = res.headers.date && httpDate.test(res.headers.date) ? Date.parse(res.headers.date) : NaN;
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : httpDate.test(v) ? Date.parse(v) - (Number.isNaN(sent) ? Date.now() : sent) : NaN;
  return Number.isNaN(ms) ? undefined : Math.min(RETRY_AFTER_MAX_MS, Math.max(RETRY_AFTER_MIN_MS, ms));
}

function waitNote(ms: number | undefined): string {
  return ms === undefined ? '' : `; it asks to wait ${Math.round(ms / 1000)} s`;
}

/** An error answer not in the service's shape: a proxy, a load balancer mid-deploy or a captive portal answered,
 *  not the service, so it says nothing about this device's credentials. Summarised, never pasted (HTML pages). */
function summaryOf(res: Answer): string {
  const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim() || 'untyped';
  return res.body.length > 0 ? `${type}, ${res.body.length} bytes` : 'no body';
}

function isJson(res: Answer): boolean {
  if (!String(res.headers['content-type'] ?? '').includes('json')) return false;
  try {
    JSON.parse(res.text());
    return true;
  } catch {
    return false;
  }
}

function foreignAnswer(res: Answer, what: string): AgentError {
  const summary = summaryOf(res);
  const retryAfter = retryAfterMs(res);
  const opts = { status: res.status, retryAfterMs: retryAfter };
  if (res.status === 429 || res.status === 503) {
    return new AgentError('server_error', `${what}: the server is busy or unavailable (HTTP ${res.status}, ${summary}${waitNote(retryAfter)})`, opts);
  }
  return new AgentError('server_error', `${what} failed: HTTP ${res.status} (${summary}), not an answer of the service: a proxy, a load balancer or a captive portal in the way?`, opts);
}

function realtimeError(res: Answer, what: string): AgentError {
  const e = parseRealtimeErrorBody(res.text());
  if (!e) {
    // a 401 in JSON of another shape (a maker's token endpoint: {"error": "bad key"}) still refuses this device
    if (res.status === 401 && isJson(res)) return new AgentError('auth_rejected', `the server rejected this device: HTTP 401 (${summaryOf(res)})`, { status: 401 });
    return foreignAnswer(res, what);
  }
  const { status } = res;
  const detail = `${e.message} (${e.code || e.type})`;
  const retryAfter = retryAfterMs(res);
  const opts = { status, serverCode: e.code, retryAfterMs: retryAfter };
  // a 404 refuses the device only as the spec's not_found_error with a code of its own: a gateway's or a wrong
  // path's JSON 404 ({"error":{"message":"Not Found","code":null}}) is not about this device
  if (status === 401 || (status === 404 && e.type === 'not_found_error' && e.code !== '' && !REALTIME_NOT_A_REJECTION_404.includes(e.code))) {
    return new AgentError('auth_rejected', `the server rejected this device: ${detail}`, opts);
  }
  if (status >= 500) return new AgentError('server_error', `${what} failed on the server: ${detail}${waitNote(retryAfter)}`, opts);
  if (status === 400) return new AgentError('protocol', `${what} refused as invalid: ${detail}`, opts);
  return new AgentError('server_error', `${what} failed: HTTP ${status}, ${detail}${waitNote(retryAfter)}`, opts);
}

function restError(res: Answer, json: unknown, what: string): AgentError {
  const d = parseRestErrorBody(json);
  const code = d?.code;
  if (code === undefined) return foreignAnswer(res, what);
  const { status } = res;
  const detail = `${d?.error ?? `HTTP ${status}`} (${code})`;
  const retryAfter = retryAfterMs(res);
  const opts = { status, serverCode: code, retryAfterMs: retryAfter };
  if (status === 401 || (status === 404 && CLIENT_REJECTED_CODES.includes(code))) {
    return new AgentError('auth_rejected', `the server rejected this device: ${detail}`, opts);
  }
  if (status >= 500 || status === 429) return new AgentError('server_error', `${what} failed on the server: ${detail}${waitNote(retryAfter)}`, opts);
  return new AgentError('protocol', `${what} failed: ${detail}`, opts);
}
