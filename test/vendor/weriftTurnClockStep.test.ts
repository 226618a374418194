// Regression (from a review of wall-clock steps): werift stamped when a TURN channel is next due for its ChannelBind
// refresh in wall-clock seconds. A board without a real-time clock steps its wall clock when NTP syncs; a step back
// postponed the refresh by the whole step, the TURN server forgot the channel 600 s after its last bind, and a
// call that only the relay could carry went silent. The checked patch in scripts/patch-dependencies.mjs ("TURN
// channel refreshes on the monotonic clock") stamps it with performance.now. werift's TURN client against Debian's
// coturn (test/support/turnServer.ts), whose log counts the binds; the refresh interval is cut from 500 s to 2 s
// on the client, and the step is a spy on Date.now (a fake: the machine's clock is not this test's to set).
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTurnClient } from 'werift';
import { sleep, waitUntil } from '../support/audioCapture.js';
import { startTurnServer, type TurnServer } from '../support/turnServer.js';

let turn: TurnServer | undefined;
let client: Awaited<ReturnType<typeof createTurnClient>> | undefined;
let peer: Socket | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await client?.close();
  peer?.close();
  await turn?.stop();
  [turn, client, peer] = [undefined, undefined, undefined];
});

const binds = () => (turn!.log().match(/CHANNEL_BIND processed, success/g) ?? []).length;

describe('werift TURN channels across a wall-clock step (patched)', () => {
  it('regression: an hour\'s step back does not postpone the channel\'s refresh (it would be forgotten by the relay)', async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    peer = createSocket('udp4');
    const got: string[] = [];
    peer.on('message', (m) => got.push(m.toString()));
    await new Promise<void>((r) => peer!.bind(0, '127.0.0.1', r));
    const to: [string, number] = ['127.0.0.1', peer.address().port];
    const { username, credential } = turn.iceServer;
    client = await createTurnClient({ address: ['127.0.0.1', turn.port], username, password: credential });
    (client as unknown as { channelRefreshTime: number }).channelRefreshTime = 2; // werift's default: 500 s

    await client.sendData(Buffer.from('first'), to); // binds the channel
    await waitUntil(() => got.includes('first'), 5_000, 'the first datagram through the relay');
    await waitUntil(() => binds() === 1, 5_000, 'coturn\'s log of the bind');

    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 3_600_000);
    await sleep(2_500); // past the (shortened) refresh interval
    await client.sendData(Buffer.from('second'), to); // due: refreshes the channel first
    await waitUntil(() => got.includes('second'), 5_000, 'the second datagram');
    await waitUntil(() => binds() === 2, 5_000, 'the refresh, a second ChannelBind');
  }, 30_000);

  it('a channel not yet due is not bound again (the count above is of refreshes, not of sends)', async () => {
    turn = await startTurnServer('127.0.0.1', [20224, 20479]);
    peer = createSocket('udp4');
    const got: string[] = [];
    peer.on('message', (m) => got.push(m.toString()));
    await new Promise<void>((r) => peer!.bind(0, '127.0.0.1', r));
    const to: [string, number] = ['127.0.0.1', peer.address().port];
    const { username, credential } = turn.iceServer;
    client = await createTurnClient({ address: ['127.0.0.1', turn.port], username, password: credential });
    (client as unknown as { channelRefreshTime: number }).channelRefreshTime = 2;
    for (const m of ['a', 'b', 'c']) await client.sendData(Buffer.from(m), to);
    await waitUntil(() => got.length === 3, 5_000, 'three datagrams through the relay');
    await sleep(300);
    expect(binds()).toBe(1);
  }, 30_000);
});
