// Regression (from a review of wall-clock steps): werift timed an SCTP round trip, a data-channel message's send
// to its SACK, with Date.now. A board without a real-time clock steps its wall clock when NTP syncs (by days or
// months, often a minute after the agent started); a step between a message and its SACK pinned the
// retransmission timeout at 60 s for the next hundred-odd messages, so a message lost on Wi-Fi then was resent
// after a minute. The checked patch in scripts/patch-dependencies.mjs ("SCTP round trips on the monotonic
// clock") times them with performance.now. Two real werift peers over loopback; the step is a spy on Date.now
// (a fake: the machine's clock is not this test's to set).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep, waitUntil } from '../support/audioCapture.js';
import { dataChannelPair, type DataChannelPair } from '../support/dataChannelPair.js';

let pair: DataChannelPair | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await pair?.close();
  pair = undefined;
});

describe('werift SCTP across a wall-clock step (patched)', () => {
  it.each([
    { name: '90 days forward (NTP syncing after boot)', stepMs: 90 * 86_400_000 },
    { name: 'an hour back (a bad time server, a manual date)', stepMs: -3_600_000 },
  ])('regression: a step of $name while a message waits for its SACK leaves the retransmission timeout at its 0.4 s floor', async ({ stepMs }) => {
    pair = await dataChannelPair();
    const { channel, received, sctp } = pair;
    for (let i = 0; i < 5; i++) {
      channel.send(`warm ${i}`);
      await sleep(30);
    }
    await waitUntil(() => received.length === 5, 5_000, 'the warm-up messages');
    expect(sctp.rto).toBe(0.4); // the floor ("SCTP retransmission"): the loopback round trip is far under it
    const realNow = Date.now.bind(Date);
    // the step lands between the send and the SACK: the send is stamped first, then the clock moves
    channel.send('in flight');
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + stepMs);
    await waitUntil(() => received.includes('in flight'), 5_000, 'the message');
    await waitUntil(() => sctp.flightSize === 0, 5_000, 'its SACK'); // the round trip is measured on it
    expect(sctp.rto).toBe(0.4);
    channel.send('after');
    await waitUntil(() => received.includes('after'), 5_000, 'the next message');
    expect(sctp.rto).toBe(0.4);
  });
});
