// Regression (the data-channel fuzz tests failing on a busy machine, 27 Nov): with messages queued in SCTP, every
// pending send waited for the queue to drain through a `once` subscription of its own on the association's `flush`
// event, and each one left by filtering the whole subscriber list, so each flush cost the square of the backlog.
// 1,000 queued 5 KB messages drained at 170 KB/s; 2,000 stopped draining: ICE starved until consent to send expired
// and the call failed. The checked patch in scripts/patch-dependencies.mjs gives all senders one waiter. Real werift
// peers over loopback; the subscriber list is read from werift's SCTP association.
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/audioCapture.js';
import { dataChannelPair, type DataChannelPair } from '../support/dataChannelPair.js';

let pair: DataChannelPair | undefined;
afterEach(async () => {
  await pair?.close();
  pair = undefined;
});

describe('werift SCTP send backlog (patched)', () => {
  it('regression: 1,000 queued messages keep one subscriber on flush, and all arrive intact and in order', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp } = pair;
    let mostSubscribers = 0;
    const sample = () => (mostSubscribers = Math.max(mostSubscribers, sctp.flush.event.stack.length));
    const sampler = setInterval(sample, 5);
    const N = 1_000;
    const body = 'x'.repeat(5_000);
    for (let i = 0; i < N; i++) channel.send(`${i} ${body}`); // all at once: a backlog of 5 MB
    try {
      await waitUntil(() => received.length === N, 60_000, 'every message to arrive');
    } finally {
      clearInterval(sampler);
    }
    sample();
    // unpatched werift: one subscriber per pending send, hundreds at once
    expect(mostSubscribers).toBeLessThanOrEqual(1);
    expect(received.every((m, i) => m === `${i} ${body}`)).toBe(true);
    await waitUntil(() => channel.bufferedAmount === 0 && sctp.outboundQueue.length === 0, 10_000, 'the queue to drain');
    expect(pair.sender.connectionState).toBe('connected');
  }, 90_000);
});
