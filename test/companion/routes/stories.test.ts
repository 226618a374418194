// GET /stories, GET /stories/{slug}, POST /stories/{slug}/read through real HTTP.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { decodeWav } from '../../../src/common/audio/wav.js';
import { analyzeVoiceSample } from '../../../src/companion/speech/voiceCloneAnalysis.js';
import { api, newDevice, restError, startTestCompanion, type Device, type TestCompanion } from '../helpers.js';

let t: TestCompanion;
let url: string;
let a1: Device;
let a2: Device;
let b1: Device;
let voiceFirst: string;
let voiceDefault: string;

const story = (slug: string | null, name: string, sort: number, extra: Record<string, unknown> = {}) => ({
  slug,
  name,
  transcript: `${name}. Once upon a time there was a tiny snail who wanted to see the sea. The end.`,
  excerpt: `About ${name}`,
  age_group: '3-6',
  illustration_url: `https://example.invalid/${slug}.png`,
  illustration_alt: `Picture of ${name}`,
  sort_order: sort,
  ...extra,
});

beforeAll(async () => {
  t = await startTestCompanion();
  url = t.server.url;
  a1 = newDevice(t.key);
  a2 = newDevice(t.key);
  b1 = newDevice(t.otherKey);
  const admin = new CompanionAdmin(t.dataDir);
  voiceFirst = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'First', design: 'a calm female voice' }).id;
  voiceDefault = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'Deep', design: 'a deep slow male voice' }).id;
  admin.importStories('alpha', [
    story('zebra', 'Zebra Tale', 3),
    story('apple', 'Apple Tale', 1, { default_voice: 'Deep', excerpt: null }),
    story(null, 'Draft without slug', 0),
    story('moon', 'Moon Tale', 2),
  ]);
  admin.importStories('beta', [story('beta-only', 'Beta Tale', 1)]);
  admin.close();
  for (const d of [a1, a2, b1]) expect((await api(url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

describe('stories', () => {
  it('lists the slugged stories of the caller\'s workspace as cards in sort order', async () => {
    const r = await api(url, 'GET', '/v1/app/stories', { device: a1 });
    expect(r.status).toBe(200);
    expect(r.json.map((c: { slug: string }) => c.slug)).toEqual(['apple', 'moon', 'zebra']);
    expect(r.json[1]).toEqual({
      story_id: expect.any(String),
      slug: 'moon',
      name: 'Moon Tale',
      excerpt: 'About Moon Tale',
      age_group: '3-6',
      illustration_url: 'https://example.invalid/moon.png',
      illustration_alt: 'Picture of Moon Tale',
      sort_order: 2,
    });
    expect(r.json[0]).not.toHaveProperty('excerpt'); // optional: absent when the story has none
    expect((await api(url, 'GET', '/v1/app/stories', { device: b1 })).json.map((c: { slug: string }) => c.slug)).toEqual(['beta-only']);
  });

  it('returns the full story, and STORY_NOT_FOUND (404) for unknown or other-workspace slugs', async () => {
    const r = await api(url, 'GET', '/v1/app/stories/moon', { device: a1 });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      story_id: expect.any(String),
      slug: 'moon',
      name: 'Moon Tale',
      transcript: expect.stringContaining('tiny snail'),
      excerpt: 'About Moon Tale',
      illustration_url: 'https://example.invalid/moon.png',
      illustration_alt: 'Picture of Moon Tale',
      estimated_reading_time_seconds: expect.any(Number),
    });
    expect(r.json.estimated_reading_time_seconds).toBeGreaterThan(0);
    expect(restError(await api(url, 'GET', '/v1/app/stories/nope', { device: a1 }))).toEqual([404, 'STORY_NOT_FOUND']);
    // regression: a slug over 100 characters was 414 URI_TOO_LONG, a code the spec does not have
    expect(restError(await api(url, 'GET', `/v1/app/stories/${'s'.repeat(300)}`, { device: a1 }))).toEqual([404, 'STORY_NOT_FOUND']);
    expect(restError(await api(url, 'POST', `/v1/app/stories/${'s'.repeat(300)}/read`, { device: a1, json: {} }))).toEqual([404, 'STORY_NOT_FOUND']);
    expect(restError(await api(url, 'GET', '/v1/app/stories/beta-only', { device: a1 }))).toEqual([404, 'STORY_NOT_FOUND']);
    expect(restError(await api(url, 'POST', '/v1/app/stories/beta-only/read', { device: a1, json: {} }))).toEqual([404, 'STORY_NOT_FOUND']);
  });

  it('narrates as WAV with Content-Length, choosing the given, default or first voice', async () => {
    const read = async (json?: unknown) => {
      const r = await api(url, 'POST', '/v1/app/stories/apple/read', { device: a1, json });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('audio/wav');
      expect(Number(r.headers.get('content-length'))).toBe(r.body.length);
      const wav = decodeWav(r.body);
      expect(r.body.readUInt32LE(40)).toBe(r.body.length - 44); // the header's data size is exact
      // espeak's output varies slightly run to run, so the voice is recognised by its measured pitch
      return analyzeVoiceSample(wav.pcm, wav.sampleRate).medianF0Hz;
    };
    const byDefault = await read(); // story default voice "Deep" (male)
    const explicitDefault = await read({ voice_id: voiceDefault });
    const explicitFirst = await read({ voice_id: voiceFirst }); // "First" (female)
    expect(byDefault).toBeLessThan(150);
    expect(explicitDefault).toBeLessThan(150);
    expect(Math.abs(byDefault - explicitDefault)).toBeLessThan(15);
    expect(explicitFirst).toBeGreaterThan(byDefault + 40);
    // a story without a default voice uses the workspace's first voice (no body; empty JSON body too)
    for (const opts of [{}, { headers: { 'content-type': 'application/json' }, body: '' }]) {
      const r = await api(url, 'POST', '/v1/app/stories/moon/read', { device: a1, ...opts });
      expect(r.status).toBe(200);
      const wav = decodeWav(r.body);
      expect(Math.abs(analyzeVoiceSample(wav.pcm, wav.sampleRate).medianF0Hz - explicitFirst)).toBeLessThan(25);
    }
  });

  it('VOICE_NOT_FOUND for a bad voice_id; VOICE_NOT_AVAILABLE for another device\'s clone', async () => {
    expect(restError(await api(url, 'POST', '/v1/app/stories/apple/read', { device: a1, json: { voice_id: randomUUID() } }))).toEqual([404, 'VOICE_NOT_FOUND']);
    expect(restError(await api(url, 'POST', '/v1/app/stories/apple/read', { device: a1, json: { voice_id: 'garbage' } }))).toEqual([404, 'VOICE_NOT_FOUND']);
    const clone = await api(url, 'POST', '/v1/app/voices/design', { device: a2, json: { name: 'Mine', design_prompt: 'a whispering female voice' } });
    expect(clone.status).toBe(201);
    expect(restError(await api(url, 'POST', '/v1/app/stories/apple/read', { device: a1, json: { voice_id: clone.json.voice_id } }))).toEqual([403, 'VOICE_NOT_AVAILABLE']);
    expect((await api(url, 'POST', '/v1/app/stories/apple/read', { device: a2, json: { voice_id: clone.json.voice_id } })).status).toBe(200);
  });

  it('400 VOICE_NOT_AVAILABLE when the workspace has no voices', async () => {
    const r = await api(url, 'POST', '/v1/app/stories/beta-only/read', { device: b1, json: {} });
    expect(restError(r)).toEqual([400, 'VOICE_NOT_AVAILABLE']);
  });
});
