// One process: how long a message lost on a quiet data channel takes to arrive. Two real werift peers over loopback
// (test/support/dataChannelPair.ts); a few messages first, so werift has measured the round trip; then, ROUNDS times,
// one message that arrives, a second of quiet (everything acknowledged) and one message whose first packet the
// receiver loses. Nothing sent after it can report it missing, so only the sender's retransmission timeout brings
// it. Prints one JSON line: each lost message's send-to-arrival time (ms) and werift's timeout at the end (s). Run
// by bench/datachannel-loss.bench.ts, with werift as installed (patched) and, under bench/weriftAsShipped.mjs, as
// shipped.
import { dataChannelPair } from '../test/support/dataChannelPair.js';

const ROUNDS = Number(process.argv[2] ?? 10);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const pair = await dataChannelPair();
const { channel, received, sctp, receiverSctp } = pair;
for (let i = 0; i < 10; i++) {
  channel.send(`warm-up ${i}`);
  await sleep(50);
}
let loseNext = false;
const handle = receiverSctp.handleData.bind(receiverSctp);
receiverSctp.handleData = (packet: Buffer) => {
  if (loseNext && packet.length > 12 && packet[12] === 0) {
    loseNext = false; // the first DATA packet after the send: the message's first transmission
    return undefined;
  }
  return handle(packet);
};
const ms: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  // one message that arrives at its first sending: a healthy channel, whose round trip werift has measured again
  // since the last loss (after a timeout werift keeps the backed-off timeout until it has)
  const before = received.length;
  channel.send(`arrives ${r}`);
  while (received.length === before || sctp.sentQueue.length !== 0) await sleep(1);
  await sleep(1000);
  if (sctp.sentQueue.length !== 0) throw new Error('the channel is not quiet: a message is still unacknowledged');
  const n = received.length;
  loseNext = true;
  const t0 = performance.now();
  channel.send(`lost ${r}`);
  while (received.length === n) await sleep(1);
  ms.push(Math.round(performance.now() - t0));
}
process.stdout.write(`${JSON.stringify({ ms, rto: sctp.rto })}\n`);
await pair.close();
process.exit(0);
