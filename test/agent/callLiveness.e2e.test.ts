// Issue 17: a dead server is noticed in about a second and a half, a quiet one keeps its call. A real Call
// (WebrtcTransport, ServiceClient over HTTP) against the TEST PEER in its own process, killed, frozen, stopped or
// simply quiet. The liveness watchdog asks the peer with an ICE consent check (RFC 7675) when its audio stops or
// after a quiet spell; the peer's ICE agent answers for as long as it lives.
import { afterEach, describe, expect, it } from 'vitest';
import { Call } from '../../src/agent/call.js';
import type { AgentError } from '../../src/agent/errors.js';
import { realCall } from '../support/realCall.js';
import { TestAssistantPeerProcess } from '../support/testAssistantPeer.js';

const KEY = 'ws-liveness-key-0123456789';
let peer: TestAssistantPeerProcess | undefined;
let call: Call | undefined;

afterEach(async () => {
  await call?.close();
  await peer?.kill();
  call = undefined;
  peer = undefined;
});

async function connectedCall(o: { sendAudio: boolean; livenessTimeoutMs?: number }): Promise<{ call: Call; peer: TestAssistantPeerProcess }> {
  peer = new TestAssistantPeerProcess({ workspaceKey: KEY, sendAudio: o.sendAudio });
  await peer.start();
  call = realCall({ url: peer.url, workspaceKey: KEY, livenessTimeoutMs: o.livenessTimeoutMs });
  await call.connect();
  return { call, peer };
}

/** The reason the call ended, or 'still up' after ms. */
function endedWithin(c: Call, ms: number): Promise<AgentError | 'still up'> {
  return Promise.race([c.ended, new Promise<'still up'>((r) => setTimeout(() => r('still up'), ms))]);
}

describe('Call liveness against a real peer (consent checks)', () => {
  it('peer killed (SIGKILL) while its audio flows: the call ends on an unanswered consent check, not the 5 s silence rule', async () => {
    const { call: c, peer: p } = await connectedCall({ sendAudio: true });
    await new Promise((r) => setTimeout(r, 1_000)); // audio flowing
    await p.kill();
    const reason = await endedWithin(c, 8_000);
    expect(reason).not.toBe('still up');
    expect((reason as AgentError).message).toMatch(/no answer to a consent check after its audio stopped/);
    expect(c.liveness.probes).toBe(1);
    expect(c.liveness.answered).toBe(0);
  }, 30_000);

  it('peer frozen (SIGSTOP: no close, nothing at all): the same', async () => {
    const { call: c, peer: p } = await connectedCall({ sendAudio: true });
    await new Promise((r) => setTimeout(r, 1_000));
    p.freeze();
    const reason = await endedWithin(c, 8_000);
    expect((reason as AgentError).message).toMatch(/no answer to a consent check after its audio stopped/);
  }, 30_000);

  it('a peer quiet for 30 s (no RTP, no RTCP: nothing is sent either way) keeps its call: every consent check is answered', async () => {
    const { call: c } = await connectedCall({ sendAudio: false });
    expect(await endedWithin(c, 30_000)).toBe('still up');
    // quiet checks every livenessTimeoutMs / 2 = 2.5 s
    expect(c.liveness.probes).toBeGreaterThanOrEqual(10);
    expect(c.liveness.answered).toBe(c.liveness.probes);
  }, 60_000);

  it('a quiet peer that is then killed is declared dead after the next quiet spell, with a consent check', async () => {
    const { call: c, peer: p } = await connectedCall({ sendAudio: false, livenessTimeoutMs: 2_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    await p.kill();
    const reason = await endedWithin(c, 8_000);
    expect((reason as AgentError).message).toMatch(/no answer to a consent check after a quiet spell/);
  }, 30_000);
});
