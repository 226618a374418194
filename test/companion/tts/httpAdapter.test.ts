// The external-TTS adapter against a real local HTTP server. FakeNeuralTtsServer is a stand-in: no neural TTS
// server can run on this machine, so this small server speaks the adapter's protocol and fails on demand.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { encodeWav } from '../../../src/common/audio/wav.js';
import { api, newDevice, restError, startTestCompanion, type Device, type TestCompanion } from '../helpers.js';

interface FakeNeuralTtsServer {
  url: string;
  /** echoAuth: a failure's body quotes the request's Authorization header, as some servers' errors do */
  mode: { profiles: number; synthesize: number; echoAuth?: boolean };
  requests: Array<{ path: string; body: Record<string, unknown>; auth?: string }>;
  close(): Promise<void>;
}

async function startFakeNeuralTts(): Promise<FakeNeuralTtsServer> {
  const mode: FakeNeuralTtsServer['mode'] = { profiles: 200, synthesize: 200 };
  const requests: FakeNeuralTtsServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      requests.push({ path: req.url ?? '', body, auth: req.headers.authorization });
      const status = req.url === '/v1/profiles' ? mode.profiles : mode.synthesize;
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json' }).end(mode.echoAuth ? JSON.stringify({ error: `bad credentials: ${req.headers.authorization}` }) : '{"error":"model crashed"}');
        return;
      }
      if (req.url === '/v1/profiles') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ profile_id: `neural-${body.voice_id}` }));
        return;
      }
      // 1 s of a 200 Hz tone at 16 kHz, two "words"
      const pcm = new Int16Array(16000).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 200 * i) / 16000)));
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          audio_wav_base64: encodeWav(pcm, 16000).toString('base64'),
          words: [
            { word: 'Hello', start_ms: 0, end_ms: 400 },
            { word: 'world', start_ms: 450, end_ms: 950 },
          ],
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, mode, requests, close: () => new Promise((r) => server.close(() => r())) };
}

let fake: FakeNeuralTtsServer;
let t: TestCompanion;
let d: Device;
let voiceId: string;

beforeAll(async () => {
  fake = await startFakeNeuralTts();
  t = await startTestCompanion({ tts: { adapter: 'http', http: { baseUrl: fake.url, apiKey: 'tts-api-key-123' } } });
  const admin = new CompanionAdmin(t.dataDir);
  voiceId = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'V', design: 'a calm female voice' }).id;
  admin.importStories('alpha', [{ slug: 's', name: 'S', transcript: 'Hello world.' }]);
  admin.close();
  d = newDevice(t.key);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const tts = () => api(t.server.url, 'POST', `/v1/app/text-to-speech/${voiceId}/with-timestamps`, { device: d, json: { text: 'Hello world' } });

describe('HttpTtsAdapter (external neural TTS)', () => {
  it('ADAPTER_SYNC_FAILED when the profile call fails, on synthesis and on story narration', async () => {
    fake.mode.profiles = 500;
    expect(restError(await tts())).toEqual([502, 'ADAPTER_SYNC_FAILED']);
    expect(restError(await api(t.server.url, 'POST', '/v1/app/stories/s/read', { device: d, json: {} }))).toEqual([502, 'ADAPTER_SYNC_FAILED']);
    const design = await api(t.server.url, 'POST', '/v1/app/voices/design', { device: d, json: { name: 'x', design_prompt: 'a deep male voice' } });
    expect(restError(design)).toEqual([502, 'ADAPTER_SYNC_FAILED']);
    // nothing half-created: the failed design left no voice
    expect((await api(t.server.url, 'GET', '/v1/app/voices', { device: d })).json.voices).toHaveLength(1);
  });

  it('regression: the TTS server\'s error body went to devices whole, with our API key when it echoed it', async () => {
    fake.mode.profiles = 401;
    fake.mode.echoAuth = true;
    try {
      const r = await tts();
      expect(restError(r)).toEqual([502, 'ADAPTER_SYNC_FAILED']);
      const body = JSON.stringify(r.json);
      expect(body).toContain('bad credentials: Bearer [key]');
      expect(body).not.toContain('tts-api-key-123');
    } finally {
      fake.mode.echoAuth = false;
      fake.mode.profiles = 200;
    }
  });

  it('registers the profile once, then synthesises with its profile_id', async () => {
    fake.mode.profiles = 200;
    fake.requests.length = 0;
    const r = await tts();
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.timestamps).toEqual([
      { word: 'Hello', start_ms: 0, end_ms: 400 },
      { word: 'world', start_ms: 450, end_ms: 950 },
    ]);
    expect(r.json.duration_seconds).toBe(1);
    expect(fake.requests.map((x) => x.path)).toEqual(['/v1/profiles', '/v1/synthesize']);
    expect(fake.requests[1].body.profile_id).toBe(`neural-${voiceId}`);
    expect(fake.requests[0].auth).toBe('Bearer tts-api-key-123');
    await tts();
    expect(fake.requests.map((x) => x.path)).toEqual(['/v1/profiles', '/v1/synthesize', '/v1/synthesize']);
    const mp3 = await api(t.server.url, 'POST', `/v1/app/text-to-speech/${voiceId}/with-timestamps`, { device: d, json: { text: 'Hello world', output_format: 'mp3' } });
    expect(mp3.status).toBe(200);
    expect((await fetch(mp3.json.audio_url)).headers.get('content-type')).toBe('audio/mpeg');
  });

  it('TTS_FAILED when the synthesis call fails', async () => {
    fake.mode.synthesize = 500;
    expect(restError(await tts())).toEqual([500, 'TTS_FAILED']);
    fake.mode.synthesize = 200;
  });

  it('STORAGE_ERROR when the output cannot be stored', async () => {
    const ttsDir = path.join(t.dataDir, 'audio', 'tts');
    renameSync(ttsDir, `${ttsDir}.aside`);
    writeFileSync(ttsDir, 'not a directory');
    try {
      expect(restError(await tts())).toEqual([500, 'STORAGE_ERROR']);
    } finally {
      rmSync(ttsDir, { force: true });
      renameSync(`${ttsDir}.aside`, ttsDir);
    }
  });

  it('ADAPTER_NOT_CONFIGURED when the adapter has no URL', async () => {
    const bare = await startTestCompanion({ tts: { adapter: 'http' } });
    try {
      const admin = new CompanionAdmin(bare.dataDir);
      const v = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'V', design: 'a calm female voice' }).id;
      admin.close();
      const r = await api(bare.server.url, 'POST', `/v1/app/text-to-speech/${v}/with-timestamps`, { device: newDevice(bare.key), json: { text: 'hi' } });
      expect(restError(r)).toEqual([503, 'ADAPTER_NOT_CONFIGURED']);
    } finally {
      await bare.close();
    }
  });
});
