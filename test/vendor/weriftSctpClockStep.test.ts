// Regression (from a review of wall-clock steps): werift timed an SCTP round trip, a data-channel message's send
// to its SACK, with Date.now. A board without a real-time clock steps its wall clock when NTP syncs (by days or
// months, often a minute after the agent started); a step between a message and its SACK pinned the
// retransmission timeout at 60 s for the next hundred-odd messages, so a message lost on Wi-Fi then was resent
// after a minute. The checked patch in scripts/patch-dependencies.mjs ("SCTP round trips on the monotonic
// clock") times them with performance.now. Two real werift peers over loopback; the step is a spy on Date.now
// (a fake: the machine's clock is not this test's to set).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitUntil } from '../support/audioCapture.js';
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
  ])('regression: a step of $name while a message waits for its SACK leaves the retransmission timeout near its 0.4 s floor, not at 60 s', async ({ stepMs }) => {
    pair = await dataChannelPair();
    const { channel, received, sctp } = pair;
    // until the timeout is at its floor ("SCTP retransmission"): the loopback round trip is far under it, but one slow
    // first sample on a loaded machine keeps it above for a few messages
    const deadline = performance.now() + 10_000;
    for (let i = 0; sctp.rto !== 0.4 && performance.now() < deadline; i++) {
      channel.send(`warm ${i}`);
      await waitUntil(() => received.length === i + 1 && sctp.sentQueue.length === 0, 5_000, 'a warm-up message and its SACK');
    }
    expect(sctp.rto).toBe(0.4);
    const realNow = Date.now.bind(Date);
    // the step lands between the send and the SACK: the send is stamped first, then the clock moves
    channel.send('in flight');
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + stepMs);
    await waitUntil(() => received.includes('in flight'), 5_000, 'the message');
    await waitUntil(() => sctp.flightSize === 0, 5_000, 'its SACK'); // the round trip is measured on it
    // a loopback round trip: the floor, or just above it if this sample was slow (as shipped: 60 s, the maximum, or
    // a negative round trip's nonsense); the same for the next message
    expect(sctp.rto).toBeGreaterThanOrEqual(0.4);
    expect(sctp.rto).toBeLessThan(1);
    channel.send('after');
    await waitUntil(() => received.includes('after'), 5_000, 'the next message');
    expect(sctp.rto).toBeGreaterThanOrEqual(0.4);
    expect(sctp.rto).toBeLessThan(1);
  });
});
