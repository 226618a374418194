// Regression (scripts/patch-dependencies.mjs, "A TURN allocation that completes after the connection closed"):
// the connect timeout aborts werift's gathering while it waits on a TURN allocation and closes the peer connection;
// werift closed what the ICE connection had and went on waiting, and an allocation that succeeded afterwards was
// added to the dead connection and never closed: its socket stayed open, its refresh loop renewed the allocation on
// the relay for as long as the process ran (a quota the relay counts per user), one per slow call attempt. Here
// Debian's coturn (test/support/turnServer.ts) behind a small UDP proxy that holds the relay's answers until the
// attempt is over, the agent's own transport (WebrtcTransport.connect with its abort), and what is left: the
// process's sockets (/proc/self/fd) and the Refresh requests the relay is sent. And (patch "A closed TURN allocation
// is released on the relay") a closed allocation is given back to a relay that counts them per user.
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTurnClient } from 'werift';
import { WebrtcTransport } from '../../../src/agent/transport/webrtcTransport.js';
import { sleep, waitUntil } from '../../support/audioCapture.js';
import { openDescriptors, resourceCounts } from '../../support/processResources.js';
import { startTurnServer, type TurnServer } from '../../support/turnServer.js';

const STUN_COOKIE = 0x2112a442;
const ALLOCATE_SUCCESS = 0x0103;
const REFRESH_REQUEST = 0x0004;
const LIFETIME = 0x000d;

/** a STUN message's type, or undefined for anything else (TURN ChannelData) */
function stunType(m: Buffer): number | undefined {
  return m.length >= 20 && m.readUInt32BE(4) === STUN_COOKIE ? m.readUInt16BE(0) : undefined;
}

/** a STUN message's LIFETIME attribute (seconds), if it has one */
function lifetimeOf(m: Buffer): number | undefined {
  for (let at = 20; at + 4 <= m.length; ) {
    const type = m.readUInt16BE(at);
    const length = m.readUInt16BE(at + 2);
    if (type === LIFETIME && length === 4) return m.readUInt32BE(at + 4);
    at += 4 + Math.ceil(length / 4) * 4;
  }
  return undefined;
}

/**
 * A UDP proxy in front of the relay: one upstream socket per client (the relay sees each client's own 5-tuple), the
 * relay's answers passed back from the proxy's port, or held while `hold()` is on until `release()`.
 */
interface HoldingProxy {
  port: number;
  hold(): void;
  /** sends what was held, in order, and passes answers on at once from now */
  release(): void;
  /** Allocate success responses passed to clients */
  allocations: number;
  /** Refresh requests clients sent the relay (each once, not its retransmissions), with their LIFETIME (0: a release) */
  refreshes: { client: string; lifetime: number | undefined }[];
  /** the proxy's own sockets to the relay (open descriptors of this process too) */
  upstreams(): number;
  close(): void;
}

async function startProxy(relay: [string, number]): Promise<HoldingProxy> {
  const front = createSocket('udp4');
  const upstream = new Map<string, Socket>();
  let holding = false;
  let held: Array<() => void> = [];
  const seen = new Set<string>();
  const proxy: HoldingProxy = {
    port: 0,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      for (const send of held) send();
      held = [];
    },
    allocations: 0,
    refreshes: [],
    upstreams: () => upstream.size,
    close: () => {
      for (const s of upstream.values()) s.close();
      front.close();
    },
  };
  front.on('message', (m, from) => {
    const client = `${from.address}:${from.port}`;
    // once per transaction: a retransmission (werift's after 50 ms without an answer) is the same request
    const transaction = m.subarray(8, 20).toString('hex');
    if (stunType(m) === REFRESH_REQUEST && !seen.has(transaction)) seen.add(transaction), proxy.refreshes.push({ client, lifetime: lifetimeOf(m) });
    let up = upstream.get(client);
    if (!up) {
      const s = createSocket('udp4');
      s.bind(0, '127.0.0.1');
      s.on('message', (answer) => {
        const send = () => {
          if (stunType(answer) === ALLOCATE_SUCCESS) proxy.allocations++;
          front.send(answer, from.port, from.address);
        };
        if (holding) held.push(send);
        else send();
      });
      upstream.set(client, (up = s));
    }
    up.send(m, relay[1], relay[0]);
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  proxy.port = front.address().port;
  return proxy;
}

let turn: TurnServer;
let proxy: HoldingProxy;
beforeAll(async () => {
  // allocations of 6 s: werift's refresh loop renews one every 5 s, so a kept allocation shows within the test
  turn = await startTurnServer('127.0.0.1', [20480, 20511], undefined, ['--max-allocate-lifetime=6']);
  proxy = await startProxy([turn.ip, turn.port]);
}, 20_000);
afterAll(async () => {
  proxy?.close();
  await turn?.stop();
});

const handlers = { onAudio: () => undefined, onMessage: () => undefined, onActivity: () => undefined, onClosed: () => undefined } as never;

/** One call attempt through the agent's transport, the proxy as the session's TURN server; resolves with its error. */
async function attempt(signal?: AbortSignal): Promise<unknown> {
  const transport = new WebrtcTransport();
  const session = { id: 'sess_turn_late', iceServers: [{ ...turn.iceServer, urls: [`turn:127.0.0.1:${proxy.port}`] }] };
  const err = await transport.connect({ session, exchangeSdp: () => Promise.reject(new Error('no answer here')), handlers, signal }).catch((e: unknown) => e);
  await transport.close();
  return err;
}

/** this process's open sockets, the proxy's own left out */
const weriftSockets = () => openDescriptors().sockets - proxy.upstreams();

describe('TURN allocation that completes after the call attempt was closed', () => {
  it('regression: an allocation that completed after the connect timeout closed the peer connection was kept for ever (its socket open, its refresh loop renewing it on the relay); now it is closed', async () => {
    // an attempt whose allocation comes at once (and werift's lazily made sockets of a first connection)
    expect(await attempt()).toMatchObject({ code: 'call_failed' });
    expect(proxy.allocations).toBe(1);
    await sleep(200);
    const before = weriftSockets();
    proxy.refreshes = [];

    // the relay's answers held: the connect timeout ends the attempt while werift waits on the allocation
    proxy.hold();
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('connect timeout')), 1000);
    expect(await attempt(ctl.signal)).toMatchObject({ code: 'call_failed', message: 'connect aborted' });
    expect(proxy.allocations, 'allocated before the attempt was closed').toBe(1);

    // the answers go on now (werift's Allocate transaction waits ~6.3 s): the relay allocates for a closed connection
    proxy.release();
    await waitUntil(() => proxy.allocations === 2, 5000, 'the relay to allocate after the close');
    await sleep(6500); // past werift's first refresh (5/6 of the 6 s lifetime)
    // no renewal; one release (LIFETIME 0), of the late allocation when it was closed
    expect.soft(proxy.refreshes.map((r) => r.lifetime), 'Refresh requests after the attempt was closed').toEqual([0]);
    expect(weriftSockets() - before, 'sockets left open').toBe(0);
  }, 30_000);

  it('closing a TURN allocation ends its refresh loop at once (it slept 5/6 of the allocation\'s lifetime, 500 s from most relays, before it saw the close)', async () => {
    await sleep(200);
    const before = resourceCounts().Timeout ?? 0;
    const { username, credential } = turn.iceServer;
    const client = await createTurnClient({ address: [turn.ip, turn.port], username, password: credential });
    await client.close();
    await sleep(100);
    expect((resourceCounts().Timeout ?? 0) - before, 'timers left by the closed allocation').toBe(0);
  }, 20_000);
});

describe('a closed TURN allocation is released on the relay', () => {
  it('regression: a closed allocation was left on the relay until its lifetime ran out (600 s from most relays); one that counts allocations per user refused the next call\'s relay all that time', async () => {
    // a relay allowing one allocation per user (coturn frees a released one on its next second's tick), and
    // lifetimes of 20 s: without the release, the next allocation waits out the first's
    const quota = await startTurnServer('127.0.0.1', [20512, 20543], undefined, ['--user-quota=1', '--max-allocate-lifetime=20']);
    const front = await startProxy([quota.ip, quota.port]);
    try {
      const { username, credential } = quota.iceServer;
      const allocate = () => createTurnClient({ address: ['127.0.0.1', front.port], username, password: credential });
      const first = await allocate();
      await first.close();
      expect.soft(front.refreshes.map((r) => r.lifetime), 'the release: a Refresh with LIFETIME 0').toEqual([0]);
      const t0 = performance.now();
      let next: Awaited<ReturnType<typeof allocate>> | undefined;
      while (!next && performance.now() - t0 < 5000) {
        next = await allocate().catch(async (e: { str?: string }) => {
          expect(e.str).toMatch(/486 - Allocation Quota Reached/);
          await sleep(200);
          return undefined;
        });
      }
      expect(next?.relayedAddress?.[1], 'a relay for the next call within 5 s').toBeGreaterThanOrEqual(20512);
      await next?.close();
    } finally {
      front.close();
      await quota.stop();
    }
  }, 30_000);
});
