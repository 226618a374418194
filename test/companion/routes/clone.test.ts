// POST /v1/app/voices/clone with real uploads: speech synthesised by espeak-ng, cut and encoded by ffmpeg
// into every common format, sent as multipart through real HTTP.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../../src/common/audio/wav.js';
import { api, newDevice, restError, startTestCompanion, tempDataDir, type Device, type TestCompanion } from '../helpers.js';
import { notAudioFile, silenceFile, speechFile, speechSource, type UploadFormat } from '../audioFixtures.js';

let t: TestCompanion;
let url: string;
let a1: Device;
let a2: Device;
let b1: Device;
let dir: string;
let source: string;

function form(file: string | null, fields: Record<string, string> = { name: 'My voice', description: 'test' }, fileName?: string): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.set(k, v);
  if (file !== null) f.set('audio_file', new Blob([readFileSync(file)]), fileName ?? path.basename(file));
  return f;
}

/** A clone transcribes its whole sample (pocketsphinx, ~0.3 s of CPU per audio second): on a loaded
 *  2-core machine a 30 s sample can take longer than the default test timeout. */
const CLONE_TIMEOUT_MS = 120_000;

const clone = (d: Device, body: FormData) => api(url, 'POST', '/v1/app/voices/clone', { device: d, body });

beforeAll(async () => {
  dir = tempDataDir('clone-fixtures-');
  source = speechSource(dir);
  t = await startTestCompanion();
  url = t.server.url;
  a1 = newDevice(t.key);
  a2 = newDevice(t.key);
  b1 = newDevice(t.otherKey);
  for (const d of [a1, a2, b1]) expect((await api(url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('POST /v1/app/voices/clone', () => {
  const created: string[] = [];

  for (const format of ['wav', 'mp3', 'm4a', 'ogg', 'webm'] as UploadFormat[]) {
    it(`clones a 10 s ${format} recording`, async () => {
      const file = speechFile(dir, source, 10, format);
      const r = await clone(a1, form(file, { name: `Ten ${format}` }));
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      expect(r.json).toEqual({ voice_id: expect.any(String), name: `Ten ${format}`, status: 'ready', preview_url: expect.stringContaining('/v1/audio/voices/') });
      created.push(r.json.voice_id);
      // the stored reference is the converted WAV of the upload
      const ref = await fetch(r.json.preview_url);
      const wav = decodeWav(Buffer.from(await ref.arrayBuffer()));
      expect(wav.pcm.length / wav.sampleRate).toBeGreaterThan(9.9);
      expect(wav.pcm.length / wav.sampleRate).toBeLessThan(10.1);
    }, CLONE_TIMEOUT_MS);
  }

  it('accepts 30 s', async () => {
    const ok = await clone(a1, form(speechFile(dir, source, 30, 'wav'), { name: 'Thirty' }));
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
    created.push(ok.json.voice_id);
  }, CLONE_TIMEOUT_MS);

  it('refuses 31 s (AUDIO_TOO_LONG) and 5 s (AUDIO_TOO_SHORT)', async () => {
    expect(restError(await clone(a1, form(speechFile(dir, source, 31, 'wav'))))).toEqual([400, 'AUDIO_TOO_LONG']);
    expect(restError(await clone(a1, form(speechFile(dir, source, 5, 'mp3'))))).toEqual([400, 'AUDIO_TOO_SHORT']);
  });

  it('refuses a long recording from its declared duration, before decoding it', async () => {
    const long = speechFile(dir, source, 120, 'wav'); // 5.8 MB: probed, not decoded
    const r = await clone(a1, form(long));
    expect(restError(r)).toEqual([400, 'AUDIO_TOO_LONG']);
    expect(r.json.detail.error).toContain('120.0 s');
  });

  it('regression: an hour in a small file (640 KB of FLAC silence, under the size that is probed) is refused without decoding the hour', async () => {
    // before: decoded whole, 115 MB of PCM buffered twice (a 72 KB FLAC held 10 h: 1.15 GB, out of memory on a
    // 1 GB board), then refused with "the sample lasts 3600.0 s"
    const hour = path.join(dir, 'hour.flac');
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'anullsrc=r=16000:cl=mono', '-t', '3600', '-c:a', 'flac', hour]);
    expect(statSync(hour).size).toBeLessThan(1024 * 1024);
    const r = await clone(a1, form(hour));
    expect(restError(r)).toEqual([400, 'AUDIO_TOO_LONG']);
    expect(r.json.detail.error).toMatch(/lasts more than \d+\.\d s; at most 30 s/);
  }, CLONE_TIMEOUT_MS);

  it('EMPTY_AUDIO for an empty or missing file, INVALID_AUDIO for a file that is not audio', async () => {
    const empty = path.join(dir, 'empty.wav');
    writeFileSync(empty, '');
    expect(restError(await clone(a1, form(empty)))).toEqual([400, 'EMPTY_AUDIO']);
    expect(restError(await clone(a1, form(null)))).toEqual([400, 'EMPTY_AUDIO']);
    const notAudio = await clone(a1, form(notAudioFile(dir)));
    expect(restError(notAudio)).toEqual([400, 'INVALID_AUDIO']);
    expect(restError(await clone(a1, form(speechFile(dir, source, 10, 'wav'), { description: 'no name' })))).toEqual([400, 'INVALID_REQUEST']);
  });

  it('TRANSCRIPTION_FAILED when the sample holds no speech', async () => {
    expect(restError(await clone(a1, form(silenceFile(dir, 12))))).toEqual([422, 'TRANSCRIPTION_FAILED']);
  });

  it('a clone is visible and usable only by the device that made it', async () => {
    const list = async (d: Device) => (await api(url, 'GET', '/v1/app/voices', { device: d })).json.voices.map((v: { voice_id: string }) => v.voice_id);
    expect(await list(a1)).toEqual(created);
    expect(await list(a2)).toEqual([]);
    expect(await list(b1)).toEqual([]);
    const id = created[0];
    const say = (d: Device) => api(url, 'POST', `/v1/app/text-to-speech/${id}/with-timestamps`, { device: d, json: { text: 'Hello from my clone.' } });
    expect((await say(a1)).status).toBe(200);
    expect(restError(await say(a2))).toEqual([403, 'VOICE_NOT_AVAILABLE']);
    expect(restError(await say(b1))).toEqual([404, 'VOICE_NOT_FOUND']);
  });

  it('STORAGE_ERROR when the audio cannot be stored, leaving no voice behind', async () => {
    const voicesDir = path.join(t.dataDir, 'audio', 'voices');
    const aside = `${voicesDir}.aside`;
    renameSync(voicesDir, aside);
    writeFileSync(voicesDir, 'not a directory'); // a real fault: rename into it fails with ENOTDIR
    try {
      const before = (await api(url, 'GET', '/v1/app/voices', { device: a1 })).json.voices.length;
      expect(restError(await clone(a1, form(speechFile(dir, source, 10, 'wav'))))).toEqual([500, 'STORAGE_ERROR']);
      expect((await api(url, 'GET', '/v1/app/voices', { device: a1 })).json.voices.length).toBe(before);
    } finally {
      rmSync(voicesDir, { force: true });
      renameSync(aside, voicesDir);
    }
  }, CLONE_TIMEOUT_MS);
});

describe('upload size limit', () => {
  it('413 PAYLOAD_TOO_LARGE with the REST error shape, temp files removed', async () => {
    const small = await startTestCompanion({ maxUploadBytes: 256 * 1024 });
    try {
      const d = newDevice(small.key);
      const big = speechFile(dir, source, 10, 'wav'); // ~480 KB
      const r = await api(small.server.url, 'POST', '/v1/app/voices/clone', { device: d, body: form(big) });
      expect(restError(r)).toEqual([413, 'PAYLOAD_TOO_LARGE']);
      mkdirSync(path.join(small.dataDir, 'tmp'), { recursive: true });
      expect(readdirSync(path.join(small.dataDir, 'tmp'))).toEqual([]);
    } finally {
      await small.close();
    }
  });
});
