// Regression (from a review): this device's address changed under a call (a new DHCP lease; the link stayed up).
// Its consent checks then went out from the new address and were answered there, while the peer's audio still
// went to the old one: the call stayed "connected" and silent, every probe answered, until the peer gave up, or
// never. Now a consent check answered with another mapped address ends the call, and the next one is set up from
// the new address. A real SpeakerAgent (PortAudio on the virtual card, werift) against the TEST PEER in its own
// process inside a network namespace (test/support/netns.ts), the address really changed with iproute2.
import { afterAll, describe, expect, it } from 'vitest';
import { SpeakerAgent } from '../../src/agent/agent.js';
import { waitUntil } from '../support/audioCapture.js';
import { callAcrossNetNs } from '../support/callAcrossNetNs.js';
import { createNetNs } from '../support/netns.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';

const KEY = 'ws-renumber-key-0123456789';
// Needs root and iproute2 (CI and the developers' machines have both); elsewhere the suite says it did not run.
const ns = createNetNs();
let peer: TestAssistantPeerProcess | undefined;
let agent: SpeakerAgent | undefined;

afterAll(async () => {
  await agent?.stop();
  await peer?.kill();
  ns?.remove();
});

describe.runIf(ns)("this device's address changes under a call (a network namespace, the address replaced)", () => {
  it('the call ends on the first consent check answered at the new address, and a new call follows', async () => {
    agent = (await callAcrossNetNs(ns!, KEY, 'renumber', (c) => ({ peer, agent } = c))).agent;
    const first = agent.snapshot().callId;
    await new Promise((r) => setTimeout(r, 1_500)); // audio flowing

    ns!.renumber();
    await waitUntil(() => agent!.snapshot().callId !== first || agent!.snapshot().state !== 'connected', 8_000, 'the change to be noticed');
    expect(agent.snapshot().lastError?.message).toMatch(/address as the peer sees it moved \(10\.231\.\d+\.1:\d+ -> 10\.231\.\d+\.3:\d+/);
    await waitUntil(() => agent!.snapshot().state === 'connected' && agent!.snapshot().callId !== first, 30_000, 'a new call from the new address');
  }, 90_000);

  // from a review of the change above: a second address becoming the source, the first still on the interface
  // (IPv6 privacy addresses rotating do the same); the peer's audio to the first still arrives, so the call stays
  it('a second address that becomes the source while the first stays keeps the call (only the baseline moves)', async () => {
    await agent?.stop();
    await peer?.kill();
    ns!.remove();
    const fresh = createNetNs()!;
    Object.assign(ns!, fresh);
    agent = (await callAcrossNetNs(fresh, KEY, 'renumber', (c) => ({ peer, agent } = c))).agent;
    const first = agent.snapshot().callId;
    await new Promise((r) => setTimeout(r, 1_000));
    // A consent check asked now (the watchdog asks only when the peer goes quiet, and this one's RTCP keeps
    // coming): the transport is the agent's call's, private to it.
    const transport = (agent as unknown as { call?: { o: { transport: { probe(): Promise<boolean> } } } }).call!.o.transport;
    expect(await transport.probe()).toBe(true); // the baseline: 10.231.x.1
    fresh.addSourceAddress();
    expect(await transport.probe()).toBe(true); // answered at 10.231.x.4, and .1 is still ours
    expect(await transport.probe()).toBe(true);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(agent.snapshot()).toMatchObject({ state: 'connected', callId: first });
  }, 90_000);
});
