import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CompanionAdmin } from '../../../src/companion/admin.js';
import { DeviceAuthenticator } from '../../../src/companion/auth/deviceAuth.js';
import { sha256Hex } from '../../../src/companion/auth/secrets.js';
import { getClient } from '../../../src/companion/db/clients.js';
import { stmt } from '../../../src/companion/db/database.js';
import { deviceHeaders } from '../../../src/protocol/headers.js';
import { tempDataDir } from '../helpers.js';

let dataDir: string;
let admin: CompanionAdmin;
let keyA: string;
let keyB: string;

beforeEach(() => {
  dataDir = tempDataDir();
  admin = new CompanionAdmin(dataDir);
  keyA = admin.createWorkspace('A').key;
  keyB = admin.createWorkspace('B').key;
});
afterEach(() => {
  admin.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const secret = () => randomBytes(32).toString('base64url');
const headers = (key: string, clientId: string, clientSecret: string) => deviceHeaders({ workspaceKey: key, clientId, clientSecret });

describe('DeviceAuthenticator', () => {
  // Date.now is a spy here (a fake: the machine's clock is not the test's to set)
  it('regression (a clock review): after the wall clock stepped back 30 days, last_seen_at froze for 30 days; it is still kept at its pace', async () => {
    const auth = new DeviceAuthenticator(admin.db, { enrollment: 'open', touchIntervalMs: 50 });
    const id = randomUUID();
    const s = secret();
    const realNow = Date.now.bind(Date);
    try {
      expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true); // enrolled
      await new Promise((r) => setTimeout(r, 80));
      expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true);
      vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 30 * 86_400_000);
      await new Promise((r) => setTimeout(r, 80));
      stmt(admin.db, "UPDATE clients SET last_seen_at = '2000-01-01T00:00:00.000Z' WHERE id = ?").run(id);
      expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true);
      expect(getClient(admin.db, id)!.last_seen_at).not.toBe('2000-01-01T00:00:00.000Z');
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('names the missing header, checks the id format and the secret length', () => {
    const auth = new DeviceAuthenticator(admin.db, { enrollment: 'open' });
    const full = headers(keyA, randomUUID(), secret());
    for (const [name, display] of [['x-workspace-key', 'X-Workspace-Key'], ['x-client-id', 'X-Client-Id'], ['x-client-secret', 'X-Client-Secret']] as const) {
      const h = { ...full };
      delete h[name];
      const r = auth.authenticate(h);
      expect(r).toMatchObject({ ok: false, code: 'missing_header', restCode: 'MISSING_HEADER' });
      expect(!r.ok && r.message).toContain(display);
      expect(auth.authenticate({ ...full, [name]: '   ' })).toMatchObject({ ok: false, code: 'missing_header' });
    }
    expect(auth.authenticate({ ...full, 'x-client-id': 'not-a-uuid' })).toMatchObject({ ok: false, code: 'invalid_client_id', restCode: 'INVALID_CLIENT_ID' });
    expect(auth.authenticate({ ...full, 'x-client-secret': 'x'.repeat(31) })).toMatchObject({ ok: false, code: 'invalid_client_secret', restCode: 'INVALID_CLIENT_SECRET' });
    expect(auth.authenticate({ ...full, 'x-workspace-key': 'wk_wrong' })).toMatchObject({ ok: false, code: 'invalid_workspace_key', restCode: 'INVALID_WORKSPACE_KEY' });
    // exactly 32 characters is enough
    expect(auth.authenticate({ ...full, 'x-client-secret': 'y'.repeat(32) })).toMatchObject({ ok: true });
  });

  it('enrolls on first use, stores only a hash, then demands the same secret', () => {
    const auth = new DeviceAuthenticator(admin.db, { enrollment: 'open' });
    const id = randomUUID();
    const s = secret();
    const first = auth.authenticate(headers(keyA, id, s));
    expect(first).toMatchObject({ ok: true, device: { clientId: id, enrolledNow: true } });
    const row = getClient(admin.db, id)!;
    expect(row.secret_hash).toBe(sha256Hex(s));
    expect(JSON.stringify(row)).not.toContain(s);
    expect(auth.authenticate(headers(keyA, id, s))).toMatchObject({ ok: true, device: { enrolledNow: false } });
    // upper-case form of the same UUID is the same client
    expect(auth.authenticate(headers(keyA, id.toUpperCase(), s))).toMatchObject({ ok: true, device: { clientId: id } });
    expect(auth.authenticate(headers(keyA, id, secret()))).toMatchObject({ ok: false, code: 'secret_mismatch', restCode: 'SECRET_MISMATCH' });
  });

  it('refuses a client enrolled in workspace A presenting workspace B\'s key', () => {
    const auth = new DeviceAuthenticator(admin.db, { enrollment: 'open' });
    const id = randomUUID();
    const s = secret();
    expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true);
    const r = auth.authenticate(headers(keyB, id, s));
    expect(r).toMatchObject({ ok: false, code: 'invalid_workspace_key' });
    expect(!r.ok && r.message).toMatch(/not the key of the workspace this client is enrolled in/);
    // nothing moved: the client still belongs to A and A's key still works
    expect(getClient(admin.db, id)!.workspace_id).toBe(admin.workspace('A').id);
    expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true);
  });

  it('closed enrollment refuses unknown clients but keeps known ones', () => {
    const open = new DeviceAuthenticator(admin.db, { enrollment: 'open' });
    const known = randomUUID();
    const s = secret();
    expect(open.authenticate(headers(keyA, known, s)).ok).toBe(true);
    const closed = new DeviceAuthenticator(admin.db, { enrollment: 'closed' });
    expect(closed.authenticate(headers(keyA, randomUUID(), secret()))).toMatchObject({ ok: false, code: 'client_not_found', restCode: 'CLIENT_NOT_FOUND' });
    expect(closed.authenticate(headers(keyA, known, s)).ok).toBe(true);
  });

  it('disable / enable / reset by the administrator', () => {
    const auth = new DeviceAuthenticator(admin.db, { enrollment: 'closed' });
    const id = randomUUID();
    const s = secret();
    new DeviceAuthenticator(admin.db, { enrollment: 'open' }).authenticate(headers(keyA, id, s));
    admin.disableClient(id);
    expect(auth.authenticate(headers(keyA, id, s))).toMatchObject({ ok: false, code: 'client_not_activated', restCode: 'CLIENT_NOT_ACTIVATED' });
    // a wrong secret learns nothing about the disabled state
    expect(auth.authenticate(headers(keyA, id, secret()))).toMatchObject({ ok: false, code: 'secret_mismatch' });
    admin.enableClient(id);
    expect(auth.authenticate(headers(keyA, id, s)).ok).toBe(true);
    // lost secret: reset, then the device enrolls a new one (even with closed enrollment)
    const summary = admin.resetClient(id);
    expect(summary.enrolled).toBe(false);
    const s2 = secret();
    expect(auth.authenticate(headers(keyA, id, s2))).toMatchObject({ ok: true, device: { enrolledNow: true } });
    expect(auth.authenticate(headers(keyA, id, s))).toMatchObject({ ok: false, code: 'secret_mismatch' });
    expect(auth.authenticate(headers(keyA, id, s2)).ok).toBe(true);
    expect(() => admin.resetClient(randomUUID())).toThrow(/no client/);
  });

  it('two simultaneous first requests of one client (separate threads, separate connections) enroll exactly one secret', async () => {
    const id = randomUUID();
    const n = 6;
    const secrets = Array.from({ length: n }, secret);
    const shared = new Int32Array(new SharedArrayBuffer(4));
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      (async () => {
        const { tsImport } = await import('tsx/esm/api');
        const { openDatabase } = await tsImport(workerData.db, workerData.parent);
        const { DeviceAuthenticator } = await tsImport(workerData.auth, workerData.parent);
        const db = openDatabase(workerData.dataDir);
        const auth = new DeviceAuthenticator(db, { enrollment: 'open' });
        const flag = new Int32Array(workerData.flag);
        Atomics.add(flag, 0, 1);
        while (Atomics.load(flag, 0) < workerData.n) {} // start together
        const r = auth.authenticate(workerData.headers);
        db.close();
        parentPort.postMessage(r.ok ? 'ok' : r.code);
      })().catch((e) => parentPort.postMessage('error: ' + e.message));
    `;
    const base = new URL('../../../src/companion/', import.meta.url);
    const results = await Promise.all(
      secrets.map(
        (s) =>
          new Promise<string>((resolve, reject) => {
            const w = new Worker(code, {
              eval: true,
              workerData: {
                dataDir,
                n,
                flag: shared.buffer,
                headers: headers(keyA, id, s),
                db: new URL('db/database.ts', base).href,
                auth: new URL('auth/deviceAuth.ts', base).href,
                parent: import.meta.url,
              },
            });
            w.once('message', (m: string) => {
              resolve(m);
              void w.terminate();
            });
            w.once('error', reject);
          }),
      ),
    );
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    expect(results.filter((r) => r === 'secret_mismatch')).toHaveLength(n - 1);
    const winner = secrets[results.indexOf('ok')];
    expect(getClient(admin.db, id)!.secret_hash).toBe(sha256Hex(winner));
  });
});
