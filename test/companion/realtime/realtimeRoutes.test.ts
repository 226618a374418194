// Every error path of the realtime routes and of device authentication on them (spec sections 4, 5, 7), against
// the real server: Fastify, SQLite, the DeviceAuthenticator (trust on first use) and werift for real offers.
import { randomBytes } from 'node:crypto';
import { RTCPeerConnection } from 'werift';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setClientStatus } from '../../../src/companion/db/clients.js';
import { HEADER } from '../../../src/protocol/headers.js';
import { REALTIME_ERRORS, type RealtimeErrorCode } from '../../../src/protocol/realtimeErrors.js';
import { RealtimeTestClient } from '../../support/realtimeTestClient.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';

async function offer(opts: { audio?: boolean } = {}): Promise<string> {
  const pc = new RTCPeerConnection({ iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'] });
  if (opts.audio !== false) pc.addTransceiver('audio', { direction: 'sendrecv' });
  pc.createDataChannel('oai-events');
  await pc.setLocalDescription(await pc.createOffer());
  const sdp = pc.localDescription!.sdp;
  await pc.close();
  return sdp;
}

function post(srv: RealtimeTestServer, path: string, headers: Record<string, string>, body?: string) {
  return fetch(`${srv.url}${path}`, { method: 'POST', headers, body });
}

async function expectError(res: Response, code: RealtimeErrorCode, message?: RegExp) {
  const body = (await res.json()) as { error: { message: string; type: string; code: string } };
  expect(body.error.code).toBe(code);
  expect(res.status).toBe(REALTIME_ERRORS[code].status);
  expect(body.error.type).toBe(REALTIME_ERRORS[code].type);
  expect(body.error.message).toMatch(message ?? /\S/);
  return body.error;
}

const json = { 'content-type': 'application/json' };
const sdpType = { 'content-type': 'application/sdp' };

describe('realtime routes: authentication (both routes)', () => {
  let srv: RealtimeTestServer;
  let goodOffer: string;
  beforeAll(async () => {
    srv = await startRealtimeTestServer();
    goodOffer = await offer();
  });
  afterAll(async () => srv?.close());

  const routes = [
    { path: '/v1/realtime/sessions', type: json, body: () => JSON.stringify({ modalities: ['audio'] }) },
    { path: '/v1/realtime', type: sdpType, body: () => goodOffer },
  ];

  for (const r of routes) {
    describe(r.path, () => {
      for (const [name, display] of [
        [HEADER.workspaceKey, 'X-Workspace-Key'],
        [HEADER.clientId, 'X-Client-Id'],
        [HEADER.clientSecret, 'X-Client-Secret'],
      ]) {
        it(`400 missing_header naming ${display}`, async () => {
          const h = srv.newDevice();
          delete h[name];
          const e = await expectError(await post(srv, r.path, { ...h, ...r.type }, r.body()), 'missing_header');
          expect(e.message).toContain(display);
        });
      }
      it('401 invalid_client_id for a malformed client id', async () => {
        const h = { ...srv.newDevice(), [HEADER.clientId]: 'device-1' };
        await expectError(await post(srv, r.path, { ...h, ...r.type }, r.body()), 'invalid_client_id', /UUID/);
      });
      it('400 invalid_client_secret for a secret shorter than 32 characters', async () => {
        const h = { ...srv.newDevice(), [HEADER.clientSecret]: 'x'.repeat(31) };
        await expectError(await post(srv, r.path, { ...h, ...r.type }, r.body()), 'invalid_client_secret', /32/);
      });
      it('401 invalid_workspace_key for an unknown workspace key', async () => {
        const h = { ...srv.newDevice(), [HEADER.workspaceKey]: 'wk_not_a_real_key' };
        await expectError(await post(srv, r.path, { ...h, ...r.type }, r.body()), 'invalid_workspace_key');
      });
      it('trust on first use: the first secret enrolls, another secret later is 401 secret_mismatch', async () => {
        const h = srv.newDevice();
        const first = await post(srv, '/v1/realtime/sessions', { ...h, ...json }, '{}');
        expect(first.status).toBe(200);
        const wrong = { ...h, [HEADER.clientSecret]: randomBytes(24).toString('hex') };
        await expectError(await post(srv, r.path, { ...wrong, ...r.type }, r.body()), 'secret_mismatch');
      });
      it('404 client_not_activated for a client an administrator disabled', async () => {
        const h = srv.newDevice();
        expect((await post(srv, '/v1/realtime/sessions', { ...h, ...json }, '{}')).status).toBe(200);
        setClientStatus(srv.server.context.db, h[HEADER.clientId], 'disabled');
        await expectError(await post(srv, r.path, { ...h, ...r.type }, r.body()), 'client_not_activated');
      });
    });
  }
});

describe('realtime routes: closed enrollment', () => {
  let srv: RealtimeTestServer;
  beforeAll(async () => {
    srv = await startRealtimeTestServer({ enrollment: 'closed' });
  });
  afterAll(async () => srv?.close());

  it('404 client_not_found for a client id that was never registered', async () => {
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{}'), 'client_not_found');
  });
});

describe('POST /v1/realtime/sessions', () => {
  let srv: RealtimeTestServer;
  const ice = [
    { urls: ['stun:stun.example.net:3478'], username: '', credential: '' },
    { urls: ['turn:turn.example.net:3478?transport=udp'], username: 'speaker', credential: 'turn-pass' },
  ];
  beforeAll(async () => {
    srv = await startRealtimeTestServer({ realtime: { iceServers: ice } });
  });
  afterAll(async () => srv?.close());

  it('returns {id, iceServers} with the configured STUN/TURN servers', async () => {
    const res = await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, JSON.stringify({ modalities: ['text', 'audio'] }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: string; iceServers: unknown; modalities: string[] };
    expect(body.id).toMatch(/^sess_/);
    expect(body.iceServers).toEqual(ice);
    expect(body.modalities).toEqual(['text', 'audio']);
  });
  it('400 unsupported_content_type for a body that is not JSON-typed', async () => {
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), 'content-type': 'text/plain' }, '{"modalities":["audio"]}'), 'unsupported_content_type', /application\/json/);
  });
  it('400 invalid_json for a malformed body', async () => {
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{"modalities":'), 'invalid_json');
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '[1,2]'), 'invalid_json');
  });
  it('400 invalid_modalities for values other than text/audio', async () => {
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{"modalities":["video"]}'), 'invalid_modalities');
    await expectError(await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{"modalities":"audio"}'), 'invalid_modalities');
  });
});

describe('POST /v1/realtime (SDP exchange)', () => {
  let srv: RealtimeTestServer;
  let good: string;
  beforeAll(async () => {
    srv = await startRealtimeTestServer({ realtime: { maxCalls: 1, connectTimeoutMs: 1000, idleTimeoutMs: 1000 } });
    good = await offer();
  });
  afterAll(async () => srv?.close());

  it('session ICE servers default to an empty list (LAN)', async () => {
    const res = await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{"modalities":["audio"]}');
    expect(((await res.json()) as { iceServers: unknown }).iceServers).toEqual([]);
  });
  it('400 unsupported_content_type for JSON or no content type', async () => {
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...json }, JSON.stringify({ sdp: good })), 'unsupported_content_type', /application\/sdp/);
    await expectError(await post(srv, '/v1/realtime', srv.newDevice()), 'unsupported_content_type');
  });
  it('400 invalid_sdp for an empty body, text that is not SDP, and an offer without ICE/DTLS parameters', async () => {
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, ''), 'invalid_sdp', /empty/);
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, 'hello server'), 'invalid_sdp', /v=0/);
    const noFingerprint = good.split('\r\n').filter((l) => !l.startsWith('a=fingerprint')).join('\r\n');
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, noFingerprint), 'invalid_sdp', /fingerprint/);
    const truncated = good.slice(0, Math.floor(good.length / 3)) + '\r\nthis is {broken}\r\n';
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, truncated), 'invalid_sdp');
  });
  it('400 no_audio_in_offer for a data-channel-only offer and for audio without Opus', async () => {
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer({ audio: false })), 'no_audio_in_offer', /audio/);
    const noOpus = good.replace(/opus\/48000\/2/gi, 'G722/8000');
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, noOpus), 'no_audio_in_offer', /Opus/);
  });
  it('400 invalid_sdp for a body over 64 KiB', async () => {
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, good + 'a=x-pad:' + 'p'.repeat(70_000) + '\r\n'), 'invalid_sdp');
  });
  it('a call that never connects is closed after connectTimeoutMs; until then the call limit answers 500 too_many_calls', async () => {
    const res = await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/sdp/);
    const answer = await res.text();
    expect(answer).toMatch(/^v=0/);
    expect(answer).toMatch(/a=candidate:.* 127\.0\.0\.1 /); // non-trickle: the answer carries candidates
    await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer()), 'too_many_calls');
    // the offerer never applied the answer: the server gives up on the call and frees its slot
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const probe = await post(srv, '/v1/realtime/sessions', { ...srv.newDevice(), ...json }, '{}');
      expect(probe.status).toBe(200);
      const r = await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer());
      status = r.status;
      if (status !== 200) await expectError(r, 'too_many_calls');
    }
    expect(status).toBe(200);
  });
  it('a connected call that goes silent (no RTP, no data) is closed after idleTimeoutMs', async () => {
    // wait for the previous test's unconnected call to be swept
    await new Promise((r) => setTimeout(r, 2500));
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    try {
      c.sending = false;
      let closed = false;
      for (let i = 0; i < 40 && !closed; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const r = await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer());
        closed = r.status === 200;
        if (!closed) await expectError(r, 'too_many_calls');
      }
      expect(closed).toBe(true);
    } finally {
      await c.close();
    }
  });
});

describe('unconnected offers are limited per device (issue 17)', () => {
  it('regression: four offers a device never completes no longer lock every other device out; its newest offer supersedes the older ones', async () => {
    const srv = await startRealtimeTestServer({ realtime: { maxCalls: 4, connectTimeoutMs: 15_000 } });
    try {
      const greedy = srv.newDevice();
      for (let i = 0; i < 4; i++) {
        const r = await post(srv, '/v1/realtime', { ...greedy, ...sdpType }, await offer());
        expect(r.status).toBe(200);
      }
      // one slot is held by the greedy device (its newest offer), three are free: before, all four were its own
      for (let i = 0; i < 3; i++) {
        const r = await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer());
        expect(r.status).toBe(200);
      }
      // now the server is full: a fifth device is refused, the greedy device's newest offer still replaces its own
      await expectError(await post(srv, '/v1/realtime', { ...srv.newDevice(), ...sdpType }, await offer()), 'too_many_calls');
      expect((await post(srv, '/v1/realtime', { ...greedy, ...sdpType }, await offer())).status).toBe(200);
    } finally {
      await srv.close();
    }
  }, 60_000);

  it('the default call limit is what the server holds: 32 calls per core', async () => {
    const { loadCompanionSettings, CALLS_PER_CORE } = await import('../../../src/companion/settings.js');
    const os = await import('node:os');
    expect(CALLS_PER_CORE).toBe(32);
    expect(loadCompanionSettings({}, {}).realtime.maxCalls).toBe(32 * os.availableParallelism());
  });
});

describe('realtime client ids', () => {
  it('accepts an upper-case UUID as the same client (ids are case-insensitive)', async () => {
    const srv = await startRealtimeTestServer();
    try {
      const h = srv.newDevice();
      expect((await post(srv, '/v1/realtime/sessions', { ...h, ...json }, '{}')).status).toBe(200);
      const upper = { ...h, [HEADER.clientId]: h[HEADER.clientId].toUpperCase() };
      expect((await post(srv, '/v1/realtime/sessions', { ...upper, ...json }, '{}')).status).toBe(200);
    } finally {
      await srv.close();
    }
  });
});
