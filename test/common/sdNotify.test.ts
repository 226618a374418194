// sd_notify over a real unix datagram socket (bound by python3, see test/support/notifySocket.ts): READY,
// WATCHDOG, STOPPING and STATUS arrive, for a socket path and an abstract name; no socket = no-op.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSdNotifier, sockaddrUn, startWatchdog, watchdogIntervalMs } from '../../src/common/sdNotify.js';
import { startNotifyReceiver } from '../support/notifySocket.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sdnotify-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('sdNotify', () => {
  it('sends READY=1, STATUS, WATCHDOG=1 and STOPPING=1 to a socket path', async () => {
    const rx = await startNotifyReceiver(path.join(tmp, 'notify.sock'));
    try {
      const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: rx.address, WATCHDOG_USEC: '2000000', WATCHDOG_PID: String(process.pid) };
      const n = createSdNotifier(env);
      expect(n.enabled).toBe(true);
      expect(n.watchdogIntervalMs).toBe(1000);
      expect(env.NOTIFY_SOCKET).toBeUndefined(); // not inherited by children
      expect(n.ready('call connected')).toBe(true);
      expect(n.watchdog()).toBe(true);
      expect(n.stopping()).toBe(true);
      expect(await rx.waitFor((m) => m.startsWith('READY=1'))).toBe('READY=1\nSTATUS=call connected');
      await rx.waitFor((m) => m === 'WATCHDOG=1');
      await rx.waitFor((m) => m === 'STOPPING=1');
      n.close();
      expect(n.watchdog()).toBe(false);
    } finally {
      rx.close();
    }
  });

  it('reaches an abstract socket (@name), as systemd uses in containers', async () => {
    const rx = await startNotifyReceiver(`@speaker-agent-test-${process.pid}`);
    try {
      const n = createSdNotifier({ NOTIFY_SOCKET: rx.address });
      n.status('multi\nline');
      expect(await rx.waitFor((m) => m.startsWith('STATUS='))).toBe('STATUS=multi line');
      n.close();
    } finally {
      rx.close();
    }
  });

  it('the watchdog pings from the event loop while healthy, and stops when unhealthy', async () => {
    const rx = await startNotifyReceiver(path.join(tmp, 'wd.sock'));
    try {
      const n = createSdNotifier({ NOTIFY_SOCKET: rx.address });
      let healthy = true;
      const wd = startWatchdog(n, { intervalMs: 20, isHealthy: () => healthy });
      await rx.waitFor((m) => m === 'WATCHDOG=1');
      await new Promise((r) => setTimeout(r, 100));
      healthy = false;
      const before = wd.pings;
      expect(before).toBeGreaterThan(1);
      await new Promise((r) => setTimeout(r, 100));
      expect(wd.pings).toBe(before);
      wd.stop();
      n.close();
    } finally {
      rx.close();
    }
  });

  // Until 30 Nov a timer that fired more than an interval late skipped its ping: one stall of over half the
  // watchdog's limit then cost the ping after it, and the next came after the limit (systemd's kill).
  it('a late watchdog timer still pings: one stall longer than the interval does not drop the ping after it', async () => {
    const rx = await startNotifyReceiver(path.join(tmp, 'wd-late.sock'));
    try {
      const n = createSdNotifier({ NOTIFY_SOCKET: rx.address });
      const wd = startWatchdog(n, { intervalMs: 100 });
      const until = performance.now() + 350; // the loop blocked: the timer due at 100 ms fires 250 ms late
      while (performance.now() < until);
      // timers fire in the order they are due: the watchdog's (due at 100 ms) before this one (due after the stall)
      await new Promise((r) => setTimeout(r, 1));
      expect(wd.pings).toBe(1);
      expect(await rx.waitFor((m) => m === 'WATCHDOG=1')).toBe('WATCHDOG=1');
      wd.stop();
      n.close();
    } finally {
      rx.close();
    }
  });

  it('is a no-op without NOTIFY_SOCKET, and ignores a watchdog meant for another PID', () => {
    const n = createSdNotifier({});
    expect(n.enabled).toBe(false);
    expect(n.ready()).toBe(false);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '10000000', WATCHDOG_PID: '1' }, 4242)).toBeUndefined();
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '10000000' }, 4242)).toBe(5000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: 'x' })).toBeUndefined();
  });

  it('rejects an unusable NOTIFY_SOCKET with a clear error', () => {
    expect(() => sockaddrUn('@')).toThrow(/not a usable unix socket/);
    expect(() => sockaddrUn('/' + 'x'.repeat(200))).toThrow(/not a usable unix socket/);
    const { addr, len } = sockaddrUn('@abc');
    expect(len).toBe(2 + 4);
    expect([...addr.subarray(2, 6)]).toEqual([0, 97, 98, 99]);
  });

  it('reports a send to a vanished socket once, without throwing', () => {
    const errors: Error[] = [];
    const n = createSdNotifier({ NOTIFY_SOCKET: path.join(tmp, 'gone.sock') }, { onError: (e) => errors.push(e) });
    expect(n.ready()).toBe(false);
    expect(n.watchdog()).toBe(false);
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toMatch(/gone\.sock failed, errno/);
    n.close();
  });
});
