// Signed audio URLs: valid, expired, tampered, path traversal; unit level and through real HTTP.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { UrlSigner } from '../../../src/companion/storage/urlSigner.js';
import { RestError } from '../../../src/protocol/restErrors.js';
import { api, newDevice, startTestCompanion, type TestCompanion } from '../helpers.js';

describe('UrlSigner', () => {
  const key = Buffer.alloc(32, 7);
  const rel = 'tts/0f8fad5b-d9cb-469f-a165-70867728950e.wav';

  it('verifies its own URLs and refuses changed, expired or foreign ones', () => {
    let now = 1_000_000_000_000;
    const s = new UrlSigner(key, 'http://h:1', 300, () => now);
    const u = new URL(s.sign(rel).url);
    expect(u.pathname).toBe(`/v1/audio/${rel}`);
    const exp = u.searchParams.get('expires')!;
    const sig = u.searchParams.get('signature')!;
    expect(Number(exp)).toBe(now / 1000 + 300);
    expect(s.verify(rel, exp, sig)).toBe(rel);
    const code = (f: () => unknown) => {
      try {
        f();
        return 'ok';
      } catch (e) {
        return (e as RestError).code;
      }
    };
    expect(code(() => s.verify(rel, String(Number(exp) + 1), sig))).toBe('INVALID_SIGNATURE');
    expect(code(() => s.verify('tts/1f8fad5b-d9cb-469f-a165-70867728950e.wav', exp, sig))).toBe('INVALID_SIGNATURE');
    expect(code(() => s.verify(rel, exp, sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A')))).toBe('INVALID_SIGNATURE');
    expect(code(() => s.verify(rel, exp, undefined))).toBe('INVALID_SIGNATURE');
    expect(code(() => s.verify('../url-signing.key', exp, sig))).toBe('INVALID_SIGNATURE');
    expect(code(() => new UrlSigner(Buffer.alloc(32, 8), 'http://h:1', 300, () => now).verify(rel, exp, sig))).toBe('INVALID_SIGNATURE');
    now += 300_000;
    expect(s.verify(rel, exp, sig)).toBe(rel); // valid through its last second
    now += 1_000;
    expect(code(() => s.verify(rel, exp, sig))).toBe('URL_EXPIRED');
    expect(() => s.sign('../../etc/passwd.wav')).toThrow(RangeError);
  });
});

describe('signed audio over HTTP', () => {
  let t: TestCompanion;
  let audioUrl: URL;

  beforeAll(async () => {
    t = await startTestCompanion();
    const admin = new CompanionAdmin(t.dataDir);
    const voice = admin.addWorkspaceVoice({ workspace: 'alpha', name: 'V', design: 'a calm female voice' }).id;
    admin.close();
    const d = newDevice(t.key);
    const r = await api(t.server.url, 'POST', `/v1/app/text-to-speech/${voice}/with-timestamps`, { device: d, json: { text: 'Signed and sealed.' } });
    expect(r.status).toBe(200);
    audioUrl = new URL(r.json.audio_url);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves a valid URL without device headers', async () => {
    const r = await fetch(audioUrl);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('audio/wav');
    expect(Number(r.headers.get('content-length'))).toBe((await r.arrayBuffer()).byteLength);
  });

  it('403 INVALID_SIGNATURE when tampered, 403 URL_EXPIRED when expired', async () => {
    const tampered = new URL(audioUrl);
    tampered.searchParams.set('expires', String(Number(audioUrl.searchParams.get('expires')) + 3600));
    const r1 = await api(tampered.origin, 'GET', tampered.pathname + tampered.search);
    expect([r1.status, r1.json.detail.code]).toEqual([403, 'INVALID_SIGNATURE']);
    const otherFile = new URL(audioUrl);
    otherFile.pathname = otherFile.pathname.replace(/[0-9a-f]{8}-/, '00000000-');
    const r2 = await api(otherFile.origin, 'GET', otherFile.pathname + otherFile.search);
    expect([r2.status, r2.json.detail.code]).toEqual([403, 'INVALID_SIGNATURE']);
    // expired: a URL signed with the installation's key for a moment in the past
    const key = Buffer.from(readFileSync(path.join(t.dataDir, 'url-signing.key'), 'utf8').trim(), 'base64url');
    const rel = audioUrl.pathname.replace('/v1/audio/', '');
    const past = new UrlSigner(key, audioUrl.origin, 300, () => Date.now() - 3_600_000).sign(rel).url;
    const r3 = await api(audioUrl.origin, 'GET', new URL(past).pathname + new URL(past).search);
    expect([r3.status, r3.json.detail.code]).toEqual([403, 'URL_EXPIRED']);
  });

  it('no path traversal', async () => {
    const q = audioUrl.search;
    for (const p of ['/v1/audio/../url-signing.key', '/v1/audio/voices/..%2f..%2furl-signing.key', '/v1/audio/tts/%2e%2e%2f%2e%2e%2fcompanion.sqlite']) {
      const r = await fetch(audioUrl.origin + p + q);
      expect([403, 404]).toContain(r.status);
      const body = Buffer.from(await r.arrayBuffer()).toString('utf8');
      expect(body).not.toContain('SQLite');
      expect(body).toMatch(/"code":"(INVALID_SIGNATURE|NOT_FOUND)"/);
    }
  });
});
