// Regressions (found reading werift's SACK for the Chromium loss test, 1 Dec): what one SACK can say. A SACK gives
// each block of messages received out of order as a 16-bit offset from the cumulative acknowledgement. werift took
// a DATA chunk of any sequence number (TSN) ahead of it, and one 65,536 or more ahead made every SACK throw while
// it was written, until the acknowledgement came within 65,535 of it: for one far ahead (a peer's bug), no
// acknowledgement for the rest of the call, the sender holding every message. And it
// listed every block (and every duplicate), so after scattered losses one SACK outgrew the packets werift sends DATA
// in. The checked
// patches in scripts/patch-dependencies.mjs ("SCTP takes DATA only as far ahead as a SACK can report", "A SACK fits
// in one packet"). Real werift peers over loopback; the out-of-window and scattered chunks are the sender's own
// DATA packet at other TSNs, handed to the receiver's association as its DTLS layer would (a peer's bug cannot be
// had from a correct werift, so that packet stands in for it).
import { crc32c } from 'werift';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/audioCapture.js';
import { dataChannelPair, type DataChannelPair, type SctpInternals } from '../support/dataChannelPair.js';

let pair: DataChannelPair | undefined;
afterEach(async () => {
  await pair?.close();
  pair = undefined;
});

/** The receiving association's packets: the last DATA packet it took, and every SACK it sent (SCTP packets, before
 *  DTLS). */
function watch(sctp: SctpInternals): { data?: Buffer; sacks: Buffer[] } {
  const seen: { data?: Buffer; sacks: Buffer[] } = { sacks: [] };
  const handle = sctp.handleData.bind(sctp);
  sctp.handleData = (packet: Buffer) => {
    if (packet.length > 12 && packet[12] === 0) seen.data = Buffer.from(packet);
    return handle(packet);
  };
  const transport = (sctp as unknown as { transport: { send(packet: Buffer): Promise<unknown> } }).transport;
  const send = transport.send.bind(transport);
  transport.send = (packet: Buffer) => {
    if (packet.length > 12 && packet[12] === 3) seen.sacks.push(Buffer.from(packet));
    return send(packet);
  };
  return seen;
}

/** `packet` (one DATA chunk) at another TSN, as a middle fragment (flags 0: never a whole message, so nothing is
 *  delivered from it), with its CRC32c made again (werift drops a packet whose checksum is wrong). */
function atTsn(packet: Buffer, tsn: number): Buffer {
  const p = Buffer.from(packet);
  p[13] = 0;
  p.writeUInt32BE(tsn >>> 0, 16); // the chunk's TSN, after the 12-byte common header and the 4-byte chunk header
  p.writeUInt32LE(0, 8);
  p.writeUInt32LE(crc32c(p) >>> 0, 8);
  return p;
}

/** A SACK packet's gap blocks: [start, end] offsets from its cumulative TSN */
function gaps(sack: Buffer): Array<[number, number]> {
  const n = sack.readUInt16BE(12 + 12);
  return [...Array(n).keys()].map((i) => [sack.readUInt16BE(12 + 16 + 4 * i), sack.readUInt16BE(12 + 18 + 4 * i)]);
}

type Receiver = { lastReceivedTsn: number; sackMisOrdered: Set<number> };

describe('werift SCTP: what one SACK can say (patched)', () => {
  it('regression: one DATA chunk far ahead of the acknowledgement (a million) stopped every SACK for the rest of the call; now one 65,536 or more ahead is dropped and the messages after it are acknowledged', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiverSctp } = pair;
    const seen = watch(receiverSctp);
    channel.send('first');
    await waitUntil(() => received.length === 1 && sctp.sentQueue.length === 0, 5000, 'the first message and its SACK');
    const receiver = receiverSctp as unknown as Receiver;
    const cumulative = receiver.lastReceivedTsn;
    // a million ahead (a peer's bug): as shipped every SACK threw until the acknowledgement came within 65,535 of it;
    // the nearest that cannot be reported, 65,536 ahead; and exactly 2^31 ahead, which serial arithmetic calls
    // neither before nor after
    for (const ahead of [1_000_000, 65_536, 2 ** 31]) await receiverSctp.handleData(atTsn(seen.data!, cumulative + ahead));
    const sacksBefore = seen.sacks.length;
    for (let i = 0; i < 8; i++) channel.send(`message ${i}`);
    await waitUntil(() => received.length === 9, 10_000, 'every message to arrive');
    expect(received).toEqual(['first', ...[...Array(8).keys()].map((i) => `message ${i}`)]);
    // the SACKs go on: the sender holds nothing (as shipped every SACK threw and the sender kept all eight)
    await waitUntil(() => sctp.sentQueue.length === 0, 5000, 'the sender to have every message acknowledged');
    expect(receiver.sackMisOrdered.size).toBe(0); // none of the three was taken
    expect(sctp.flightSize).toBe(0);
    expect(seen.sacks.length).toBeGreaterThan(sacksBefore);
    expect(receiver.lastReceivedTsn).toBe((cumulative + 8) >>> 0);
    // the farthest a SACK can report is still taken: 65,535 ahead, and the next SACK says so
    const edge = receiver.lastReceivedTsn;
    await receiverSctp.handleData(atTsn(seen.data!, edge + 65_535));
    expect([...receiver.sackMisOrdered]).toEqual([(edge + 65_535) >>> 0]);
    await waitUntil(() => gaps(seen.sacks[seen.sacks.length - 1]).length === 1, 5000, 'a SACK reporting it');
    expect(gaps(seen.sacks[seen.sacks.length - 1])).toEqual([[65_535, 65_535]]);
  }, 30_000);

  it('regression: a packet of 40 duplicate DATA chunks got a SACK listing all 40; now it lists 32 and fits in one packet', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiverSctp } = pair;
    const seen = watch(receiverSctp);
    for (let i = 0; i < 40; i++) channel.send(`message ${i}`);
    await waitUntil(() => received.length === 40 && sctp.sentQueue.length === 0, 10_000, 'forty messages and their SACKs');
    const cumulative = (receiverSctp as unknown as Receiver).lastReceivedTsn;
    // one packet bundling the last 40 TSNs again (werift's sender puts one chunk in a packet; SCTP allows many)
    const one = atTsn(seen.data!, 0).subarray(12);
    const chunk = Buffer.alloc((one.readUInt16BE(2) + 3) & ~3);
    one.copy(chunk, 0, 0, Math.min(one.length, chunk.length));
    const chunks = [...Array(40).keys()].map((i) => {
      const c = Buffer.from(chunk);
      c.writeUInt32BE((cumulative - 39 + i) >>> 0, 4);
      return c;
    });
    const packet = Buffer.concat([seen.data!.subarray(0, 12), ...chunks]);
    packet.writeUInt32LE(0, 8);
    packet.writeUInt32LE(crc32c(packet) >>> 0, 8);
    const sacksBefore = seen.sacks.length;
    await receiverSctp.handleData(packet);
    await waitUntil(() => seen.sacks.length > sacksBefore, 5_000, 'a SACK for that packet');
    const sack = seen.sacks[seen.sacks.length - 1];
    // as shipped: 40 duplicates (16 + 160 bytes of chunk)
    expect(sack.readUInt16BE(12 + 14)).toBe(32); // duplicates reported
    expect(sack.length).toBe(12 + 16 + 4 * 32);
    expect(sack.readUInt32BE(12 + 16)).toBe((cumulative - 39) >>> 0); // the first of them
    expect(received).toHaveLength(40); // nothing delivered twice
  }, 30_000);

  it('regression: after scattered losses one SACK listed every block received out of order and outgrew a packet; now it reports the first 256 and fits in one', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiverSctp } = pair;
    const seen = watch(receiverSctp);
    channel.send('first');
    await waitUntil(() => received.length === 1 && sctp.sentQueue.length === 0, 5000, 'the first message and its SACK');
    const cumulative = (receiverSctp as unknown as Receiver).lastReceivedTsn;
    // 400 blocks: every other TSN from 2 ahead, as a receiver has them after losing every other packet of a backlog
    for (let i = 1; i <= 400; i++) await receiverSctp.handleData(atTsn(seen.data!, cumulative + 2 * i));
    expect((receiverSctp as unknown as Receiver).sackMisOrdered.size).toBe(400);
    const last = seen.sacks[seen.sacks.length - 1];
    expect(last.readUInt32BE(12 + 4)).toBe(cumulative); // its cumulative TSN
    // as shipped: 400 blocks, 1,628 bytes, beyond the 1,228-byte packets werift sends DATA in
    expect(gaps(last)).toEqual([...Array(256).keys()].map((i) => [2 * (i + 1), 2 * (i + 1)]));
    expect(last.length).toBe(12 + 16 + 4 * 256);
    expect(Math.max(...seen.sacks.map((s) => s.length))).toBeLessThanOrEqual(12 + 16 + 1200);
  }, 30_000);
});
