// The GA WebRTC routes against the real companion: client keys minted with device headers, a werift client
// posting its offer with that key (201 + Location), session.update with a client-declared tool that the assistant
// then calls and whose output it speaks, output_audio_buffer.* events, hangup, and every refusal in the error shape.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RealtimeTestClient } from '../../support/realtimeTestClient.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';
import { speechClip } from '../../support/speechWav.js';
import { ClientSecretStore } from '../../../src/companion/realtime/clientSecrets.js';
import { defaultGaSession } from '../../../src/companion/realtime/gaSession.js';

async function mint(srv: RealtimeTestServer, headers: Record<string, string>, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${srv.url}/v1/realtime/client_secrets`, {
    method: 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const WEATHER_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather where the speaker is.',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

describe('GA realtime routes', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    srv = await startRealtimeTestServer();
  });
  afterAll(async () => srv?.close());

  it('client_secrets: a short-lived ek_ key bound to the device, with the session it will open', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await mint(srv, srv.newDevice(), { expires_after: { anchor: 'created_at', seconds: 60 }, session: { type: 'realtime', instructions: 'Be brief.', tools: [WEATHER_TOOL] } });
    expect(r.status).toBe(200);
    expect(r.json.value).toMatch(/^ek_[A-Za-z0-9_-]{32}$/);
    expect(r.json.expires_at).toBeGreaterThanOrEqual(before + 60);
    expect(r.json.expires_at).toBeLessThanOrEqual(before + 61);
    expect(r.json.session).toMatchObject({ type: 'realtime', instructions: 'Be brief.', tools: [{ name: 'get_weather', type: 'function' }] });
  });

  it('client_secrets with the workspace key as an admin Bearer key (a web server without a device)', async () => {
    const res = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: { authorization: `Bearer ${srv.workspaceKey}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { value: string }).value).toMatch(/^ek_/);
    const wrong = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: { authorization: 'Bearer wk_not_a_workspace_key' } });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('invalid_workspace_key');
    const badId = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST', headers: { authorization: `Bearer ${srv.workspaceKey}`, 'x-client-id': 'nope' } });
    expect(((await badId.json()) as { error: { code: string } }).error.code).toBe('invalid_client_id');
  });

  it('refusals in the error shape', async () => {
    const noDevice = await fetch(`${srv.url}/v1/realtime/client_secrets`, { method: 'POST' });
    const json = async (r: Response): Promise<any> => r.json();
    expect(noDevice.status).toBe(400);
    expect((await json(noDevice)).error.code).toBe('missing_header');
    const badTtl = await mint(srv, srv.newDevice(), { expires_after: { anchor: 'created_at', seconds: 5 } });
    expect(badTtl.status).toBe(400);
    expect(badTtl.json.error).toMatchObject({ code: 'invalid_session', type: 'invalid_request_error' });
    const badTool = await mint(srv, srv.newDevice(), { session: { tools: [{ type: 'function', name: 'no spaces allowed' }] } });
    expect(badTool.json.error.code).toBe('invalid_session');
    expect(badTool.json.error.message).toContain('session.tools[0].name');

    const sdpPost = (headers: Record<string, string>) =>
      fetch(`${srv.url}/v1/realtime/calls`, { method: 'POST', headers: { ...headers, 'content-type': 'application/sdp' }, body: 'v=0\r\n' });
    for (const headers of [{}, { authorization: 'Bearer ek_unknown' }, { authorization: 'Bearer sk-not-a-client-key' }] as Record<string, string>[]) {
      const res = await sdpPost(headers);
      expect(res.status).toBe(401);
      expect((await json(res)).error).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error' });
    }
    const key = (await mint(srv, srv.newDevice())).json.value as string;
    const notSdp = await fetch(`${srv.url}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, body: 'x' });
    expect((await json(notSdp)).error.code).toBe('unsupported_content_type');
    const badSdp = await fetch(`${srv.url}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/sdp' }, body: 'hello' });
    expect(badSdp.status).toBe(400);
    expect((await json(badSdp)).error.code).toBe('invalid_sdp');
    const form = new FormData();
    form.set('sdp', 'v=0\r\n');
    form.set('session', '{not json');
    const badPart = await fetch(`${srv.url}/v1/realtime/calls`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect((await json(badPart)).error.code).toBe('invalid_session');
    const hangup = await fetch(`${srv.url}/v1/realtime/calls/call_nothere/hangup`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(hangup.status).toBe(404);
    expect((await json(hangup)).error.code).toBe('call_not_found');
  });

  it('a call with a client key: 201 + Location, GA session events, a client tool called and its output spoken, hangup', async () => {
    const device = srv.newDevice();
    const key = (await mint(srv, device)).json.value as string;
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: {}, gaKey: key });
    try {
      expect(c.location).toMatch(/^\/v1\/realtime\/calls\/call_[A-Za-z0-9_-]+$/);
      const created = await c.waitFor('session.created', () => true, 5000, true);
      expect(created.session).toMatchObject({ type: 'realtime', tools: [] });

      c.send({ type: 'session.update', event_id: 'ev1', session: { type: 'realtime', tools: [WEATHER_TOOL], audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 400 } } } } });
      const updated = await c.waitFor('session.updated');
      expect(updated.session).toMatchObject({ tools: [{ name: 'get_weather' }], audio: { input: { turn_detection: { silence_duration_ms: 400 } } } });
      c.send({ type: 'session.update', event_id: 'ev2', session: { type: 'translation' } });
      const refused = await c.waitFor('error', (e) => e.error.event_id === 'ev2');
      expect(refused.error.message).toContain('session.type');

      const call = c.waitFor('response.output_item.done', (e) => e.item.type === 'function_call');
      await c.play(speechClip('what is the weather like').pcm);
      const fc = (await call).item;
      if (fc.type !== 'function_call') throw new Error('not a function call');
      expect(fc.name).toBe('get_weather');

      const spoken = c.waitFor('response.output_audio_transcript.done');
      const started = c.waitFor('output_audio_buffer.started');
      const stopped = c.waitFor('output_audio_buffer.stopped', () => true, 20_000);
      c.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: fc.call_id, output: JSON.stringify('It is sunny and twenty degrees.') } });
      c.send({ type: 'response.create' });
      expect((await spoken).transcript).toBe('It is sunny and twenty degrees.');
      const s = await started;
      expect((await stopped).response_id).toBe(s.response_id);
      expect(c.audio.audiblePackets).toBeGreaterThan(25);
      expect(c.badMessages).toEqual([]);

      // another device's key cannot hang up this call; the owner's can, once
      const other = (await mint(srv, srv.newDevice())).json.value as string;
      const foreign = await fetch(`${srv.url}${c.location}/hangup`, { method: 'POST', headers: { authorization: `Bearer ${other}` } });
      expect(foreign.status).toBe(404);
      const ok = await fetch(`${srv.url}${c.location}/hangup`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
      expect(ok.status).toBe(200);
      // the server ends the call: its SCTP association is aborted, so the data channel closes
      await expect.poll(() => c.channel.readyState, { timeout: 10_000 }).toBe('closed');
      const again = await fetch(`${srv.url}${c.location}/hangup`, { method: 'POST', headers: device });
      expect(again.status).toBe(404);
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe('GA realtime routes: the public protocol on a real call', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    // the spec's route speaks the legacy transcript family here; GA calls must not
    srv = await startRealtimeTestServer({ realtime: { transcriptFamily: 'legacy' } });
  });
  afterAll(async () => srv?.close());

  it('regression: a GA call took the server-wide transcript family (legacy) and sent response.audio_transcript.*', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: {}, gaKey: (await mint(srv, srv.newDevice())).json.value });
    try {
      const done = c.waitFor('response.done', (e) => e.response.status === 'completed');
      await c.play(speechClip('hello').pcm);
      await done;
      expect(c.eventsOf('response.output_audio_transcript.done').map((e) => e.transcript)).toEqual(['Hello! How can I help?']);
      expect(c.eventsOf('response.audio_transcript.delta')).toEqual([]);
      expect(c.badMessages).toEqual([]);
    } finally {
      await c.close();
    }
  }, 60_000);

  it('regression: input_audio_buffer.commit was unknown_event; it ends the utterance without waiting for the silence', async () => {
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: {}, gaKey: (await mint(srv, srv.newDevice())).json.value });
    try {
      // 5 s of silence would end the turn; the commit ends it at once
      c.send({ type: 'session.update', session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 5000 } } } } });
      await c.waitFor('session.updated');
      await c.play(speechClip('hello', { padAfterMs: 200 }).pcm);
      const sent = performance.now();
      c.send({ type: 'input_audio_buffer.commit' });
      const committed = await c.waitFor('input_audio_buffer.committed', () => true, 4000);
      expect(performance.now() - sent).toBeLessThan(2000);
      const heard = await c.waitFor('conversation.item.input_audio_transcription.completed', (e) => e.item_id === committed.item_id);
      expect(heard.transcript).toBe('hello');
      expect((await c.waitFor('response.output_audio_transcript.done')).transcript).toBe('Hello! How can I help?');
      // nothing left to commit
      c.send({ type: 'input_audio_buffer.commit', event_id: 'again' });
      expect((await c.waitFor('error', (e) => e.error.event_id === 'again')).error.code).toBe('input_audio_buffer_commit_empty');
      expect(c.badMessages).toEqual([]);
    } finally {
      await c.close();
    }
  }, 60_000);
});

describe('ClientSecretStore', () => {
  it('keys expire, only digests are kept, malformed bearers resolve to nothing', () => {
    let now = 1_000_000;
    const store = new ClientSecretStore(() => now);
    const session = defaultGaSession({ silenceDurationMs: 300, voice: 'en' });
    const k = store.mint({ workspaceId: 'w', clientId: 'c', session }, 10);
    expect(store.resolve(k.value)?.clientId).toBe('c');
    expect(JSON.stringify([...(store as any).keys.keys()])).not.toContain(k.value.slice(3));
    expect(store.resolve(k.value.replace(/.$/, (ch) => (ch === 'a' ? 'b' : 'a')))).toBeUndefined();
    expect(store.resolve('ek_' + 'x'.repeat(300))).toBeUndefined();
    now += 10_000;
    expect(store.resolve(k.value)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  // Date.now is a spy here (a fake: the machine's clock is not the test's to set)
  it('regression: a key minted just before the wall clock stepped forward (NTP syncing on a board without an RTC) was refused as expired; it lives its ttl', () => {
    const realNow = Date.now.bind(Date);
    let step = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + step);
    try {
      const store = new ClientSecretStore();
      const session = defaultGaSession({ silenceDurationMs: 300, voice: 'en' });
      const k = store.mint({ workspaceId: 'w', clientId: 'c', session }, 60);
      expect(Math.abs(k.expiresAt - (realNow() + 60_000))).toBeLessThan(1_000); // shown on the wall clock
      step = 3_600_000;
      expect(store.resolve(k.value)?.clientId).toBe('c');
    } finally {
      vi.restoreAllMocks();
    }
  });
});
