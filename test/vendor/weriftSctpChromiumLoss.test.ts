// The patched SCTP association (scripts/patch-dependencies.mjs: "SCTP counts a message in flight once", "SCTP takes
// received messages in serial order") against the other end of most calls: headless Chromium, whose SCTP is
// libwebrtc's dcsctp, over a link that loses a fifth of the packets each way. The patches were checked between two
// werift peers; here werift's loss recovery (timeouts, fast retransmits, gap reports) meets another implementation's:
// every message of both arrives once and in order, werift's sequence numbers cross the wrap at 2^32 with Chromium as
// the receiver, and nothing is left in flight on either side afterwards. The loss is made at werift's association
// (both directions, a seeded choice), so it also drops Chromium's acknowledgements and werift's own.
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RTCPeerConnection, type RTCDataChannel } from 'werift';
import { dtlsKeys } from '../../src/common/webrtc/dtlsCertificate.js';
import { waitUntil } from '../support/audioCapture.js';
import { launchChromium, type ChromiumSession } from '../support/chromiumDriver.js';
import { loseAtRandom, setInitialTsn, type SctpInternals } from '../support/dataChannelPair.js';
import { speechClip } from '../support/speechWav.js';

const MESSAGES = 400;
/** From empty to a few SCTP chunks (fragmented on both sides: werift's chunks carry at most 1,200 bytes). */
const message = (from: string, i: number) => `${from} ${i} ${'x'.repeat((i * 337) % 3000)}`;
const expected = (from: string) => [...Array(MESSAGES).keys()].map((i) => message(from, i));

let browser: ChromiumSession | undefined;
let werift: RTCPeerConnection | undefined;
let page: Server | undefined;
afterEach(async () => {
  await werift?.close();
  await browser?.close();
  page?.close();
  [werift, browser, page] = [undefined, undefined, undefined];
});

describe('werift SCTP (patched) against Chromium over a lossy link', () => {
  it('400 messages each way with a fifth of the packets lost each way: all arrive in order, werift crosses the TSN wrap, nothing is left in flight', async () => {
    page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>sctp</title>'));
    await new Promise<void>((r) => page!.listen(0, '127.0.0.1', r));
    browser = await launchChromium({ fakeMicrophoneWav: speechClip('hello', { padAfterMs: 500 }).file });
    // an http origin: about:blank hides its host candidates behind mDNS names
    await browser.page.goto(`http://127.0.0.1:${(page.address() as AddressInfo).port}/`);
    werift = new RTCPeerConnection({ iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'], iceUseIpv6: false, dtls: { keys: dtlsKeys() } });
    const got: string[] = [];
    let channel: RTCDataChannel | undefined;
    werift.onDataChannel.subscribe((ch) => {
      channel = ch;
      ch.onMessage.subscribe((m) => got.push(m.toString()));
    });
    // the page's code as text: vitest would rewrite a function's reference to werift's RTCPeerConnection
    const offer = (await browser.page.evaluate(`(async () => {
      const pc = new RTCPeerConnection();
      window.pc = pc;
      window.got = [];
      const dc = pc.createDataChannel('oai-events');
      window.dc = dc;
      dc.onmessage = (e) => window.got.push(e.data);
      await pc.setLocalDescription(await pc.createOffer());
      await new Promise((r) => (pc.iceGatheringState === 'complete' ? r() : pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && r())));
      return pc.localDescription.sdp;
    })()`)) as string;
    await werift.setRemoteDescription({ type: 'offer', sdp: offer });
    await werift.setLocalDescription(await werift.createAnswer());
    // werift's messages start 100 before the wrap; Chromium's sequence numbers are its own (random)
    const initialTsn = 2 ** 32 - 100;
    setInitialTsn(werift, initialTsn);
    await browser.page.evaluate(`window.pc.setRemoteDescription({ type: 'answer', sdp: ${JSON.stringify(werift.localDescription!.sdp)} })`);
    await waitUntil(() => channel?.readyState === 'open', 15_000, 'the data channel to open');
    await browser.page.waitForFunction(`window.dc.readyState === 'open'`, undefined, { timeout: 15_000 });

    const sctp = (werift.sctpTransport as unknown as { sctp: SctpInternals & { localTsn: number; lastReceivedTsn: number } }).sctp;
    expect(sctp.localTsn).toBe(initialTsn + 1); // nothing sent yet but the acknowledgement of Chromium's channel open
    const link = loseAtRandom(sctp, 0.2, 18);
    await browser.page.evaluate(`{
      const message = ${message.toString()};
      for (let i = 0; i < ${MESSAGES}; i++) window.dc.send(message('from Chromium', i));
    }`);
    for (let i = 0; i < MESSAGES; i++) channel!.send(message('from werift', i));

    await waitUntil(() => got.length >= MESSAGES, 90_000, "Chromium's messages to arrive");
    await browser.page.waitForFunction(`window.got.length >= ${MESSAGES}`, undefined, { timeout: 90_000, polling: 100 });
    expect(got).toEqual(expected('from Chromium'));
    expect(await browser.page.evaluate('window.got')).toEqual(expected('from werift'));

    // the loss really happened, both ways, in SACKs as well as data
    expect(link.lostIn).toBeGreaterThan(0.1 * link.received);
    expect(link.lostOut).toBeGreaterThan(0.1 * link.sent);
    // werift's sequence numbers went past 2^32 - 1 to the low ones (its messages above, fragments counted)
    expect(sctp.localTsn).toBeGreaterThan(MESSAGES - 100);
    expect(sctp.localTsn).toBeLessThan(2 ** 31);
    // every message werift sent is acknowledged and out of its flight; Chromium has nothing left to send
    await waitUntil(() => sctp.sentQueue.length === 0, 15_000, "werift's messages to be acknowledged");
    expect(sctp.flightSize).toBe(0);
    await browser.page.waitForFunction('window.dc.bufferedAmount === 0', undefined, { timeout: 15_000 });
    link.stop();
    // and the channel still carries a message each way after the loss ends
    channel!.send('after');
    await browser.page.waitForFunction(`window.got.at(-1) === 'after'`, undefined, { timeout: 10_000 });
    await browser.page.evaluate(`window.dc.send('after')`);
    await waitUntil(() => got.at(-1) === 'after', 10_000, "Chromium's message after the loss");
  }, 180_000);
});
