// Regression (CI's run of da66f70: a call on a lossy uplink not up within 20 s): werift started SCTP's
// retransmission timeout at 3 s, and resent a lost handshake packet after 3 s each time. With a fifth of the uplink
// lost a call took 2.4-3.0 s on average to connect, up to 12.2 s (bench call-setup). The checked patches in
// scripts/patch-dependencies.mjs ("SCTP retransmission") start at 1 s, as WebRTC's own SCTP resends its
// handshake, and (1 Dec) let the timeout settle at 0.4 s once the round trip is measured, dcsctp's floor, where werift
// kept SCTP's 1 s: on the agent's quiet channel a lost message has nothing after it to report it missing, and came a
// second late. And each timeout doubles it, up to 3 s, as dcsctp backs off: without, a round trip grown past the
// timeout made every message time out for good (werift measures round trips only on messages sent once). Real werift
// peers over loopback; the timeout is read from werift's SCTP association. The same probe under
// bench/weriftAsShipped.mjs (the patches undone in memory, the bench's anchor) shows werift as shipped.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep, waitUntil } from '../support/audioCapture.js';
import { countTimeouts, dataChannelPair, type DataChannelPair } from '../support/dataChannelPair.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let pair: DataChannelPair | undefined;
afterEach(async () => {
  await pair?.close();
  pair = undefined;
});

/** werift's debug option drops an inbound packet unless Math.random() < inboundPacketLoss / 100: a tiny share
 *  lets (almost) nothing through. 0 would turn the option off. */
const DROP_ALL = { inboundPacketLoss: 1e-4 };

// The same steps in a plain child process, to run werift under the bench's load hook: the timeout before the
// handshake, and after 3.5 s of a message never acknowledged.
const PROBE = `
const { RTCPeerConnection } = await import('werift');
const cfg = { iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'] };
const a = new RTCPeerConnection(cfg), b = new RTCPeerConnection(cfg);
const dc = a.createDataChannel('oai-events');
await a.setLocalDescription(await a.createOffer());
const initial = a.sctpTransport.sctp.rto;
await b.setRemoteDescription(a.localDescription);
await b.setLocalDescription(await b.createAnswer());
await a.setRemoteDescription(b.localDescription);
await new Promise((r) => (dc.readyState === 'open' ? r() : dc.stateChanged.subscribe((s) => s === 'open' && r())));
b.config.debug = ${JSON.stringify(DROP_ALL)};
dc.send('never acknowledged');
await new Promise((r) => setTimeout(r, 3500));
console.log(JSON.stringify({ initial, unacked: a.sctpTransport.sctp.rto }));
process.exit(0);
`;

describe('werift SCTP retransmission (patched)', () => {
  it('regression: the association starts its retransmission timeout at 1 s, not 3 s', async () => {
    const { RTCPeerConnection } = await import('werift');
    const pc = new RTCPeerConnection({ iceServers: [] });
    pc.createDataChannel('oai-events');
    await pc.setLocalDescription(await pc.createOffer());
    expect((pc.sctpTransport as unknown as { sctp: { rto: number } }).sctp.rto).toBe(1);
    await pc.close();
  });

  it('regression: once the round trip is measured the timeout settles at 0.4 s, not 1 s; a message never acknowledged is resent at each timeout, which doubles up to 3 s, and arrives once the link is back; the next round trip sets 0.4 s again', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiver } = pair;
    // the loopback round trip is far under the floor; on a loaded machine one slow first sample keeps the timeout
    // above it for a few more messages, so it is given some
    const deadline = performance.now() + 10_000;
    for (let i = 0; sctp.rto !== 0.4 && performance.now() < deadline; i++) {
      channel.send(`warm-up ${i}`);
      await waitUntil(() => received.length === i + 1 && sctp.sentQueue.length === 0, 5_000, 'a warm-up message and its SACK');
    }
    expect(sctp.rto).toBe(0.4);
    const timeouts = countTimeouts(sctp);
    receiver.config.debug = DROP_ALL;
    channel.send('held');
    await sleep(3500); // expiries at 0.4, 1.2 (+0.8) and 2.8 s (+1.6); the next at 5.8 (+3)
    expect(timeouts.n).toBe(3); // as shipped, without the back-off: 3 in 3.5 s at 1 s, 8 at 0.4 s
    expect(sctp.rto).toBe(3);
    expect(received).not.toContain('held');
    receiver.config.debug = {};
    await waitUntil(() => received.includes('held'), 5_000, 'the message to be resent and arrive');
    channel.send('after'); // sent once and acknowledged: a round trip again
    await waitUntil(() => received.includes('after') && sctp.sentQueue.length === 0, 5_000, 'the next message and its SACK');
    expect(sctp.rto).toBe(0.4);
    expect(received.filter((m) => !m.startsWith('warm-up'))).toEqual(['held', 'after']);
  }, 30_000);

  it('regression: with the 0.4 s floor and no back-off, a round trip grown past the timeout (SACKs 0.6 s late) made every message time out, and no round trip was measured again; now the timeout rises to meet it', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiverSctp } = pair;
    const deadline = performance.now() + 10_000;
    for (let i = 0; sctp.rto !== 0.4 && performance.now() < deadline; i++) {
      channel.send(`warm-up ${i}`);
      await waitUntil(() => received.length === i + 1 && sctp.sentQueue.length === 0, 5_000, 'a warm-up message and its SACK');
    }
    expect(sctp.rto).toBe(0.4);
    // from now on the receiver's SACKs leave 0.6 s late: a congested Wi-Fi, a far relay
    const transport = (receiverSctp as unknown as { transport: { send(packet: Buffer): Promise<unknown> } }).transport;
    const send = transport.send.bind(transport);
    transport.send = (packet: Buffer) => (packet.length > 12 && packet[12] === 3 ? new Promise((r) => setTimeout(() => r(send(packet)), 600)) : send(packet));
    const timeouts = countTimeouts(sctp);
    const after: number[] = [];
    for (let i = 0; i < 5; i++) {
      channel.send(`slow ${i}`);
      await waitUntil(() => received.includes(`slow ${i}`) && sctp.sentQueue.length === 0, 10_000, `slow ${i} and its SACK`);
      after.push(timeouts.n);
    }
    // the first times out (its SACK is later than 0.4 s) and doubles the timeout; the next is acknowledged before
    // it, its round trip is measured, and the timeout follows the round trip from then on: no timeout after the first
    // (with the floor and no back-off: one timeout per message, [1, 2, 3, 4, 5], and the timeout 0.4 s throughout)
    expect(after).toEqual([1, 1, 1, 1, 1]);
    expect(sctp.rto).toBeGreaterThan(0.6);
  }, 60_000);

  it('werift as shipped (the bench anchor, the patches undone in memory) starts at 3 s and stays at 1 s however many timeouts', () => {
    const run = (hook: boolean) => {
      const r = spawnSync(process.execPath, [...(hook ? ['--import', path.join(ROOT, 'bench/weriftAsShipped.mjs')] : []), '--input-type=module', '-e', PROBE], {
        cwd: ROOT,
        env: { ...process.env, BENCH_UNDO_PATCH: 'speaker-agent patch: SCTP retransmission' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { initial: number; unacked: number };
    };
    expect(run(false)).toEqual({ initial: 1, unacked: 3 }); // backed off: 0.4 -> 0.8 -> 1.6 -> 3 in 3.5 s
    expect(run(true)).toEqual({ initial: 3, unacked: 1 }); // 1: SCTP's minimum once the round trip is measured
  });
});
