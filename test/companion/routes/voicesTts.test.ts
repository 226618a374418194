// GET /voices, POST /voices/design, POST /text-to-speech/{id}/with-timestamps and the device authentication
// of the REST routes, through real HTTP against a running companion server (real espeak-ng, real SQLite).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { decodeWav } from '../../../src/common/audio/wav.js';
import { deviceHeaders } from '../../../src/protocol/headers.js';
import { api, newDevice, restError, startTestCompanion, type Device, type TestCompanion } from '../helpers.js';

let t: TestCompanion;
let url: string;
let a1: Device; // alpha, first device
let a2: Device; // alpha, second device
let b1: Device; // beta
let workspaceVoiceId: string;
let a1VoiceId: string;
let betaVoiceId: string;

beforeAll(async () => {
  t = await startTestCompanion();
  url = t.server.url;
  a1 = newDevice(t.key);
  a2 = newDevice(t.key);
  b1 = newDevice(t.otherKey);
  const admin = new CompanionAdmin(t.dataDir);
  workspaceVoiceId = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'House voice', design: 'a calm female voice' }).id;
  admin.close();
  // enroll the three devices (trust on first use) before anything tries a wrong secret with their ids
  for (const d of [a1, a2, b1]) expect((await api(url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

describe('device authentication on /v1/app', () => {
  it('answers every authentication failure with {detail:{error,code}} and its status', async () => {
    const h = a1.headers;
    const without = (name: string) => Object.fromEntries(Object.entries(h).filter(([k]) => k !== name));
    const cases: Array<[Record<string, string>, number, string]> = [
      [without('x-workspace-key'), 400, 'MISSING_HEADER'],
      [without('x-client-id'), 400, 'MISSING_HEADER'],
      [without('x-client-secret'), 400, 'MISSING_HEADER'],
      [{ ...h, 'x-client-id': 'device-1' }, 401, 'INVALID_CLIENT_ID'],
      [{ ...h, 'x-client-secret': 'short' }, 400, 'INVALID_CLIENT_SECRET'],
      [{ ...h, 'x-workspace-key': 'wk_not_a_key' }, 401, 'INVALID_WORKSPACE_KEY'],
    ];
    for (const [headers, status, code] of cases) {
      const r = await api(url, 'GET', '/v1/app/voices', { headers });
      expect(restError(r)).toEqual([status, code]);
      expect(typeof r.json.detail.error).toBe('string');
    }
    const missing = await api(url, 'GET', '/v1/app/voices', { headers: without('x-client-id') });
    expect(missing.json.detail.error).toContain('X-Client-Id');
  });

  it('trust on first use: same secret accepted, another refused; disabled clients get CLIENT_NOT_ACTIVATED', async () => {
    const d = newDevice(t.key);
    expect((await api(url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
    expect((await api(url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
    const thief = { ...d, headers: deviceHeaders({ workspaceKey: t.key, clientId: d.clientId, clientSecret: 'x'.repeat(40) }) };
    expect(restError(await api(url, 'GET', '/v1/app/voices', { device: thief }))).toEqual([401, 'SECRET_MISMATCH']);
    // the same client id with the other workspace's key
    const moved = { ...d, headers: deviceHeaders({ workspaceKey: t.otherKey, clientId: d.clientId, clientSecret: d.secret }) };
    expect(restError(await api(url, 'GET', '/v1/app/voices', { device: moved }))).toEqual([401, 'INVALID_WORKSPACE_KEY']);
    const admin = new CompanionAdmin(t.dataDir);
    admin.disableClient(d.clientId);
    admin.close();
    expect(restError(await api(url, 'GET', '/v1/app/stories', { device: d }))).toEqual([404, 'CLIENT_NOT_ACTIVATED']);
  });

  it('refuses an upload before reading it when the device is not authenticated', async () => {
    const form = new FormData();
    form.set('name', 'x');
    form.set('audio_file', new Blob([Buffer.alloc(1024 * 1024)]), 'a.wav');
    const r = await api(url, 'POST', '/v1/app/voices/clone', { headers: { ...a1.headers, 'x-client-secret': 'y'.repeat(40) }, body: form });
    expect(restError(r)).toEqual([401, 'SECRET_MISMATCH']);
  });
});

describe('GET /v1/app/voices and POST /v1/app/voices/design', () => {
  it('lists the workspace voice with a playable preview', async () => {
    const r = await api(url, 'GET', '/v1/app/voices', { device: a1 });
    expect(r.status).toBe(200);
    expect(r.json.voices).toEqual([expect.objectContaining({ voice_id: workspaceVoiceId, name: 'House voice', category: 'workspace' })]);
  });

  it('MISSING_DESIGN_PROMPT when design_prompt is absent, empty or blank', async () => {
    for (const json of [{ name: 'x' }, { name: 'x', design_prompt: '' }, { name: 'x', design_prompt: '   ' }, {}]) {
      expect(restError(await api(url, 'POST', '/v1/app/voices/design', { device: a1, json }))).toEqual([400, 'MISSING_DESIGN_PROMPT']);
    }
  });

  it('DESIGN_FAILED when the description cannot become a voice', async () => {
    const unknownLanguage = await api(url, 'POST', '/v1/app/voices/design', { device: a1, json: { name: 'x', design_prompt: 'a deep male voice', language: 'xx-zz' } });
    expect(restError(unknownLanguage)).toEqual([422, 'DESIGN_FAILED']);
    const noTraits = await api(url, 'POST', '/v1/app/voices/design', { device: a1, json: { name: 'x', design_prompt: 'qwerty zxcvb plonk' } });
    expect(restError(noTraits)).toEqual([422, 'DESIGN_FAILED']);
  });

  it('designs a voice (201) with reference audio behind a signed preview URL', async () => {
    const r = await api(url, 'POST', '/v1/app/voices/design', {
      device: a1,
      json: { name: 'Grandpa', design_prompt: 'an old man with a deep, slow voice', language: 'en-gb', description: 'for bedtime' },
    });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ voice_id: expect.any(String), name: 'Grandpa', status: 'ready', preview_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1\/audio\//) });
    a1VoiceId = r.json.voice_id;
    const audio = await fetch(r.json.preview_url);
    expect(audio.status).toBe(200);
    expect(audio.headers.get('content-type')).toBe('audio/wav');
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    expect(wav.pcm.length / wav.sampleRate).toBeGreaterThan(1);
    const b = await api(url, 'POST', '/v1/app/voices/design', { device: b1, json: { name: 'Beta voice', design_prompt: 'a bright young female voice' } });
    expect(b.status).toBe(201);
    betaVoiceId = b.json.voice_id;
  });

  it('a device sees workspace voices plus its own clones, never another device\'s', async () => {
    const ids = async (d: Device) => (await api(url, 'GET', '/v1/app/voices', { device: d })).json.voices.map((v: { voice_id: string }) => v.voice_id);
    expect(await ids(a1)).toEqual([workspaceVoiceId, a1VoiceId]);
    expect(await ids(a2)).toEqual([workspaceVoiceId]);
    expect(await ids(b1)).toEqual([betaVoiceId]);
    const mine = (await api(url, 'GET', '/v1/app/voices', { device: a1 })).json.voices[1];
    expect(mine).toMatchObject({ category: 'cloned', name: 'Grandpa' });
  });

  it('maps request-format faults to INVALID_REQUEST / UNSUPPORTED_CONTENT_TYPE / PAYLOAD_TOO_LARGE', async () => {
    const bad = await api(url, 'POST', '/v1/app/voices/design', { device: a1, headers: { 'content-type': 'application/json' }, body: '{"design_prompt": ' });
    expect(restError(bad)).toEqual([400, 'INVALID_REQUEST']);
    const text = await api(url, 'POST', '/v1/app/voices/design', { device: a1, headers: { 'content-type': 'text/plain' }, body: 'a deep voice' });
    expect(restError(text)).toEqual([415, 'UNSUPPORTED_CONTENT_TYPE']);
    const huge = await api(url, 'POST', `/v1/app/text-to-speech/${workspaceVoiceId}/with-timestamps`, { device: a1, json: { text: 'a'.repeat(2 * 1024 * 1024) } });
    expect(restError(huge)).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const arr = await api(url, 'POST', '/v1/app/voices/design', { device: a1, json: ['a deep voice'] });
    expect(restError(arr)).toEqual([400, 'INVALID_REQUEST']);
    const jsonClone = await api(url, 'POST', '/v1/app/voices/clone', { device: a1, json: { name: 'x' } });
    expect(restError(jsonClone)).toEqual([415, 'UNSUPPORTED_CONTENT_TYPE']);
    const nowhere = await api(url, 'GET', '/v1/app/nothing-here', { device: a1 });
    expect(restError(nowhere)).toEqual([404, 'NOT_FOUND']);
  });
});

/** 10 ms RMS envelope of PCM. */
function envelope(pcm: Int16Array, rate: number): Float64Array {
  const win = Math.round(rate / 100);
  const out = new Float64Array(Math.floor(pcm.length / win));
  for (let i = 0; i < out.length; i++) {
    let s = 0;
    for (let j = i * win; j < (i + 1) * win; j++) s += pcm[j] * pcm[j];
    out[i] = Math.sqrt(s / win);
  }
  return out;
}

describe('POST /v1/app/text-to-speech/{voice_id}/with-timestamps', () => {
  const tts = (d: Device, id: string, json: unknown) => api(url, 'POST', `/v1/app/text-to-speech/${id}/with-timestamps`, { device: d, json });

  it('validates text, voice id, speed and stability', async () => {
    expect(restError(await tts(a1, workspaceVoiceId, { text: '' }))).toEqual([400, 'EMPTY_TEXT']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: ' \n\t ' }))).toEqual([400, 'EMPTY_TEXT']);
    expect(restError(await tts(a1, workspaceVoiceId, {}))).toEqual([400, 'EMPTY_TEXT']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 'a'.repeat(15_001) }))).toEqual([400, 'TEXT_TOO_LONG']);
    expect(restError(await tts(a1, 'not-a-uuid', { text: 'hello' }))).toEqual([400, 'INVALID_VOICE_ID']);
    // regression: over 100 characters fastify answered 414 URI_TOO_LONG, a code the spec does not have
    expect(restError(await tts(a1, 'x'.repeat(300), { text: 'hello' }))).toEqual([400, 'INVALID_VOICE_ID']);
    expect(restError(await tts(a1, randomUUID(), { text: 'hello' }))).toEqual([404, 'VOICE_NOT_FOUND']);
    expect(restError(await tts(a1, betaVoiceId, { text: 'hello' }))).toEqual([404, 'VOICE_NOT_FOUND']);
    expect(restError(await tts(a2, a1VoiceId, { text: 'hello' }))).toEqual([403, 'VOICE_NOT_AVAILABLE']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 'hello', speed: 3 }))).toEqual([400, 'INVALID_REQUEST']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 'hello', speed: 0.1 }))).toEqual([400, 'INVALID_REQUEST']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 'hello', stability: 1.5 }))).toEqual([400, 'INVALID_REQUEST']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 'hello', speed: 'fast' }))).toEqual([400, 'INVALID_REQUEST']);
    expect(restError(await tts(a1, workspaceVoiceId, { text: 42 }))).toEqual([400, 'INVALID_REQUEST']);
  });

  it('returns WAV with word timings that match the audio', async () => {
    const text = 'Good evening. Dr. Lee has 42 cats, and 3 dogs! Isn\'t that — remarkable? Yes.';
    const r = await tts(a1, a1VoiceId, { text, output_format: 'pcm_22050' });
    expect(r.status).toBe(200);
    expect(r.json.full_text).toBe(text);
    expect(r.json.expires_in).toBe(300);
    expect(r.json.timestamps.map((w: { word: string }) => w.word)).toEqual(['Good', 'evening', 'Dr', 'Lee', 'has', '42', 'cats', 'and', '3', 'dogs', "Isn't", 'that', 'remarkable', 'Yes']);
    const audio = await fetch(r.json.audio_url);
    expect(audio.headers.get('content-type')).toBe('audio/wav');
    const { pcm, sampleRate } = decodeWav(Buffer.from(await audio.arrayBuffer()));
    const durationMs = (pcm.length * 1000) / sampleRate;
    expect(r.json.duration_seconds).toBeCloseTo(durationMs / 1000, 2);
    const words: Array<{ word: string; start_ms: number; end_ms: number }> = r.json.timestamps;
    let prev = 0;
    for (const w of words) {
      expect(Number.isInteger(w.start_ms) && Number.isInteger(w.end_ms)).toBe(true);
      expect(w.start_ms).toBeGreaterThanOrEqual(prev);
      expect(w.end_ms).toBeGreaterThan(w.start_ms);
      prev = w.end_ms;
    }
    expect(words[words.length - 1].end_ms).toBeLessThanOrEqual(Math.ceil(durationMs));

    // against the audio itself: every speech onset after a pause (>= 150 ms of silence) is a word start
    const env = envelope(pcm, sampleRate);
    const peak = Math.max(...env);
    const silent = (i: number) => env[i] < peak * 0.02;
    const onsets: number[] = [];
    let run = 0;
    for (let i = 0; i < env.length; i++) {
      if (silent(i)) run++;
      else {
        if (run >= 15 && i > 0) onsets.push(i * 10);
        run = 0;
      }
    }
    expect(onsets.length).toBeGreaterThanOrEqual(3); // sentence pauses exist in this text
    for (const onset of onsets) {
      const nearest = Math.min(...words.map((w) => Math.abs(w.start_ms - onset)));
      expect(nearest, `speech onset at ${onset} ms`).toBeLessThanOrEqual(60);
    }
    // and each word's span holds sound
    for (const w of words) {
      const a = Math.floor(w.start_ms / 10);
      const b = Math.max(a + 1, Math.floor(w.end_ms / 10));
      const loud = Array.from(env.subarray(a, b)).some((v) => v > peak * 0.05);
      expect(loud, `${w.word} ${w.start_ms}-${w.end_ms}`).toBe(true);
    }
  });

  it('gives MP3 when output_format contains mp3, and honours speed', async () => {
    const text = 'The little boat sailed across the bay before the storm arrived.';
    const mp3 = await tts(a1, workspaceVoiceId, { text, output_format: 'mp3_44100_128' });
    expect(mp3.status).toBe(200);
    const audio = await fetch(mp3.json.audio_url);
    expect(audio.headers.get('content-type')).toBe('audio/mpeg');
    const bytes = Buffer.from(await audio.arrayBuffer());
    // an MP3 frame sync or an ID3 tag at the start
    expect(bytes.subarray(0, 3).toString() === 'ID3' || (bytes[0] === 0xff && (bytes[1] & 0xe0) === 0xe0)).toBe(true);
    const slow = await tts(a1, workspaceVoiceId, { text, speed: 0.6 });
    const fast = await tts(a1, workspaceVoiceId, { text, speed: 1.8, stability: 1 });
    expect(slow.json.duration_seconds).toBeGreaterThan(fast.json.duration_seconds * 1.8);
    expect(fast.json.timestamps).toHaveLength(11);
  });
});
