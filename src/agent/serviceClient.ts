// HTTP client for the Voice Assistant Service: the realtime routes (session, SDP exchange) and a generic
// request for the /v1/app REST routes. Device headers go on every request; failures become AgentErrors with
// the server's code. Nothing here logs or returns the secret.
//
// Requests go through node:http/https, not fetch: Node's fetch (undici, its HTTP parser compiled to WebAssembly)
// costs a long-running process ~9 MB of memory for the three small requests a call needs (measured on Node 20).
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { http } from '../common/nodeHttp.js';
import { DEVICE_FUNCTION_TOOLS } from '../protocol/functions.js';
import { deviceHeaders, type DeviceCredentials } from '../protocol/headers.js';
import { parseRealtimeErrorBody } from '../protocol/realtimeErrors.js';
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

export interface AppResponse {
  status: number;
  contentType: string;
  /** parsed JSON when the response is JSON, else undefined */
  json?: unknown;
  /** raw bytes (for audio/wav and other binary answers) */
  body: Buffer;
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
    if (!res.ok) throw realtimeError(res.status, text, 'session request');
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
      ? await this.send('/v1/realtime/calls', 'POST', 'application/sdp', offerSdp, { authorization: `Bearer ${this.clientKey}` })
      : await this.send('/v1/realtime', 'POST', 'application/sdp', offerSdp);
    // a key opens one call: the next call (a reconnect) mints a new one
    this.clientKey = undefined;
    if (ga) this.lastCallId = String(res.headers.location ?? '').split('/').filter(Boolean).pop() || undefined;
    const text = res.text();
    if (!res.ok) throw realtimeError(res.status, text, 'SDP exchange');
    if (!text.startsWith('v=')) throw new AgentError('protocol', 'the SDP answer is not SDP', { status: res.status });
    return text;
  }

  /** POST the token endpoint with the device headers -> {value} (or the older {client_secret: {value}}). The key's
   *  session declares the device functions: a GA service calls only the tools its client declared. */
  private async fetchClientKey(): Promise<string> {
    const url = new URL(this.tokenUrl);
    const res = await this.send(url.href, 'POST', 'application/json', CLIENT_KEY_REQUEST);
    const text = res.text();
    if (!res.ok) throw realtimeError(res.status, text, 'client key request');
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
   * {detail:{error,code}} become AgentErrors.
   */
  async requestApp(method: string, path: string, body?: unknown): Promise<AppResponse> {
    const json = body === undefined ? undefined : JSON.stringify(body);
    const res = await this.send(path, method, json === undefined ? undefined : 'application/json', json);
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
    if (!res.ok) throw restError(res.status, parsed, buf, `${method} ${path}`);
    return { status: res.status, contentType: ct, json: parsed, body: buf };
  }

  /** One request, body included, within timeoutMs (a plain timer, cleared at once: no timer outlives it). */
  /** `path` under the base URL, or an absolute URL (the token endpoint); `authorization` replaces the device
   *  headers (GA calls: the realtime service gets the client key only). */
  private send(path: string, method: string, contentType: string | undefined, body: string | undefined, authorization?: { authorization: string }): Promise<Answer> {
    const headers: Record<string, string> = authorization ? { ...authorization } : { ...this.headers };
    if (contentType) headers['content-type'] = contentType;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const url = new URL(/^https?:\/\//.test(path) ? path : this.base + path);
    const fail = (why: string, cause?: unknown) =>
      new AgentError('network', `cannot reach ${this.base} (${method} ${path}): ${why}`, { cause });
    return new Promise<Answer>((resolve, reject) => {
      let settled = false;
      const done = (err: AgentError | undefined, answer?: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(answer!);
      };
      const req = (url.protocol === 'https:' ? https : http).request(url, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => done(fail(err.message, err)));
        res.on('end', () => {
          const buf = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          // Redirects are not followed (a POST with the device's secret should not wander): say where to point.
          const location = res.headers.location;
          if (status >= 300 && status < 400 && location) {
            const to = new URL(location, url).href;
            done(new AgentError('protocol', `${this.base} (${method} ${path}) redirects to ${to}: set server.url to the service's final address`, { status }));
            return;
          }
          done(undefined, { ok: status >= 200 && status < 300, status, headers: res.headers, body: buf, text: () => buf.toString('utf8') });
        });
      });
      const timer = setTimeout(() => {
        done(fail(`no answer within ${this.timeoutMs} ms`));
        req.destroy();
      }, this.timeoutMs);
      req.on('error', (err) => done(fail(err.message, err)));
      req.end(body);
    });
  }
}

function realtimeError(status: number, text: string, what: string): AgentError {
  const e = parseRealtimeErrorBody(text);
  const detail = e ? `${e.message} (${e.code || e.type})` : `HTTP ${status}`;
  const opts = { status, serverCode: e?.code };
  if (status === 401 || status === 404) return new AgentError('auth_rejected', `the server rejected this device: ${detail}`, opts);
  if (status >= 500) return new AgentError('server_error', `${what} failed on the server: ${detail}`, opts);
  if (status === 400) return new AgentError('protocol', `${what} refused as invalid: ${detail}`, opts);
  return new AgentError('server_error', `${what} failed: ${detail}`, opts);
}

function restError(status: number, json: unknown, body: Buffer, what: string): AgentError {
  const d = parseRestErrorBody(json);
  const code = d?.code;
  const msg = d?.error ?? (body.toString('utf8').slice(0, 200) || `HTTP ${status}`);
  const detail = code ? `${msg} (${code})` : msg;
  const opts = { status, serverCode: code };
  if (status === 401 || (status === 404 && code !== undefined && CLIENT_REJECTED_CODES.includes(code))) {
    return new AgentError('auth_rejected', `the server rejected this device: ${detail}`, opts);
  }
  if (status >= 500) return new AgentError('server_error', `${what} failed on the server: ${detail}`, opts);
  return new AgentError('protocol', `${what} failed: ${detail}`, opts);
}
