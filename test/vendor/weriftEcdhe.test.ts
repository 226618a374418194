// Regression (a profile of the companion answering calls, from the VM check's watchdog kills): werift's DTLS key
// exchange ran in JavaScript (tweetnacl for X25519, @noble/curves for P-256), unoptimised at every handshake, and
// held the event loop for tens of milliseconds per call here, seconds in an emulated machine. The checked patch
// in scripts/patch-dependencies.mjs ("DTLS key exchange (ECDHE) in OpenSSL") does it with node's crypto. Here:
// real werift peers over loopback agree on each curve, their keys are the ones the JavaScript libraries would
// accept and derive the same secret from, and headless Chromium (BoringSSL, the other end of most calls' DTLS)
// completes the handshake with werift on each curve.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { p256 } from '@noble/curves/p256';
import nacl from 'tweetnacl';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { NamedCurveAlgorithmList, RTCPeerConnection } from 'werift';
import { dtlsKeys } from '../../src/common/webrtc/dtlsCertificate.js';
import { launchChromium, type ChromiumSession } from '../support/chromiumDriver.js';
import { waitUntil } from '../support/audioCapture.js';
import { dataChannelPair, type DataChannelPair } from '../support/dataChannelPair.js';
import { speechClip } from '../support/speechWav.js';

const X25519 = 29;
const P256 = 23;
const original = [...NamedCurveAlgorithmList];

/** The curves werift offers (as a DTLS client) and accepts (as a server), in order: its exported list, in place. */
function offerOnly(...curves: number[]): void {
  (NamedCurveAlgorithmList as number[]).splice(0, NamedCurveAlgorithmList.length, ...curves);
}

interface Cipher {
  namedCurve: number;
  localKeyPair: { privateKey: Buffer; publicKey: Buffer; curve: number };
  remoteKeyPair: { publicKey: Buffer };
}
const cipherOf = (pc: RTCPeerConnection) => (pc.dtlsTransports[0] as unknown as { dtls: { cipher: Cipher } }).dtls.cipher;

let page: Server | undefined;
/** A blank page on a loopback HTTP server (made once). */
async function blankPage(): Promise<string> {
  page ??= createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>dtls</title>'));
  if (!page.listening) await new Promise<void>((r) => page!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
}
afterAll(() => page?.close());

let pair: DataChannelPair | undefined;
let browser: ChromiumSession | undefined;
let werift: RTCPeerConnection | undefined;
afterEach(async () => {
  offerOnly(...original);
  await pair?.close();
  await werift?.close();
  await browser?.close();
  [pair, werift, browser] = [undefined, undefined, undefined];
});

describe('werift DTLS key exchange in OpenSSL (patched)', () => {
  it('X25519 (what werift offers first): the peers agree, and their keys are X25519 keys as tweetnacl made them', async () => {
    pair = await dataChannelPair();
    pair.channel.send('over X25519');
    await waitUntil(() => pair!.received.includes('over X25519'), 5_000, 'a message over the DTLS session');
    const client = cipherOf(pair.sender);
    const server = cipherOf(pair.receiver);
    expect(client.localKeyPair.curve).toBe(X25519);
    for (const side of [client, server]) {
      expect(side.localKeyPair.privateKey).toHaveLength(32);
      expect(Buffer.from(nacl.scalarMult.base(side.localKeyPair.privateKey))).toEqual(side.localKeyPair.publicKey);
    }
    expect(client.remoteKeyPair.publicKey).toEqual(server.localKeyPair.publicKey);
    // the secret tweetnacl derives from these keys is the same from either side, and not a degenerate one
    const secret = Buffer.from(nacl.scalarMult(client.localKeyPair.privateKey, client.remoteKeyPair.publicKey));
    expect(Buffer.from(nacl.scalarMult(server.localKeyPair.privateKey, server.remoteKeyPair.publicKey))).toEqual(secret);
    expect(secret.equals(Buffer.alloc(32))).toBe(false);
  });

  it('P-256: the peers agree, and their keys are P-256 points as @noble/curves made them', async () => {
    offerOnly(P256);
    pair = await dataChannelPair();
    pair.channel.send('over P-256');
    await waitUntil(() => pair!.received.includes('over P-256'), 5_000, 'a message over the DTLS session');
    const client = cipherOf(pair.sender);
    const server = cipherOf(pair.receiver);
    expect(client.localKeyPair.curve).toBe(P256);
    for (const side of [client, server]) {
      expect(side.localKeyPair.publicKey).toHaveLength(65); // uncompressed, as werift sent it before
      expect(Buffer.from(p256.getPublicKey(side.localKeyPair.privateKey, false))).toEqual(side.localKeyPair.publicKey);
    }
    const secret = Buffer.from(p256.getSharedSecret(client.localKeyPair.privateKey, client.remoteKeyPair.publicKey));
    expect(Buffer.from(p256.getSharedSecret(server.localKeyPair.privateKey, server.remoteKeyPair.publicKey))).toEqual(secret);
  });

  // Chromium's DTLS answers a ClientHello offering only X25519 with a handshake_failure alert (so does werift as
  // shipped): with Chromium the curve is P-256, and X25519 is checked against werift as shipped below
  for (const [name, curve] of [['P-256', P256]] as const) {
    it(`headless Chromium (BoringSSL) completes the handshake with werift on ${name}`, async () => {
      // werift answers (the DTLS server, as the companion is) and accepts only this curve
      offerOnly(curve);
      browser = await launchChromium({ fakeMicrophoneWav: speechClip('hello', { padAfterMs: 500 }).file });
      await browser.page.goto(await blankPage()); // an http origin: about:blank hides its host candidates behind mDNS names
      // the certificate the agent and the companion present (werift's own default is made per connection)
      werift = new RTCPeerConnection({ iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'], iceUseIpv6: false, dtls: { keys: dtlsKeys() } });
      const got: string[] = [];
      werift.onDataChannel.subscribe((ch) => ch.onMessage.subscribe((m) => got.push(m.toString())));
      // the page's own code as text: vitest rewrites a function's references to this file's imports (werift's
      // RTCPeerConnection), and the browser has its own
      const offer = (await browser.page.evaluate(`(async () => {
        const pc = new RTCPeerConnection();
        window.pc = pc;
        const dc = pc.createDataChannel('oai-events');
        dc.onopen = () => dc.send('hello from BoringSSL');
        await pc.setLocalDescription(await pc.createOffer());
        await new Promise((r) => (pc.iceGatheringState === 'complete' ? r() : pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && r())));
        return pc.localDescription.sdp;
      })()`)) as string;
      await werift.setRemoteDescription({ type: 'offer', sdp: offer });
      await werift.setLocalDescription(await werift.createAnswer());
      await browser.page.evaluate(`window.pc.setRemoteDescription({ type: 'answer', sdp: ${JSON.stringify(werift.localDescription!.sdp)} })`);
      await waitUntil(() => got.includes('hello from BoringSSL'), 15_000, 'the browser\'s message over the DTLS session');
      expect(cipherOf(werift).localKeyPair.curve).toBe(curve);
    }, 60_000);
  }

  for (const [name, curve] of [['X25519', X25519], ['P-256', P256]] as const) {
    it(`werift as shipped (tweetnacl, @noble/curves) in another process completes the handshake with werift patched on ${name}`, async () => {
      offerOnly(curve);
      const shipped = spawn(process.execPath, ['--import', path.join(ROOT, 'bench/weriftAsShipped.mjs'), '--input-type=module', '-e', SHIPPED_PEER, String(curve)], {
        env: { ...process.env, BENCH_UNDO_PATCH: 'speaker-agent patch: ECDHE in OpenSSL' },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      try {
        const lines = createInterface({ input: shipped.stdout! })[Symbol.asyncIterator]();
        const offer = JSON.parse((await lines.next()).value as string) as { sdp: string };
        werift = new RTCPeerConnection({ iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'], iceUseIpv6: false });
        const got: string[] = [];
        werift.onDataChannel.subscribe((ch) => ch.onMessage.subscribe((m) => got.push(m.toString())));
        await werift.setRemoteDescription({ type: 'offer', sdp: offer.sdp });
        await werift.setLocalDescription(await werift.createAnswer());
        shipped.stdin!.write(`${JSON.stringify(werift.localDescription!.sdp)}\n`);
        await waitUntil(() => got.includes('hello from werift as shipped'), 15_000, 'the message over the DTLS session');
        // the other side made its keys and secret in JavaScript: no call into node's ECDHE
        expect(JSON.parse((await lines.next()).value as string)).toEqual({ curve, nativeCalls: 0 });
        expect(cipherOf(werift).localKeyPair.curve).toBe(curve);
      } finally {
        shipped.kill();
      }
    }, 60_000);
  }
});

const ROOT = path.resolve(import.meta.dirname, '../..');
/** The offering peer, werift with the ECDHE patch undone in memory (bench/weriftAsShipped.mjs): prints its offer,
 *  reads the answer, sends a message once the channel opens, prints the curve its key pair is on and how often it
 *  called node's ECDHE. */
const SHIPPED_PEER = `
// node's ECDHE entry points counted (the patch's; werift as shipped calls none of them)
const crypto = (await import('node:crypto')).default;
let nativeCalls = 0;
for (const f of ['generateKeyPairSync', 'createECDH', 'diffieHellman']) {
  const original = crypto[f];
  crypto[f] = (...args) => (nativeCalls++, original(...args));
}
(await import('node:module')).syncBuiltinESMExports();
const werift = await import('werift');
const curve = Number(process.argv.at(-1));
werift.NamedCurveAlgorithmList.splice(0, werift.NamedCurveAlgorithmList.length, curve);
const pc = new werift.RTCPeerConnection({ iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'], iceUseIpv6: false });
const dc = pc.createDataChannel('oai-events');
dc.stateChanged.subscribe((s) => {
  if (s !== 'open') return;
  dc.send('hello from werift as shipped');
  console.log(JSON.stringify({ curve: pc.dtlsTransports[0].dtls.cipher.localKeyPair.curve, nativeCalls }));
});
await pc.setLocalDescription(await pc.createOffer());
console.log(JSON.stringify({ sdp: pc.localDescription.sdp }));
const { createInterface } = await import('node:readline');
for await (const line of createInterface({ input: process.stdin })) await pc.setRemoteDescription({ type: 'answer', sdp: JSON.parse(line) });
`;
