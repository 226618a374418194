// Regression (CI's run of da66f70: a call on a lossy uplink not up within 20 s): werift started SCTP's
// retransmission timeout at 3 s, and resent a lost handshake packet after 3 s each time. With a fifth of the uplink
// lost a call took 2.4-3.0 s on average to connect, up to 12.2 s (bench call-setup). The checked patch in
// scripts/patch-dependencies.mjs ("SCTP retransmission") start at 1 s, as WebRTC's own SCTP resends its
// handshake, and (1 Dec) let the timeout settle at 0.4 s once the round trip is measured, dcsctp's floor, where werift
// kept SCTP's 1 s: on the agent's quiet channel a lost message has nothing after it to report it missing, and came a
// second late. No back-off: a message is resent at every timeout, so a Wi-Fi blip does not hold it long. Real werift
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

  it('regression: once the round trip is measured the timeout settles at 0.4 s, not 1 s; a message never acknowledged is resent at every timeout, without backing off, and arrives once the link is back', async () => {
    pair = await dataChannelPair();
    const { channel, received, sctp, receiver } = pair;
    channel.send('first'); // its SACK is the first round trip measured
    await waitUntil(() => received.length === 1 && sctp.sentQueue.length === 0, 5_000, 'the first message and its SACK');
    expect(sctp.rto).toBe(0.4); // the loopback round trip is far under the 0.4 s floor
    const timeouts = countTimeouts(sctp);
    receiver.config.debug = DROP_ALL;
    channel.send('held');
    await sleep(3500); // expiries at 0.4, 0.8, ... 3.2 s: no back-off
    expect(sctp.rto).toBe(0.4);
    expect(timeouts.n).toBeGreaterThanOrEqual(7);
    expect(received).not.toContain('held');
    receiver.config.debug = {};
    await waitUntil(() => received.includes('held'), 5_000, 'the message to be resent and arrive');
    channel.send('after');
    await waitUntil(() => received.includes('after'), 5_000, 'the next message');
    expect(received).toEqual(['first', 'held', 'after']);
  });

  it('werift as shipped (the bench anchor, the patches undone in memory) starts at 3 s and settles at 1 s', () => {
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
    expect(run(false)).toEqual({ initial: 1, unacked: 0.4 });
    expect(run(true)).toEqual({ initial: 3, unacked: 1 }); // 1: SCTP's minimum once the round trip is measured
  });
});
