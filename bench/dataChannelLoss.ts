// One process: an echo exchange over a real werift data channel (two peers in this process, loopback) with a share
// of the packets lost each way (werift's own debug option), as on a lossy Wi-Fi link or a loopback whose socket
// buffers overflow. N messages are sent paced (20 per 10 ms), the far end answers each; prints one JSON line: the
// time until every answer came (or when answers stopped for 20 s), the retransmission timeouts of both ends, and
// the bytes each end still counts in flight with nothing out. Run by bench/datachannel-loss.bench.ts, with werift
// as installed (patched) and, under bench/weriftAsShipped.mjs, as shipped.
import type { RTCDataChannel } from 'werift';
import { countTimeouts, dataChannelPair } from '../test/support/dataChannelPair.js';

const N = Number(process.argv[2] ?? 10_000);
const lossPercent = Number(process.argv[3] ?? 20);
const STALL_MS = 20_000;

const pair = await dataChannelPair();
const far = Object.values((pair.receiver.sctpTransport as unknown as { dataChannels: Record<string, RTCDataChannel> }).dataChannels)[0];
far.onMessage.subscribe((m) => far.send(`answer ${m.toString().slice(0, 400)}${'x'.repeat(200)}`));
let answers = 0;
pair.channel.onMessage.subscribe(() => answers++);
const ends = [pair.sctp, pair.receiverSctp];
const timeouts = ends.map(countTimeouts);
// werift keeps a packet when Math.random() < inboundPacketLoss / 100: the option is the share let through
for (const pc of [pair.sender, pair.receiver]) pc.config.debug = { inboundPacketLoss: 100 - lossPercent };
const t0 = performance.now();
for (let i = 0; i < N; i++) {
  pair.channel.send(`${i}:${'m'.repeat(i % 900)}`);
  if (i % 20 === 19) await new Promise((r) => setTimeout(r, 10));
}
let seen = -1;
let seenAt = performance.now();
let doneAt = performance.now();
while (answers < N && performance.now() - seenAt < STALL_MS) {
  await new Promise((r) => setTimeout(r, 100));
  if (answers !== seen) [seen, seenAt, doneAt] = [answers, performance.now(), performance.now()];
}
if (answers === N) doneAt = performance.now();
const leftInFlight = ends.map((s) => (s.sentQueue.length === 0 ? s.flightSize : 0));
process.stdout.write(`${JSON.stringify({ ms: Math.round(doneAt - t0), answers, timeouts: timeouts[0].n + timeouts[1].n, leftInFlight })}\n`);
process.exit(0);
