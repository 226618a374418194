// ServiceClient against real HTTP servers: the test peer (spec's realtime routes) and small servers for the
// answers the peer never gives (500, REST errors, garbage).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentError } from '../../src/agent/errors.js';
import { ServiceClient } from '../../src/agent/serviceClient.js';
import { DEVICE_FUNCTION_NAMES } from '../../src/protocol/functions.js';
import { TestAssistantPeer } from '../support/testAssistantPeer.js';

const KEY = 'ws-key';
const SECRET = 'S'.repeat(20) + 'secret-value-xyz-0123456789';
let peer: TestAssistantPeer | undefined;
let server: http.Server | undefined;

afterEach(async () => {
  vi.unstubAllGlobals();
  await peer?.stop();
  peer = undefined;
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function startPeer(opts: Partial<ConstructorParameters<typeof TestAssistantPeer>[0]> = {}) {
  peer = new TestAssistantPeer({ workspaceKey: KEY, ...opts });
  await peer.start();
  return peer;
}

async function serve(handler: http.RequestListener): Promise<string> {
  server = http.createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

async function failure(p: Promise<unknown>): Promise<AgentError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    expect((err as Error).message).not.toContain(SECRET);
    return err as AgentError;
  }
  throw new Error('expected a failure');
}

describe('ServiceClient', () => {
  it('creates a session with the device headers and modalities', async () => {
    const p = await startPeer({ iceServers: [{ urls: ['turn:127.0.0.1:3478'], username: 'u', credential: 'c' }] });
    const clientId = randomUUID();
    const c = new ServiceClient({ baseUrl: p.url + '/', credentials: { workspaceKey: KEY, clientId, clientSecret: SECRET, appSource: 'speaker-test' } });
    const s = await c.createSession(['text', 'audio']);
    expect(s.id).toMatch(/^sess_/);
    expect(s.iceServers).toEqual([{ urls: ['turn:127.0.0.1:3478'], username: 'u', credential: 'c' }]);
    expect(p.requests.at(-1)).toMatchObject({ path: '/v1/realtime/sessions', status: 200, contentType: 'application/json', clientId, hadSecret: true, appSource: 'speaker-test' });
  });

  it('maps realtime errors: TOFU mismatch 401 and unknown client 404 are auth_rejected with the server code', async () => {
    const p = await startPeer();
    const clientId = randomUUID();
    await new ServiceClient({ baseUrl: p.url, credentials: { workspaceKey: KEY, clientId, clientSecret: SECRET } }).createSession();
    const other = new ServiceClient({ baseUrl: p.url, credentials: { workspaceKey: KEY, clientId, clientSecret: 'x'.repeat(43) } });
    const e = await failure(other.createSession());
    expect(e).toMatchObject({ code: 'auth_rejected', status: 401, serverCode: 'secret_mismatch' });
    const e2 = await failure(other.exchangeSdp('v=0\r\n'));
    expect(e2).toMatchObject({ code: 'auth_rejected', status: 401, serverCode: 'secret_mismatch' });

    await p.stop();
    const closed = await startPeer({ enrollment: 'closed' });
    const e3 = await failure(new ServiceClient({ baseUrl: closed.url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } }).createSession());
    expect(e3).toMatchObject({ code: 'auth_rejected', status: 404, serverCode: 'client_not_found' });
  });

  it('a 400 (missing header) is a protocol error, a bad SDP is refused clearly', async () => {
    const p = await startPeer();
    const e = await failure(new ServiceClient({ baseUrl: p.url, credentials: { workspaceKey: '', clientId: randomUUID(), clientSecret: SECRET } }).createSession());
    expect(e).toMatchObject({ code: 'protocol', status: 400, serverCode: 'missing_header' });
    expect(e.message).toContain('X-Workspace-Key');
    const c = new ServiceClient({ baseUrl: p.url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } });
    expect(await failure(c.exchangeSdp('hello'))).toMatchObject({ code: 'protocol', serverCode: 'invalid_sdp' });
  });

  it('5xx is server_error; garbage answers are protocol errors; a closed port is a network error', async () => {
    let mode = '500';
    const url = await serve((req, res) => {
      if (mode === '500') res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'boom', type: 'server_error', code: 'server_error' } }));
      else if (mode === 'html') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 7 }));
    });
    const c = new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } });
    expect(await failure(c.createSession())).toMatchObject({ code: 'server_error', status: 500, serverCode: 'server_error' });
    mode = 'html';
    expect((await failure(c.createSession())).code).toBe('protocol');
    expect((await failure(c.exchangeSdp('v=0'))).code).toBe('protocol');
    mode = 'badjson';
    expect((await failure(c.createSession())).code).toBe('protocol');
    // A port nobody listens on (taken and released).
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const freePort = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const down = new ServiceClient({ baseUrl: `http://127.0.0.1:${freePort}`, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } });
    const e = await failure(down.createSession());
    expect(e.code).toBe('network');
    expect(e.message).toMatch(/ECONNREFUSED/);
  });

  it('times out a server that never answers', async () => {
    const url = await serve(() => undefined);
    const c = new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET }, timeoutMs: 300 });
    const e = await failure(c.createSession());
    expect(e.code).toBe('network');
    expect(e.message).toMatch(/no answer within 300 ms/);
    server!.closeAllConnections();
  });

  it('requestApp sends JSON with the headers and maps REST errors {detail:{error,code}}', async () => {
    const seen: Array<{ headers: http.IncomingHttpHeaders; body: string; url?: string }> = [];
    const url = await serve(async (req, res) => {
      let body = '';
      for await (const c of req) body += c;
      seen.push({ headers: req.headers, body, url: req.url });
      if (req.url === '/v1/app/voices') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ voices: [] }));
      else if (req.url === '/v1/app/stories/x') res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: { error: 'no such story', code: 'STORY_NOT_FOUND' } }));
      else res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: { error: 'secret mismatch', code: 'SECRET_MISMATCH' } }));
    });
    const clientId = randomUUID();
    const c = new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId, clientSecret: SECRET } });
    const ok = await c.requestApp('GET', '/v1/app/voices');
    expect(ok.json).toEqual({ voices: [] });
    expect(seen[0].headers['x-client-id']).toBe(clientId);
    expect(seen[0].headers['x-client-secret']).toBe(SECRET);
    expect(seen[0].headers['x-workspace-key']).toBe(KEY);
    expect(seen[0].headers['content-type']).toBeUndefined();
    expect(await failure(c.requestApp('GET', '/v1/app/stories/x'))).toMatchObject({ code: 'protocol', status: 404, serverCode: 'STORY_NOT_FOUND' });
    expect(await failure(c.requestApp('POST', '/v1/app/voices/design', { design_prompt: 'calm' }))).toMatchObject({ code: 'auth_rejected', serverCode: 'SECRET_MISMATCH' });
    expect(seen[2].headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[2].body)).toEqual({ design_prompt: 'calm' });
  });

  it('does not go through fetch (undici costs the daemon ~9 MB): session, SDP and REST work with fetch unusable', async () => {
    vi.stubGlobal('fetch', () => {
      throw new Error('fetch must not be used by the device client');
    });
    const p = await startPeer();
    const c = new ServiceClient({ baseUrl: p.url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } });
    expect((await c.createSession()).id).toMatch(/^sess_/);
    expect(await failure(c.exchangeSdp('hello'))).toMatchObject({ code: 'protocol', serverCode: 'invalid_sdp' });
  });

  it('regression: openai-realtime minted its client key without tools, so a GA service offered the device functions to nobody', async () => {
    let minted: { path?: string; body?: string } = {};
    const url = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        minted = { path: req.url, body };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ value: 'ek_0123456789abcdef' }));
      });
    });
    const c = new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET }, protocol: 'openai-realtime' });
    await c.createSession();
    expect(minted.path).toBe('/v1/realtime/client_secrets');
    const session = (JSON.parse(minted.body ?? '{}') as { session?: { type?: string; tools?: { type: string; name: string }[] } }).session;
    expect(session?.type).toBe('realtime');
    expect(session?.tools?.map((t) => `${t.type}:${t.name}`)).toEqual(DEVICE_FUNCTION_NAMES.map((n) => `function:${n}`));
  });

  it('a redirect is not followed: a protocol error that names where to point server.url', async () => {
    const url = await serve((req, res) => res.writeHead(301, { location: 'https://voice.example.com/v1/realtime/sessions' }).end());
    const c = new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: SECRET } });
    const e = await failure(c.createSession());
    expect(e).toMatchObject({ code: 'protocol', status: 301 });
    expect(e.message).toContain('redirects to https://voice.example.com/v1/realtime/sessions');
    expect(e.message).toContain('server.url');
  });
});
