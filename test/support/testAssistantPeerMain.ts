// TEST PEER child process entry: runs a TestAssistantPeer and obeys its parent over IPC
// (see TestAssistantPeerProcess in testAssistantPeer.ts).
import { TestAssistantPeer, type TestPeerOptions } from './testAssistantPeer.js';

const opts = JSON.parse(process.argv[2] ?? '{}') as TestPeerOptions;
const peer = new TestAssistantPeer(opts);
const send = (m: unknown) => process.send?.(m);
peer.onEvent = (raw, callId) => send({ t: 'event', raw, callId });
peer.onCall = (callId) => send({ t: 'call', callId });

process.on('message', async (m: { id: number; cmd: string; arg?: unknown }) => {
  let value: unknown;
  switch (m.cmd) {
    case 'sendEvent':
      value = peer.sendEvent(m.arg as string);
      break;
    case 'playTone': {
      const buf = Buffer.from(m.arg as string, 'base64');
      peer.playTone(new Int16Array(buf.buffer, buf.byteOffset, buf.length / 2));
      value = true;
      break;
    }
    case 'lastReceived': {
      const pcm = peer.latestCall?.lastReceived(m.arg as number) ?? new Int16Array(0);
      value = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');
      break;
    }
    case 'stats':
      value = {
        activeCalls: peer.activeCalls.length,
        packetsIn: peer.latestCall?.packetsIn ?? 0,
        packetsOut: peer.latestCall?.packetsOut ?? 0,
        requests: peer.requests.slice(-50),
        minted: [...peer.minted.values()].slice(-20),
      };
      break;
    case 'stop':
      await peer.stop();
      value = true;
      break;
  }
  send({ t: 'reply', id: m.id, value });
});
process.on('SIGTERM', () => void peer.stop().finally(() => process.exit(0)));
process.on('disconnect', () => process.exit(0));

await peer.start();
send({ t: 'ready', port: peer.port });
