// Regression (found reading werift's SCTP for the flight-size fix, 30 Nov): the receiver sorted the sequence numbers
// (TSNs) it had received out of order with a plain sort(), which orders numbers as text, and moved its cumulative
// acknowledgement on only while the first of them was the next one due. A loss straddling a power of ten
// (999999999 arriving after 1000000000) or the wrap at 2^32 stopped the acknowledgement for good: the sender kept
// every later message and resent one every second for the rest of the call. Across the wrap the SACK's gap offset was
// negative as well, and writing the SACK threw. And (from a review) one before TSN 0 was -1: a channel closed when the
// next TSN was 0 sent a stream reset that could not be written (an unhandled RangeError; the far end never closed).
// The checked patches in scripts/patch-dependencies.mjs ("SCTP takes received messages in serial order"). Real werift
// peers over loopback; the sender's first TSN is set, and the packet lost is chosen by its TSN.
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/audioCapture.js';
import { dataChannelPair, loseDataOnce, type DataChannelPair } from '../support/dataChannelPair.js';

let pair: DataChannelPair | undefined;
afterEach(async () => {
  await pair?.close();
  pair = undefined;
});

const cases = [
  { name: 'a power of ten (999999999 after 1000000000)', lost: 999_999_999 },
  { name: 'the wrap at 2^32 (4294967295 after 0)', lost: 2 ** 32 - 1 },
];

describe('werift SCTP sequence numbers (patched)', () => {
  for (const c of cases) {
    it(`regression: a message lost across ${c.name} is acknowledged once it comes; the sender keeps nothing`, async () => {
      // the channel's open message takes the first TSN; the 4th message is the one lost
      pair = await dataChannelPair({ initialTsn: (c.lost - 4 + 2 ** 32) % 2 ** 32 });
      const { channel, received, sctp, receiverSctp } = pair;
      const link = loseDataOnce(receiverSctp, (packet) => packet.length >= 20 && packet.readUInt32BE(16) === c.lost); // its TSN follows the chunk's 4-byte header
      for (let i = 0; i < 8; i++) channel.send(`message ${i}`);
      await waitUntil(() => received.length === 8, 10_000, 'every message to arrive');
      expect(link.lost).toBe(true); // the case in question: that message came later than those after it
      expect(received).toEqual([...Array(8).keys()].map((i) => `message ${i}`));
      // the cumulative acknowledgement reaches the last message: the sender holds nothing more
      await waitUntil(() => sctp.sentQueue.length === 0, 5000, 'the sender to have every message acknowledged');
      const receiver = receiverSctp as unknown as { lastReceivedTsn: number; sackMisOrdered: Set<number> };
      expect(receiver.lastReceivedTsn).toBe((c.lost + 4) % 2 ** 32);
      expect(receiver.sackMisOrdered.size).toBe(0);
      expect(sctp.flightSize).toBe(0);
    }, 20_000);
  }
});

describe('werift SCTP: one before a sequence number of 0', () => {
  it('regression: a channel closed right after the wrap (the next TSN is 0) is closed at the far end', async () => {
    // the open message takes 2^32 - 9, the eight messages the rest up to 2^32 - 1: the next TSN is 0
    pair = await dataChannelPair({ initialTsn: 2 ** 32 - 9 });
    const { channel, received, receiver } = pair;
    for (let i = 0; i < 8; i++) channel.send(`message ${i}`);
    await waitUntil(() => received.length === 8, 10_000, 'every message to arrive');
    const far = Object.values((receiver.sctpTransport as unknown as { dataChannels: Record<string, { readyState: string }> }).dataChannels)[0];
    channel.close(); // a stream reset naming the last TSN sent, 0 - 1
    await waitUntil(() => far.readyState === 'closed', 10_000, 'the far end of the channel to close');
  }, 30_000);
});
