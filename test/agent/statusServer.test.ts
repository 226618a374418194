// The status socket's state stream and commands (issue #16) on a real unix socket, with the CLI's client
// functions (statusClient.ts): JSON lines as changes happen, commands answered, unknown routes refused, and a
// client that goes away unsubscribed.
import { EventEmitter } from 'node:events';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startStatusServer, type StatusServer } from '../../src/agent/statusServer.js';
import { followEvents, sendCommand } from '../../src/cli/statusClient.js';

let server: StatusServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** the daemon's events carry the time of the change (daemon.ts, ListeningEvent) */
const AT = '2026-11-29T04:40:00.000Z';

function rig() {
  const bus = new EventEmitter();
  const calls: string[] = [];
  let state = 'idle';
  const socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'status-')), 'status.sock');
  return {
    bus,
    calls,
    socketPath,
    start: async () =>
      (server = await startStatusServer({
        socketPath,
        snapshot: () => ({ state }),
        events: {
          current: () => ({ state, reason: 'current', at: AT }),
          subscribe: (send) => {
            bus.on('e', send);
            return () => bus.off('e', send);
          },
        },
        commands: {
          listen: () => (calls.push('listen'), (state = 'listening'), { ok: true }),
          stop: () => (calls.push('stop'), { ok: true }),
          micOff: async () => (calls.push('micOff'), { ok: true, muted: true }),
          micOn: () => {
            throw new Error('cannot open the microphone');
          },
        },
      })),
  };
}

function request(socketPath: string, method: string, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: p }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('status socket: state stream and commands', () => {
  it('GET /events sends the current state, then one JSON line per change, until the client goes', async () => {
    const r = rig();
    await r.start();
    const got: unknown[] = [];
    const stop = new AbortController();
    const done = followEvents([r.socketPath], (e) => {
      got.push(e);
      if (got.length === 3) stop.abort();
    }, stop.signal);
    for (let i = 0; i < 100 && r.bus.listenerCount('e') === 0; i++) await new Promise((res) => setTimeout(res, 10));
    r.bus.emit('e', { state: 'listening', reason: 'wake', at: AT });
    r.bus.emit('e', { state: 'thinking', reason: 'speech_stopped', at: AT });
    await done;
    expect(got).toEqual([{ state: 'idle', reason: 'current', at: AT }, { state: 'listening', reason: 'wake', at: AT }, { state: 'thinking', reason: 'speech_stopped', at: AT }]);
    for (let i = 0; i < 100 && r.bus.listenerCount('e') > 0; i++) await new Promise((res) => setTimeout(res, 10));
    expect(r.bus.listenerCount('e')).toBe(0); // unsubscribed when the client went
  });

  it('POST /listen, /stop, /mic/off run the command and answer its JSON; a failing command is a 500 with its message', async () => {
    const r = rig();
    await r.start();
    expect((await sendCommand([r.socketPath], '/listen')).answer).toEqual({ ok: true });
    expect((await sendCommand([r.socketPath], '/stop')).answer).toEqual({ ok: true });
    expect((await sendCommand([r.socketPath], '/mic/off')).answer).toEqual({ ok: true, muted: true });
    expect(r.calls).toEqual(['listen', 'stop', 'micOff']);
    await expect(sendCommand([r.socketPath], '/mic/on')).rejects.toThrow(/cannot open the microphone/);
    expect(JSON.parse((await request(r.socketPath, 'GET', '/status')).body)).toEqual({ state: 'listening' });
  });

  it('unknown routes and methods are 404 naming the routes; a command by GET does nothing', async () => {
    const r = rig();
    await r.start();
    for (const [m, p] of [['GET', '/listen'], ['POST', '/status'], ['POST', '/mic/sideways'], ['DELETE', '/events']]) {
      const res = await request(r.socketPath, m, p);
      expect(res.status, `${m} ${p}`).toBe(404);
      expect(res.body).toContain('POST /listen');
    }
    expect(r.calls).toEqual([]);
  });

  it('regression: `status --follow --socket` at some other server threw from the stream handler (a stack trace); now a clear error', async () => {
    for (const body of ['hello, this is not JSON\n', '{"ok":true}\n']) {
      const socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'status-')), 'other.sock');
      const other = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(body); // and keeps the stream open, as an event stream would
      });
      await new Promise<void>((r) => other.listen(socketPath, r));
      try {
        const seen: unknown[] = [];
        const err = await followEvents([socketPath], (e) => seen.push(e)).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 'internal', message: expect.stringContaining(`${socketPath} is not a speaker-agent status socket`) });
        expect(seen).toEqual([]);
      } finally {
        other.closeAllConnections();
        await new Promise((r) => other.close(r));
      }
    }
  });

  it('no daemon: the client says the agent is not running (exit code network)', async () => {
    const r = rig();
    await expect(sendCommand([r.socketPath], '/listen')).rejects.toMatchObject({ code: 'network' });
    await expect(followEvents([r.socketPath], () => undefined)).rejects.toMatchObject({ code: 'network' });
  });
});
