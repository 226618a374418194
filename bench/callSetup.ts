// One process: N calls of the agent's WebRTC transport to the test peer (test/support/testAssistantPeer.ts,
// werift), the peer dropping a share of what the device sends from the first packet on, the SCTP handshake
// included. Prints one JSON line: each call's time from the offer to the open data channel (ms), and how many
// were not up within the agent's 15 s connect timeout. Run by bench/call-setup.bench.ts, with werift as installed
// (patched) and, under bench/weriftAsShipped.mjs, as shipped.
import { randomUUID } from 'node:crypto';
import { ServiceClient } from '../src/agent/serviceClient.js';
import { WebrtcTransport } from '../src/agent/transport/webrtcTransport.js';
import { TestAssistantPeer } from '../test/support/testAssistantPeer.js';

const KEY = 'ws-bench-setup-key-0123456789';
const calls = Number(process.argv[2] ?? 30);
const lossPercent = Number(process.argv[3] ?? 20);
const ms: number[] = [];
let failed = 0;
for (let i = 0; i < calls; i++) {
  const peer = new TestAssistantPeer({ workspaceKey: KEY, inboundLossPercent: lossPercent, inboundLossFrom: 'first packet' });
  await peer.start();
  const client = new ServiceClient({ baseUrl: peer.url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: 's'.repeat(43) } });
  const transport = new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] });
  const session = await client.createSession();
  const t0 = performance.now();
  try {
    // the agent's own connect timeout (settings call.connectTimeoutMs): a call not up by then counts as failed
    const signal = AbortSignal.timeout(15_000);
    await transport.connect({ session, signal, exchangeSdp: (sdp) => client.exchangeSdp(sdp), handlers: { onMessage() {}, onAudio() {}, onActivity() {}, onClosed() {} } });
    ms.push(Math.round(performance.now() - t0));
  } catch {
    failed++;
  }
  await transport.close();
  await peer.stop();
}
process.stdout.write(`${JSON.stringify({ ms, failed })}\n`);
process.exit(0);
