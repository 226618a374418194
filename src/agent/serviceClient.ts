// HTTP client for the Voice Assistant Service: the realtime routes (session, SDP exchange) and a generic
// request for the /v1/app REST routes. Device headers go on every request; failures become AgentErrors with
// the server's code. Nothing here logs or returns the secret.
import { deviceHeaders, type DeviceCredentials } from '../protocol/headers.js';
import { parseRealtimeErrorBody } from '../protocol/realtimeErrors.js';
import { parseRealtimeSession, type Modality, type RealtimeSession } from '../protocol/session.js';
import { AgentError } from './errors.js';

export interface ServiceClientOptions {
  baseUrl: string;
  credentials: DeviceCredentials;
  timeoutMs?: number;
  /** injectable for tests of odd proxies; default global fetch */
  fetch?: typeof fetch;
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
  headers: Headers;
  body: Buffer;
  text(): string;
}

export class ServiceClient {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(o: ServiceClientOptions) {
    this.base = o.baseUrl.replace(/\/+$/, '');
    this.headers = deviceHeaders(o.credentials);
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.fetchFn = o.fetch ?? fetch;
  }

  /** POST /v1/realtime/sessions -> {id, iceServers} */
  async createSession(modalities: Modality[] = ['text', 'audio']): Promise<RealtimeSession> {
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
    const res = await this.send('/v1/realtime', 'POST', 'application/sdp', offerSdp);
    const text = res.text();
    if (!res.ok) throw realtimeError(res.status, text, 'SDP exchange');
    if (!text.startsWith('v=')) throw new AgentError('protocol', 'the SDP answer is not SDP', { status: res.status });
    return text;
  }

  /**
   * A /v1/app REST request. `body`: an object is sent as JSON, FormData as multipart (no Content-Type of
   * ours: fetch sets the boundary), undefined as no body. REST errors {detail:{error,code}} become AgentErrors.
   */
  async requestApp(method: string, path: string, body?: unknown): Promise<AppResponse> {
    let contentType: string | undefined;
    let payload: NonNullable<RequestInit['body']> | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      contentType = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await this.send(path, method, contentType, payload);
    const buf = res.body;
    const ct = res.headers.get('content-type') ?? '';
    let json: unknown;
    if (ct.includes('json')) {
      try {
        json = JSON.parse(buf.toString('utf8'));
      } catch {
        /* left undefined: reported below when it matters */
      }
    }
    if (!res.ok) throw restError(res.status, json, buf, `${method} ${path}`);
    return { status: res.status, contentType: ct, json, body: buf };
  }

  /** One request, body included, within timeoutMs (a plain timer, cleared at once: no timer outlives it). */
  private async send(path: string, method: string, contentType: string | undefined, body: NonNullable<RequestInit['body']> | undefined): Promise<Answer> {
    const headers: Record<string, string> = { ...this.headers };
    if (contentType) headers['content-type'] = contentType;
    const url = this.base + path;
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(new DOMException('timeout', 'TimeoutError')), this.timeoutMs);
    try {
      const res = await this.fetchFn(url, { method, headers, body, signal: ctl.signal });
      const buf = Buffer.from(await res.arrayBuffer());
      return { ok: res.ok, status: res.status, headers: res.headers, body: buf, text: () => buf.toString('utf8') };
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why = e.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : (e.cause?.message ?? e.cause?.code ?? e.message);
      throw new AgentError('network', `cannot reach ${this.base} (${method} ${path}): ${why}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
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
  const d = (json as { detail?: { error?: unknown; code?: unknown } } | undefined)?.detail;
  const code = typeof d?.code === 'string' ? d.code : undefined;
  const msg = typeof d?.error === 'string' ? d.error : body.toString('utf8').slice(0, 200) || `HTTP ${status}`;
  const detail = code ? `${msg} (${code})` : msg;
  const opts = { status, serverCode: code };
  if (status === 401 || (status === 404 && (code === 'CLIENT_NOT_FOUND' || code === 'CLIENT_NOT_ACTIVATED'))) {
    return new AgentError('auth_rejected', `the server rejected this device: ${detail}`, opts);
  }
  if (status >= 500) return new AgentError('server_error', `${what} failed on the server: ${detail}`, opts);
  return new AgentError('protocol', `${what} failed: ${detail}`, opts);
}
