// Regression (scripts/patch-dependencies.mjs, "a failed TURN allocation closes its socket"): werift left the socket
// of a TURN allocation that failed open, one per call attempt, until the agent ran out of file descriptors. Here a
// TURN server that never answers (a bound UDP socket that reads and says nothing; no TCP listener for werift's TCP
// fallback) and real werift peer connections, as the agent makes them when a session names a TURN server; the
// process's open sockets are counted before and after (/proc/self/fd).
import { createSocket, type Socket } from 'node:dgram';
import { readdirSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RTCPeerConnection } from 'werift';
import { WebrtcTransport } from '../../../src/agent/transport/webrtcTransport.js';

function openSockets(): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

let silent: Socket;
let port: number;
beforeAll(async () => {
  silent = createSocket('udp4');
  silent.on('message', () => undefined); // hears the allocation requests, never answers
  await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r));
  port = silent.address().port;
});
afterAll(() => silent.close());

/** One call attempt's ICE gathering with the TURN server in its session, then the connection closed. */
async function attempt(): Promise<void> {
  const pc = new RTCPeerConnection({ iceServers: [{ urls: `turn:127.0.0.1:${port}`, username: 'user', credential: 'pass' }], bundlePolicy: 'max-bundle' });
  pc.addTransceiver('audio', { direction: 'sendrecv' });
  // werift's setLocalDescription waits for the gathering, TURN's too: 7 tries over ~6.3 s, then TCP (refused)
  await pc.setLocalDescription(await pc.createOffer());
  await pc.close();
}

describe('TURN server that does not answer', () => {
  it('regression: each call attempt leaked the failed allocation\'s UDP socket; now none is left', async () => {
    await attempt(); // werift's lazily made sockets of a first connection are not the leak
    const before = openSockets();
    await Promise.all([attempt(), attempt(), attempt()]);
    await new Promise((r) => setTimeout(r, 200)); // closes complete on the next turns of the loop
    expect(openSockets() - before).toBe(0);
  }, 40_000);

  it('regression: the transport\'s connect waited the whole TURN attempt out, past its abort (connect timeout, SIGTERM)', async () => {
    const transport = new WebrtcTransport();
    const ctl = new AbortController();
    const t0 = performance.now();
    setTimeout(() => ctl.abort(new Error('connect timeout')), 1000);
    const err = await transport
      .connect({
        session: { id: 'sess_turn', iceServers: [{ urls: [`turn:127.0.0.1:${port}`], username: 'user', credential: 'pass' }] },
        exchangeSdp: () => Promise.reject(new Error('not reached')),
        handlers: { onAudio: () => undefined, onMessage: () => undefined, onActivity: () => undefined, onClosed: () => undefined } as never,
        signal: ctl.signal,
      })
      .catch((e: unknown) => e);
    const tookMs = performance.now() - t0;
    expect(err).toMatchObject({ code: 'call_failed', message: 'connect aborted' });
    expect(tookMs).toBeLessThan(3000); // the TURN attempt alone takes ~6.3 s
    await transport.close();
  }, 20_000);
});
