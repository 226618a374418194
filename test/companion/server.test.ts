// The server as a whole: secrets never logged, internal faults never leaked, crash leftovers cleaned at start,
// simultaneous first requests of one device over HTTP.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CompanionAdmin } from '../../src/companion/admin.js';
import { startCompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings } from '../../src/companion/settings.js';
import { createLogger } from '../../src/common/logger.js';
import { deviceHeaders } from '../../src/protocol/headers.js';
import { api, newDevice, restError, startTestCompanion, tempDataDir } from './helpers.js';

let dataDir: string;
afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('companion server', () => {
  it('regression: starts without a warning of its framework (fastify 5 deprecated the top-level maxParamLength: a FastifyWarning on stderr at every start, into the journal)', async () => {
    dataDir = tempDataDir();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir }, {}), { logger: createLogger({ level: 'silent' }) });
    try {
      await new Promise((r) => setImmediate(r)); // process warnings are emitted on the next tick
      expect(warnings.map((w) => `${w.name}: ${w.message}`)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await server.close();
    }
  });

  it('never writes device secrets or workspace keys to its log, even at debug level', async () => {
    dataDir = tempDataDir();
    const admin = new CompanionAdmin(dataDir);
    const { key } = admin.createWorkspace('w');
    const voice = admin.addWorkspaceVoice({ workspace: 'w', name: 'V', design: 'a calm female voice' }).id;
    admin.close();
    const lines: string[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (s: string) => void lines.push(s) } });
    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir }, {}), { logger });
    try {
      const d = newDevice(key);
      await api(server.url, 'GET', '/v1/app/voices', { device: d });
      await api(server.url, 'POST', `/v1/app/text-to-speech/${voice}/with-timestamps`, { device: d, json: { text: 'hello' } });
      const wrong = { ...d, headers: deviceHeaders({ workspaceKey: key, clientId: d.clientId, clientSecret: 'z'.repeat(40) }) };
      await api(server.url, 'GET', '/v1/app/voices', { device: wrong });
      // make the server fail internally: a corrupt voice row
      const a = new CompanionAdmin(dataDir);
      a.db.prepare('UPDATE voices SET params_json = ? WHERE id = ?').run('{corrupt', voice);
      a.close();
      const boom = await api(server.url, 'POST', `/v1/app/text-to-speech/${voice}/with-timestamps`, { device: d, json: { text: 'hello' } });
      expect(restError(boom)).toEqual([500, 'INTERNAL_ERROR']);
      expect(boom.json.detail.error).toBe('internal server error');
      // and it keeps serving
      expect((await api(server.url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
      const log = lines.join('');
      expect(log).toContain('client enrolled');
      expect(log).toContain('request failed'); // the internal fault is in the log, with its cause
      expect(log).toContain('"status":200');
      for (const secret of [d.secret, key, 'z'.repeat(40)]) expect(log).not.toContain(secret);
    } finally {
      await server.close();
    }
  });

  it('removes leftovers of a crash at start: temp files and voice audio no voice refers to', async () => {
    dataDir = tempDataDir();
    const admin = new CompanionAdmin(dataDir);
    admin.createWorkspace('w');
    admin.close();
    mkdirSync(path.join(dataDir, 'audio', 'voices'), { recursive: true });
    mkdirSync(path.join(dataDir, 'tmp'), { recursive: true });
    const orphan = path.join(dataDir, 'audio', 'voices', '0f8fad5b-d9cb-469f-a165-70867728950e.wav');
    writeFileSync(orphan, 'half a clone');
    writeFileSync(path.join(dataDir, 'tmp', 'upload-in-progress'), 'x');
    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }, {}));
    await server.close();
    expect(existsSync(orphan)).toBe(false);
    expect(readdirSync(path.join(dataDir, 'tmp'))).toEqual([]);
  });

  it('of many simultaneous first requests of one device over HTTP, exactly one secret is enrolled', async () => {
    dataDir = tempDataDir();
    const admin = new CompanionAdmin(dataDir);
    const { key } = admin.createWorkspace('w');
    admin.close();
    const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }, {}));
    try {
      const d = newDevice(key);
      const secrets = Array.from({ length: 20 }, () => randomBytes(32).toString('hex'));
      const results = await Promise.all(
        secrets.map((s) => api(server.url, 'GET', '/v1/app/voices', { headers: deviceHeaders({ workspaceKey: key, clientId: d.clientId, clientSecret: s }) })),
      );
      const ok = results.filter((r) => r.status === 200);
      expect(ok).toHaveLength(1);
      expect(results.filter((r) => r.json?.detail?.code === 'SECRET_MISMATCH')).toHaveLength(19);
    } finally {
      await server.close();
    }
  });

  it('regression: an upload whose body stops coming (a device that lost power mid-upload: no FIN) gets 408 REQUEST_TIMEOUT, and its socket and temp file are let go', async () => {
    // before: fastify's default is no request timeout, so the handler waited in its pipeline for ever, holding
    // the socket, an open file and a half-written upload in <dataDir>/tmp
    const t = await startTestCompanion({ requestTimeoutMs: 3000 }); // room for the temp file to appear under load
    dataDir = t.dataDir;
    try {
      const d = newDevice(t.key);
      expect((await api(t.server.url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
      const { port } = new URL(t.server.url);
      const boundary = 'stalledupload';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nMy voice\r\n--${boundary}\r\nContent-Disposition: form-data; name="audio_file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
      const socket = net.connect(Number(port), '127.0.0.1');
      let answer = '';
      socket.on('data', (b) => (answer += b.toString('latin1')));
      const closed = new Promise<void>((r) => socket.on('close', () => r()));
      const t0 = performance.now();
      await new Promise<void>((r) => socket.once('connect', () => r()));
      const headers = Object.entries(d.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.write(`POST /v1/app/voices/clone HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n\r\n`);
      socket.write(head + 'RIFF'.padEnd(4096, '\0')); // the file has begun to arrive, and then nothing more
      await expect.poll(() => readdirSync(path.join(t.dataDir, 'tmp')).length, { timeout: 5_000 }).toBe(1);
      await closed;
      const waited = performance.now() - t0;
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ detail: { error: expect.any(String), code: 'REQUEST_TIMEOUT' } });
      expect(waited).toBeGreaterThanOrEqual(2900);
      expect(waited).toBeLessThan(12_000);
      await expect.poll(() => readdirSync(path.join(t.dataDir, 'tmp')), { timeout: 5_000 }).toEqual([]);
      expect((await api(t.server.url, 'GET', '/v1/app/voices', { device: d })).status).toBe(200);
    } finally {
      await t.close();
    }
  }, 30_000);

  it('a port already in use is a clear error and leaves the running server alone', async () => {
    dataDir = tempDataDir();
    const first = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }, {}));
    try {
      const second = tempDataDir();
      try {
        await expect(startCompanionServer(loadCompanionSettings({ port: first.port, dataDir: second, log: { level: 'silent' } }, {}))).rejects.toThrow(
          /cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\)/,
        );
      } finally {
        rmSync(second, { recursive: true, force: true });
      }
      expect((await fetch(first.url + '/v1/app/voices')).status).toBe(400); // the first server is unaffected
    } finally {
      await first.close();
    }
  });
});
