// The companion as a gateway to an upstream realtime service of the widely used protocol (settings
// realtime.upstream). For each device call, after the device was authenticated here (trust on first use as
// always), the companion
//   1. mints an upstream client key: POST {url}/v1/realtime/client_secrets with its API key, declaring the device
//      functions as tools (the device answers them exactly as it answers the companion's own assistant);
//   2. forwards the device's SDP offer: POST {url}/v1/realtime/calls with that client key -> the answer;
//   3. hands the answer back. Media and the data channel then flow between the device and the upstream directly.
// The API key never leaves the companion; the device only ever sees the SDP answer. The upstream's error text is
// passed on (shortened), its key material never (an upstream may echo the Authorization header in errors).
import { DEVICE_FUNCTION_TOOLS } from '../../protocol/functions.js';
import { CodedError } from '../../common/errors.js';

export interface UpstreamOptions {
  url: string;
  apiKey: string;
  model: string;
  instructions: string;
  voice?: string;
  timeoutMs: number;
  /** injectable for tests of failure paths; default global fetch */
  fetch?: typeof fetch;
}

export class UpstreamError extends CodedError<'upstream_unavailable'> {
  override name = 'UpstreamError';
}

export interface UpstreamAnswer {
  answer: string;
  /** the upstream's call id (from Location), for logs */
  upstreamCallId: string | undefined;
}

export class UpstreamGateway {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly o: UpstreamOptions) {
    this.base = o.url.replace(/\/+$/, '');
    this.fetch = o.fetch ?? fetch;
  }

  /** The session the upstream is asked for: the device functions as tools, the configured voice and prompt. */
  sessionConfig(): Record<string, unknown> {
    return {
      type: 'realtime',
      model: this.o.model,
      instructions: this.o.instructions,
      ...(this.o.voice ? { audio: { output: { voice: this.o.voice } } } : {}),
      tools: DEVICE_FUNCTION_TOOLS.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters })),
    };
  }

  async answer(offerSdp: string): Promise<UpstreamAnswer> {
    const minted = await this.request('/v1/realtime/client_secrets', 'application/json', JSON.stringify({ session: this.sessionConfig() }), this.o.apiKey);
    let key: unknown;
    try {
      const v = JSON.parse(minted.text) as { value?: unknown; client_secret?: { value?: unknown } };
      key = v.value ?? v.client_secret?.value;
    } catch {
      /* reported below */
    }
    if (typeof key !== 'string' || key === '') throw new UpstreamError('upstream_unavailable', 'the upstream minted no client key (no "value" in its answer)');
    const call = await this.request('/v1/realtime/calls', 'application/sdp', offerSdp, key);
    if (!call.text.startsWith('v=')) throw new UpstreamError('upstream_unavailable', 'the upstream answered the offer with something that is not SDP');
    return { answer: call.text, upstreamCallId: call.location?.split('/').filter(Boolean).pop() };
  }

  private async request(path: string, contentType: string, body: string, bearer: string): Promise<{ text: string; location: string | undefined }> {
    let res: Response;
    try {
      res = await this.fetch(this.base + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': contentType },
        body,
        signal: AbortSignal.timeout(this.o.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? `no answer within ${this.o.timeoutMs} ms` : (err as Error).message;
      throw new UpstreamError('upstream_unavailable', `cannot reach the upstream ${this.base} (${path}): ${why}`, { cause: err });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      // the headers came, the body did not (a reset, the timeout mid-body): the upstream's fault, as above, not ours
      const why = (err as Error).name === 'TimeoutError' ? `not whole within ${this.o.timeoutMs} ms` : (err as Error).message;
      throw new UpstreamError('upstream_unavailable', `the upstream's answer to ${path} was cut off: ${why}`, { cause: err });
    }
    if (!res.ok) {
      throw new UpstreamError('upstream_unavailable', `the upstream refused ${path}: HTTP ${res.status} ${upstreamMessage(text, [bearer, this.o.apiKey])}`);
    }
    return { text, location: res.headers.get('location') ?? undefined };
  }
}

/** The upstream's error message, short, with any key it echoed removed. */
function upstreamMessage(text: string, secrets: string[]): string {
  let msg = text;
  try {
    const v = JSON.parse(text) as { error?: { message?: unknown; code?: unknown } };
    if (typeof v.error?.message === 'string') msg = `${v.error.message}${typeof v.error.code === 'string' ? ` (${v.error.code})` : ''}`;
  } catch {
    /* not JSON: the raw text */
  }
  for (const s of secrets) if (s) msg = msg.split(s).join('[key]');
  return msg.replace(/\s+/g, ' ').slice(0, 200);
}
