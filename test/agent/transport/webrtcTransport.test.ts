// The real transport (werift) against the test peer (real HTTP + werift answerer) on loopback.
import opus from '@discordjs/opus';

const { OpusEncoder } = opus;
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../../src/agent/serviceClient.js';
import { toWeriftIceServers, WebrtcTransport } from '../../../src/agent/transport/webrtcTransport.js';
import type { InboundRtp } from '../../../src/agent/transport/transportLayer.js';
import type { AgentError } from '../../../src/agent/errors.js';
import { TestAssistantPeer } from '../../support/testAssistantPeer.js';

const KEY = 'ws-test-key';
let peer: TestAssistantPeer | undefined;
let transport: WebrtcTransport | undefined;

afterEach(async () => {
  await transport?.close();
  await peer?.stop();
  peer = undefined;
  transport = undefined;
});

function client(url: string) {
  return new ServiceClient({ baseUrl: url, credentials: { workspaceKey: KEY, clientId: randomUUID(), clientSecret: 's'.repeat(43) } });
}

describe('WebrtcTransport', () => {
  it('maps the session ICE servers exactly, STUN and TURN with credentials, and never adds a default', () => {
    expect(toWeriftIceServers([])).toEqual([]);
    expect(
      toWeriftIceServers([
        { urls: ['stun:stun.example.org:3478'], username: '', credential: '' },
        { urls: ['turn:turn.example.org:3478?transport=udp', 'turns:turn.example.org:5349'], username: 'u1', credential: 'c1' },
      ]),
    ).toEqual([
      { urls: ['stun:stun.example.org:3478'] },
      { urls: ['turn:turn.example.org:3478?transport=udp', 'turns:turn.example.org:5349'], username: 'u1', credential: 'c1' },
    ]);
  });

  it('connects to the peer, exchanges events and Opus audio both ways, and reports the peer closing', async () => {
    peer = new TestAssistantPeer({ workspaceKey: KEY });
    const peerEvents: string[] = [];
    peer.onEvent = (raw) => peerEvents.push(raw);
    await peer.start();
    const c = client(peer.url);
    const session = await c.createSession();
    expect(session.iceServers).toEqual([]);

    transport = new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] });
    const messages: string[] = [];
    const audio: InboundRtp[] = [];
    let closed: AgentError | undefined;
    await transport.connect({
      session,
      exchangeSdp: (sdp) => c.exchangeSdp(sdp),
      handlers: {
        onMessage: (d) => messages.push(d.toString()),
        onAudio: (p) => audio.push(p),
        onActivity: () => undefined,
        onClosed: (r) => (closed = r),
      },
    });
    // Exactly the session's ICE servers: no Google STUN default.
    expect(transport.peerConnection!.getConfiguration().iceServers).toEqual([]);

    // device -> peer: an event and 25 Opus frames
    expect(transport.send({ type: 'response.create' })).toBe(true);
    const enc = new OpusEncoder(48_000, 1);
    const frame = enc.encode(Buffer.alloc(1920));
    for (let i = 0; i < 25; i++) transport.sendAudio(frame, 960);
    // peer -> device: an event; audio flows continuously from the peer
    await until(() => peer!.activeCalls.length === 1 && peer!.activeCalls[0].dc?.readyState === 'open');
    expect(peer.sendEvent({ type: 'response.created', response: { id: 'r1' } })).toBe(true);
    await until(() => messages.length > 0 && audio.length > 10 && peerEvents.length > 0 && peer!.latestCall!.packetsIn >= 25);
    expect(JSON.parse(peerEvents[0])).toEqual({ type: 'response.create' });
    expect(JSON.parse(messages[0]).type).toBe('response.created');
    expect(audio[0].payload.length).toBeGreaterThan(0);
    expect(audio[1].sequenceNumber).toBe((audio[0].sequenceNumber + 1) & 0xffff);
    expect(closed).toBeUndefined();

    await peer.stop();
    await until(() => closed !== undefined, 10_000);
    expect(closed!.code).toBe('call_failed');
  });

  // The peer's RTCP receiver reports say how much of the device's audio it lost: the uplink sizes its FEC by
  // them (uplinkLossPolicy.ts). A real werift peer, dropping a share of what arrives.
  for (const [lossPercent, check] of [
    [0, (r: number[]) => expect(Math.max(...r)).toBeLessThan(0.02)],
    [20, (r: number[]) => expect(r.filter((f) => f >= 0.05).length).toBeGreaterThanOrEqual(2)],
  ] as const) {
    it(`reports the share of its audio the peer says it lost (peer dropping ${lossPercent} %)`, async () => {
      peer = new TestAssistantPeer({ workspaceKey: KEY, inboundLossPercent: lossPercent });
      await peer.start();
      const c = client(peer.url);
      transport = new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] });
      const reports: number[] = [];
      await transport.connect({
        session: await c.createSession(),
        exchangeSdp: (sdp) => c.exchangeSdp(sdp),
        handlers: { onMessage() {}, onAudio() {}, onActivity() {}, onClosed() {}, onUplinkLoss: (f) => reports.push(f) },
      });
      const frame = new OpusEncoder(48_000, 1).encode(Buffer.alloc(1920));
      const t = transport;
      const sender = setInterval(() => t.sendAudio(frame, 960), 20);
      try {
        await until(() => reports.length >= 4, 15_000); // one every 0.5-1.5 s
      } finally {
        clearInterval(sender);
      }
      for (const f of reports) expect(f >= 0 && f <= 1).toBe(true);
      check(reports);
    }, 30_000);
  }

  it('rejects with the server error when the SDP exchange is refused', async () => {
    peer = new TestAssistantPeer({ workspaceKey: KEY, enrollment: 'closed' });
    await peer.start();
    transport = new WebrtcTransport({ additionalHostAddresses: ['127.0.0.1'] });
    const c = client(peer.url);
    await expect(
      transport.connect({
        session: { id: 'x', iceServers: [] },
        exchangeSdp: (sdp) => c.exchangeSdp(sdp),
        handlers: { onMessage() {}, onAudio() {}, onActivity() {}, onClosed() {} },
      }),
    ).rejects.toMatchObject({ code: 'auth_rejected', status: 404, serverCode: 'client_not_found' });
  });
});

async function until(pred: () => boolean, timeoutMs = 8_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
