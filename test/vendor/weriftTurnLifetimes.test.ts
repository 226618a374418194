// Regressions (from a long relayed call on paper: a speaker's call lasts hours, a TURN relay's state minutes): what a
// relay forgets unless the client renews it, and how werift renewed it. Three checked patches in
// scripts/patch-dependencies.mjs: "A TURN request sent again after a 438 (Stale Nonce) is signed once", "TURN
// channels are refreshed every 240 s" and "A TURN channel's refresh does not hold the call's packets back" (with
// "A TURN permission made for Send indications ... is refreshed like a channel"). werift's TURN client against
// Debian's coturn (test/support/turnServer.ts) with its lifetimes cut from minutes to seconds (coturn's own
// options) and the client's channel refresh cut to match; the relay's log counts what it saw.
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { createTurnClient } from 'werift';
import { sleep, waitUntil } from '../support/audioCapture.js';
import { startTurnServer, type TurnServer } from '../support/turnServer.js';

/** werift's TurnProtocol as these tests use it (its refresh time and its permission call are not in its types) */
interface TurnClient {
  channelRefreshTime: number;
  sendData(data: Buffer, addr: [string, number]): Promise<void>;
  getPermission(addr: [string, number]): Promise<void>;
  close(): Promise<void>;
}

let turn: TurnServer | undefined;
let client: TurnClient | undefined;
let peer: Socket | undefined;
afterEach(async () => {
  await client?.close();
  peer?.close();
  await turn?.stop();
  [turn, client, peer] = [undefined, undefined, undefined];
});

const count = (re: RegExp) => (turn!.log().match(new RegExp(re.source, 'g')) ?? []).length;

/** A UDP peer on loopback that records what the relay delivers, with the time it came (ms since `t0`). */
async function startPeer(t0: number): Promise<{ to: [string, number]; got: { text: string; at: number }[] }> {
  peer = createSocket('udp4');
  const got: { text: string; at: number }[] = [];
  peer.on('message', (m) => got.push({ text: m.toString(), at: performance.now() - t0 }));
  await new Promise<void>((r) => peer!.bind(0, '127.0.0.1', r));
  return { to: ['127.0.0.1', peer.address().port], got };
}

/** werift's record of the client's one channel (when it is next due, in seconds of the monotonic clock) */
const channel = (c: TurnClient) => Object.values((c as unknown as { channelByAddr: Record<string, { refreshAt: number }> }).channelByAddr)[0];

async function connect(lifetime?: number): Promise<TurnClient> {
  const { username, credential } = turn!.iceServer;
  client = (await createTurnClient({ address: ['127.0.0.1', turn!.port], username, password: credential }, lifetime ? { lifetime } : {})) as unknown as TurnClient;
  return client;
}

describe('werift TURN state kept alive for as long as a call lasts (patched)', () => {
  it('channels and permissions are refreshed within the 300 s a permission lives (RFC 8656; werift waited 500 s)', async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    expect((await connect()).channelRefreshTime).toBe(240);
  }, 30_000);

  /** Sends a packet every 50 ms until `untilMs` after t0, through the relay to the peer. */
  async function stream(c: TurnClient, to: [string, number], t0: number, untilMs: number): Promise<void> {
    for (let i = 0; performance.now() - t0 < untilMs; i++) {
      await c.sendData(Buffer.from(`p${i}`), to);
      await sleep(50);
    }
    await sleep(300);
  }

  /** Every whole second from the first packet's to `lastSecond` had packets through the relay. */
  function everySecond(got: { at: number }[], lastSecond: number): void {
    expect(got.length, 'packets through the relay').toBeGreaterThan(0);
    const seconds = new Set(got.map((g) => Math.floor(g.at / 1000)));
    for (let s = Math.floor(got[0].at / 1000); s <= lastSecond; s++) expect(seconds.has(s), `packets in second ${s}`).toBe(true);
  }

  it('regression: with a relay that ages its nonces, the allocation is refreshed and the relay goes on relaying past its first lifetime (the 438 retry was signed over its old signature, dropped, and the allocation lapsed)', async () => {
    // an allocation of 6 s (werift refreshes it at 5 s), its nonce stale after 2 s: the refresh meets a 438 first
    turn = await startTurnServer('127.0.0.1', [20224, 20479], undefined, ['--stale-nonce=2', '--max-allocate-lifetime=6']);
    const t0 = performance.now();
    const { to, got } = await startPeer(t0);
    await stream(await connect(6), to, t0, 9_000);
    const log = turn.log();
    expect(log).toMatch(/error 438[^\n]*\n(?:[^\n]*\n)*?[^\n]*REFRESH processed, success/); // the refresh after a stale nonce
    expect(log).not.toMatch(/delete: realm/); // the allocation was not let go
    everySecond(got, 8); // before: nothing from the 6th second on
  }, 30_000);

  it('regression: with a relay that ages its nonces, channels are refreshed and carry the packets past their lifetime', async () => {
    // a channel of 4 s (the client refreshes at 2 s), a nonce stale after 1 s: every refresh meets a 438 first
    turn = await startTurnServer('127.0.0.1', [20224, 20479], undefined, ['--stale-nonce=1', '--channel-lifetime=4']);
    const t0 = performance.now();
    const { to, got } = await startPeer(t0);
    const c = await connect();
    c.channelRefreshTime = 2;
    await stream(c, to, t0, 10_000);
    expect(count(/error 438/), turn.log()).toBeGreaterThanOrEqual(3);
    expect(count(/CHANNEL_BIND processed, success/), turn.log()).toBeGreaterThanOrEqual(4);
    everySecond(got, 9); // before: nothing from the 4th second on
  }, 30_000);

  it("regression: a channel due for its refresh carries the call's packets while the relay has not answered the refresh (they waited for it)", async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    const { to, got } = await startPeer(performance.now());
    const c = await connect();
    c.channelRefreshTime = 1;
    await c.sendData(Buffer.from('bound'), to); // binds the channel
    await waitUntil(() => got.some((g) => g.text === 'bound'), 5_000, 'the first packet through the relay');
    await waitUntil(() => count(/CHANNEL_BIND processed, success/) === 1, 5_000, "coturn's log of the bind");
    const dueAt = channel(c).refreshAt;
    await sleep(1_200); // the channel is due
    process.kill(turn.pid, 'SIGSTOP'); // the relay answers nothing for a while (a lossy network, a busy relay)
    c.channelRefreshTime = 60; // the refresh below, once answered, is not due again within this test
    try {
      const start = performance.now();
      for (let i = 0; i < 10; i++) await c.sendData(Buffer.from(`during${i}`), to);
      // on the wire at once (the kernel holds them for the stopped relay), not behind the ChannelBind, which is
      // answered only once the relay runs again, 1.5 s on (the bound here leaves a loaded machine room)
      expect(performance.now() - start).toBeLessThan(1_000);
      await sleep(1_500);
    } finally {
      process.kill(turn.pid, 'SIGCONT');
    }
    await waitUntil(() => got.filter((g) => g.text.startsWith('during')).length === 10, 5_000, 'the packets sent while the relay was stopped');
    // the refresh was answered once the relay ran again (coturn answers each of its retransmissions: more than one)
    await waitUntil(() => count(/CHANNEL_BIND processed, success/) >= 2, 10_000, 'the refresh, answered once the relay runs again');
    await waitUntil(() => channel(c).refreshAt > dueAt, 10_000, 'the client to take the refresh\'s answer');
    await sleep(1_000); // the retransmissions the relay held while stopped are answered too
    const binds = count(/CHANNEL_BIND processed, success/);
    const refreshedTo = channel(c).refreshAt;
    for (let i = 0; i < 5; i++) await c.sendData(Buffer.from(`after${i}`), to);
    await waitUntil(() => got.filter((g) => g.text.startsWith('after')).length === 5, 5_000, 'the packets after the refresh');
    await sleep(300);
    // not due again: no bind per packet
    expect(channel(c).refreshAt).toBe(refreshedTo);
    expect(count(/CHANNEL_BIND processed, success/)).toBe(binds);
  }, 40_000);

  it('a channel whose refresh keeps failing counts as unbound once the permission it renews has lapsed: packets wait for its bind again, or go as Send indications (it was used for ever)', async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    const { to, got } = await startPeer(performance.now());
    const c = await connect();
    c.channelRefreshTime = 4; // unbound after max(5, 4 / 4) = 5 s of failed refreshes (60 s at werift's 240)
    await c.sendData(Buffer.from('bound'), to);
    await waitUntil(() => got.some((g) => g.text === 'bound'), 5_000, 'the first packet through the relay');
    const bound = channel(c) as { number: number; refreshAt: number };
    await sleep(4_200); // due
    process.kill(turn.pid, 'SIGSTOP'); // the relay answers nothing: each refresh times out (werift: 6.35 s)
    try {
      // a packet every 100 ms starts and retries the refresh; the channel is unbound once its failures span 5 s
      for (const end = performance.now() + 30_000; performance.now() < end && bound.refreshAt !== 0; await sleep(100)) {
        void c.sendData(Buffer.from('while stopped'), to).catch(() => undefined);
      }
      expect(bound.refreshAt, 'the failing channel counts as unbound').toBe(0);
    } finally {
      process.kill(turn.pid, 'SIGCONT');
    }
    await c.sendData(Buffer.from('after'), to); // waits for the bind, now answered
    await waitUntil(() => got.some((g) => g.text === 'after'), 5_000, 'a packet through the relay once it answers again');
    expect(channel(c)).toBe(bound); // the same channel, bound again under its number
    expect(bound.refreshAt).toBeGreaterThan(0);
    expect(turn.log()).not.toMatch(/processed, error 400/); // no bind refused (a new number for the same peer would be)
  }, 60_000);

  it("a permission made for Send indications is made again once due (werift made it once; the relay forgets it after 300 s)", async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    const { to } = await startPeer(performance.now());
    const c = await connect();
    c.channelRefreshTime = 2; // due again 1-2 s after it is made (werift counts whole seconds)
    await c.getPermission(to);
    await c.getPermission(to); // not due: nothing sent
    await waitUntil(() => count(/CREATE_PERMISSION processed, success/) === 1, 5_000, 'the permission');
    await sleep(2_200);
    await c.getPermission(to);
    await waitUntil(() => count(/CREATE_PERMISSION processed, success/) === 2, 5_000, 'the permission made again');
  }, 30_000);
});
