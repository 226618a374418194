// Issue 17 fault suite, REST side: 2,000 malformed requests (test/support/restFuzz.ts: bad escapes, over-long
// parameters, huge headers and bodies, deep JSON, traversal, wrong methods, broken multipart, garbage, bad device
// headers) sent byte for byte to the real companion. Every one gets a 4xx in the spec's shape for its prefix with
// a documented code; nothing crashes, no upload is left on disk, and the server answers normally afterwards.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REALTIME_ERRORS } from '../../../src/protocol/realtimeErrors.js';
import { REST_ERRORS } from '../../../src/protocol/restErrors.js';
import { generateCases, runCases, type FuzzResult } from '../../support/restFuzz.js';
import { startRealtimeTestServer, type RealtimeTestServer } from '../../support/realtimeServer.js';

const MAX_UPLOAD = 256 * 1024;
let srv: RealtimeTestServer;

beforeAll(async () => {
  srv = await startRealtimeTestServer({ maxUploadBytes: MAX_UPLOAD });
});
afterAll(async () => srv?.close());

/** What is wrong with one answer, or undefined when it is right. */
function problem(r: FuzzResult): string | undefined {
  if (r.mayPass && r.status >= 200 && r.status < 300) return undefined;
  if (r.status < 400 || r.status > 499) return `status ${r.status}`;
  let body: any;
  try {
    body = JSON.parse(r.body);
  } catch {
    return `body is not JSON: ${r.body.slice(0, 80)}`;
  }
  if (r.path?.startsWith('/v1/realtime')) {
    const e = body?.error;
    if (typeof e?.message !== 'string' || typeof e?.type !== 'string' || !(e?.code in REALTIME_ERRORS)) return `not the realtime shape: ${r.body.slice(0, 120)}`;
    if (REALTIME_ERRORS[e.code as keyof typeof REALTIME_ERRORS].status !== r.status) return `status ${r.status} for ${e.code}`;
  } else {
    const d = body?.detail;
    if (typeof d?.error !== 'string' || !(d?.code in REST_ERRORS)) return `not the REST shape: ${r.body.slice(0, 120)}`;
    const def = REST_ERRORS[d.code as keyof typeof REST_ERRORS];
    if (def.status !== r.status && d.code !== 'VOICE_NOT_AVAILABLE') return `status ${r.status} for ${d.code}`;
  }
  return undefined;
}

describe('REST fuzz (2,000 malformed requests against the real companion)', () => {
  it('every malformed request gets a 4xx in the spec shape of its prefix with a documented code; the server lives on', async () => {
    const cases = generateCases(2_000, 17, srv.newDevice(), { maxUploadBytes: MAX_UPLOAD });
    const results = await runCases(srv.server.port, cases, 8);
    const bad = results.map((r, i) => ({ i, kind: r.kind, path: r.path?.slice(0, 60), problem: problem(r) })).filter((x) => x.problem);
    expect(bad.slice(0, 10)).toEqual([]);
    // each kind of fault was exercised
    const kinds = new Set(results.map((r) => r.kind));
    expect(kinds.size).toBe(13);
    // and most of them had to be refused
    expect(results.filter((r) => r.status >= 400 && r.status < 500).length).toBeGreaterThan(1_800);
    // still serving, and no upload left behind in the temp directory
    const ok = await fetch(`${srv.url}/v1/app/voices`, { headers: srv.newDevice() });
    expect(ok.status).toBe(200);
    expect(readdirSync(srv.server.context.audio.tmpDir)).toEqual([]);
  }, 240_000);
});
