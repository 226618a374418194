#!/usr/bin/env node
// Small, checked source patches to installed dependencies (run by `npm ci` as postinstall, and by setup.sh).
//
// Why patches and not forks: each is a few characters in a pinned version (package.json pins werift exactly), for
// something that costs a speaker memory or CPU all day, and each says why. A patch whose original text is not
// found fails the install loudly, so a version bump cannot silently drop one; running twice changes nothing.
// test/scripts/patchDependencies.test.ts checks the installed tree carries every patch.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** @type {Array<{ file: string; why: string; from: string; to: string }>} (`to` never contains `from`: the test
 *  checks no original code is left) */
export const PATCHES = [
  {
    file: 'node_modules/werift/lib/index.mjs', // the ES module build, what import 'werift' loads
    why:
      'ICE host candidates are sorted by interface name with localeCompare, which starts ICU collation and maps ' +
      '~3 MB of locale data into the agent for the rest of its life; interface names are ASCII, a plain ' +
      'comparison orders them the same.',
    from: 'all.sort((a, b) => a.nic.localeCompare(b.nic));',
    to: 'all.sort((a, b) => (a.nic < b.nic ? -1 : a.nic > b.nic ? 1 : 0)); // speaker-agent patch: no ICU collation',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SRTP AES-GCM (what werift negotiates first): werift builds a node crypto cipher per RTP packet, and the key ' +
      'import plus five calls through node\'s JS crypto layer cost about a point of a core in a call. ' +
      'speaker-sys\'s srtpGcm reuses one OpenSSL context per key and makes one call per packet (src/srtp_gcm.c). ' +
      'When that addon could not load, srtpGcm is undefined and werift\'s own code below runs.',
    from: 'import { createCipheriv as createCipheriv3, createDecipheriv as createDecipheriv3 } from "crypto";\n',
    to:
      'import { createCipheriv as createCipheriv3, createDecipheriv as createDecipheriv3 } from "crypto"; // and:\n' +
      'import speakerAgentSys from "speaker-sys"; // speaker-agent patch: native SRTP AES-GCM (scripts/patch-dependencies.mjs)\n' +
      'const speakerAgentGcm = speakerAgentSys.srtpGcm;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SRTP AES-GCM encryption through speaker-sys (see the import patch above).',
    from:
      '    const iv = this.rtpInitializationVector(header, rolloverCounter);\n' +
      '    const cipher = createCipheriv3("aes-128-gcm", this.srtpSessionKey, iv);\n',
    to:
      '    const iv = this.rtpInitializationVector(header, rolloverCounter);\n' +
      '    if (speakerAgentGcm) return speakerAgentGcm.gcmSeal(this.speakerAgentRtpKey ??= speakerAgentGcm.gcmContext(this.srtpSessionKey), iv, hdr, payload); // speaker-agent patch\n' +
      '    const cipher = createCipheriv3("aes-128-gcm", this.srtpSessionKey, iv);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SRTP AES-GCM decryption through speaker-sys; a packet that does not authenticate is the same SrtpAuthenticationError.',
    from:
      '  decryptRtp(cipherText, rolloverCounter, header = parseSrtpRtpHeader(cipherText, this.aeadAuthTagLen)) {\n',
    to:
      '  decryptRtp(cipherText, rolloverCounter, header = parseSrtpRtpHeader(cipherText, this.aeadAuthTagLen)) { // speaker-agent patch\n' +
      '    if (speakerAgentGcm) {\n' +
      '      const dst = speakerAgentGcm.gcmOpen(this.speakerAgentRtpKey ??= speakerAgentGcm.gcmContext(this.srtpSessionKey), this.rtpInitializationVector(header, rolloverCounter), cipherText, header.payloadOffset);\n' +
      '      if (dst === null) throw new SrtpAuthenticationError("Failed to authenticate SRTP packet");\n' +
      '      return [dst, finalizeSrtpRtpHeader(header, dst, "Failed to authenticate SRTP packet")];\n' +
      '    }\n',
  },
  // The patches below are per-packet work in werift's media path that shows in a profile of a steady call
  // (issue #5: about 0.1 point of a core each, and garbage for the collector). Same results, less work.
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'getBit reads bits of a byte by printing it in binary, splitting, padding, joining and parsing the string ' +
      'back (12 times per received RTP packet: its header is parsed twice). For what every caller passes (a ' +
      'byte, a bit range inside it) shifting and masking gives the same number; anything else takes the old path.',
    from: 'function getBit(bits, startIndex, length = 1) {\n  let bin = bits.toString(2).split("");\n',
    to:
      'function getBit(bits, startIndex, length = 1) { // speaker-agent patch: arithmetic for a byte\n' +
      '  if ((bits & 255) === bits && startIndex >= 0 && length >= 1 && startIndex + length <= 8) return (bits >>> (8 - startIndex - length)) & ((1 << length) - 1);\n' +
      '  let bin = bits.toString(2).split("");\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'ntpTime runs for every RTP packet sent and built the timestamp by printing the time as a decimal string ' +
      'and splitting it at the point, so the low 32 bits held the decimal digits of the fraction, not the ' +
      'fraction of a second RFC 3550 puts there (a libwebrtc peer reads our sender reports as real NTP). ' +
      'Arithmetic gives the real NTP timestamp; ntpTimeToEpochMs reads it back the same way.',
    from:
      '  const seconds = now / 1e3;\n' +
      '  const [sec, msec] = seconds.toString().split(".").map(Number);\n' +
      '  const buf = bufferWriter([4, 4], [sec, msec]);\n' +
      '  return buf.readBigUInt64BE();\n' +
      '};\n' +
      'var ntpTimeToEpochMs = (ntp) => {\n',
    to:
      '  const sec = Math.floor(now / 1e3); // speaker-agent patch: RFC 3550 NTP by arithmetic\n' +
      '  const frac = Math.min(4294967295, Math.max(0, Math.floor((now - sec * 1e3) / 1e3 * 4294967296)));\n' +
      '  return BigInt(sec) << 32n | BigInt(frac);\n' +
      '};\n' +
      'var ntpTimeToEpochMs = (ntp) => { // speaker-agent patch: the fraction is 1/2^32 s\n' +
      '  if (typeof ntp === "bigint") return Number(ntp >> 32n) * 1e3 + Number(ntp & 0xffffffffn) / 4294967296 * 1e3 + Date.UTC(1900, 0, 1);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'Every werift event (several per RTP packet) started an async function for its promise subscribers even ' +
      'when there were none: a promise, a catch handler and a microtask per event for nothing.',
    from:
      '    (async () => {\n' +
      '      for (const item of this.event.promiseStack) {\n',
    to:
      '    if (this.event.promiseStack.length > 0) (async () => { // speaker-agent patch: only with subscribers\n' +
      '      for (const item of this.event.promiseStack) {\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'Each datagram sent to an IP address went through dns.lookup (which checks the address with two regular ' +
      'expressions and defers to the next tick) before reaching the socket. Once the socket is bound, a lookup ' +
      'that answers an IP literal at once skips that; host names, and the bind itself, still go to dns.lookup.',
    from: '    this.socket = createSocket2(socketType);\n',
    to:
      '    this.socket = createSocket2({ type: socketType, lookup: (host, options, callback) => speakerAgentLookup(this.speakerAgentBound, host, options, callback) }); // speaker-agent patch\n' +
      '    this.socket.once("listening", () => { this.speakerAgentBound = true; }); // bind\'s own lookup must stay asynchronous\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'The lookup for the patch above, beside the UDP transport it serves.',
    from: 'var log = debug("werift-ice:packages/ice/src/transport.ts");\n',
    to:
      'var log = debug("werift-ice:packages/ice/src/transport.ts"); // and, speaker-agent patch:\n' +
      'import { lookup as speakerAgentDnsLookup } from "node:dns";\n' +
      'var speakerAgentLastIp = ["", 0];\n' +
      'function speakerAgentLookup(bound, host, options, callback) {\n' +
      '  if (!bound) return speakerAgentDnsLookup(host, options, callback); // bind() emits "listening" from this callback\n' +
      '  if (host !== speakerAgentLastIp[0]) speakerAgentLastIp = [host, net.isIP(host)];\n' +
      '  if (speakerAgentLastIp[1] === 0) return speakerAgentDnsLookup(host, options, callback);\n' +
      '  callback(null, host, speakerAgentLastIp[1]);\n' +
      '}\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'int() truncated a number by printing it as a decimal string and parsing that back, once per received RTP ' +
      'packet (the jitter estimate). Math.trunc gives the same for every number whose decimal form has no ' +
      'exponent; the others keep the old path.',
    from: 'var int = (n) => Number.parseInt(n, 10);\n',
    to:
      'var int = (n) => n === 0 ? 0 : typeof n === "number" && Math.abs(n) < 1e21 && Math.abs(n) >= 1e-6 ? Math.trunc(n) : Number.parseInt(n, 10); // speaker-agent patch: no string\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'uint32Add made three BigInts per call (RTP timestamps of every packet sent). For safe integers, ' +
      'ToUint32 of the sum is the same value; anything else keeps the BigInt path (and its errors).',
    from: 'function uint32Add(a, b) {\n  return Number(',
    to:
      'function uint32Add(a, b) { // speaker-agent patch: no BigInt for safe integers\n' +
      '  if (Number.isSafeInteger(a) && Number.isSafeInteger(b) && Number.isSafeInteger(a + b)) return (a + b) >>> 0;\n' +
      '  return Number(',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'For every received RTP packet the receiver listed and sorted its codecs to ask whether TWCC was ' +
      'negotiated, and split and lowercased the codec\'s MIME type twice. TWCC is now decided once per ' +
      'negotiation (prepareReceive clears it) and the lowercased name is kept for the last MIME type seen.',
    from:
      '    } else if (this.twccEnabled) {\n' +
      '      this.setupTWCC(packet.header.ssrc);\n' +
      '    }\n' +
      '    if (codec.name.toLowerCase() === "rtx") {\n',
    to:
      '    } else if (this.speakerAgentTwcc ??= !!this.twccEnabled) { // speaker-agent patch: once per negotiation\n' +
      '      this.setupTWCC(packet.header.ssrc);\n' +
      '    }\n' +
      '    const speakerAgentName = speakerAgentCodecName(codec); // speaker-agent patch: not split per packet\n' +
      '    if (speakerAgentName === "rtx") {\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'The RED check of the same function, with the name from the patch above.',
    from: '    let red;\n    if (codec.name.toLowerCase() === "red") {\n      red = Red.deSerialize(packet.payload);\n',
    to: '    let red;\n    if (speakerAgentName === "red") { // speaker-agent patch\n      red = Red.deSerialize(packet.payload);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'New codecs may change whether TWCC is on (see above).',
    from: '  prepareReceive(params) {\n    params.codecs.forEach((c) => {\n',
    to:
      '  prepareReceive(params) {\n' +
      '    this.speakerAgentTwcc = void 0; // speaker-agent patch: decided again for these codecs\n' +
      '    params.codecs.forEach((c) => {\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'The lowercased codec name for the patches above, cached for the last MIME type.',
    from: 'var log32 = debug("werift:packages/webrtc/src/media/rtpReceiver.ts");\n',
    to:
      'var log32 = debug("werift:packages/webrtc/src/media/rtpReceiver.ts"); // and, speaker-agent patch:\n' +
      'var speakerAgentLastCodecName = ["", ""];\n' +
      'function speakerAgentCodecName(codec) {\n' +
      '  if (codec.mimeType !== speakerAgentLastCodecName[0]) speakerAgentLastCodecName = [codec.mimeType, codec.name.toLowerCase()];\n' +
      '  return speakerAgentLastCodecName[1];\n' +
      '}\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'Bundling leaked the replaced transport: an offer gathers ICE candidates (one UDP socket per address) for the ' +
      'audio transceiver and again for the data channel; when the answer bundles them, werift points the data ' +
      'channel (or a second transceiver) at the first transport and forgets the other without stopping it, so its ' +
      'sockets stayed open for the life of the process (3 per call here: a speaker that reconnects a few hundred ' +
      'times ran out of descriptors). The replaced transport is now stopped (test/vendor/weriftBundleLeak.test.ts).',
    from:
      '          } else {\n' +
      '            transceiver.setDtlsTransport(bundleTransport);\n' +
      '          }\n',
    to:
      '          } else { // speaker-agent patch: stop the transport bundling replaces (its ICE sockets leaked)\n' +
      '            const speakerAgentOrphan = transceiver.dtlsTransport;\n' +
      '            transceiver.setDtlsTransport(bundleTransport);\n' +
      '            if (speakerAgentOrphan && speakerAgentOrphan !== bundleTransport && !this.dtlsTransports.includes(speakerAgentOrphan)) speakerAgentOrphan.stop().catch(() => undefined);\n' +
      '          }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'The same leak for the data channel\'s SCTP transport, the case every call of the agent hits (see above).',
    from:
      '          } else {\n' +
      '            sctpTransport.setDtlsTransport(bundleTransport);\n' +
      '          }\n',
    to:
      '          } else { // speaker-agent patch: stop the transport bundling replaces (its ICE sockets leaked)\n' +
      '            const speakerAgentOrphan = sctpTransport.dtlsTransport;\n' +
      '            sctpTransport.setDtlsTransport(bundleTransport);\n' +
      '            if (speakerAgentOrphan && speakerAgentOrphan !== bundleTransport && !this.dtlsTransports.includes(speakerAgentOrphan)) speakerAgentOrphan.stop().catch(() => undefined);\n' +
      '          }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'Every data-channel message waiting in SCTP\'s send queue waited for the queue to drain through a `once` ' +
      'subscription of its own on the `flush` event, and each one removed itself by filtering the whole subscriber ' +
      'list: each flush cost the square of the backlog. 1,000 queued 5 KB messages drained at 170 KB/s with 80 % of ' +
      'the CPU in that list (and its garbage); 2,000 starved ICE until consent to send expired and the call failed ' +
      '(the data-channel fuzz tests, on a busy machine). The senders now share one waiter, which follows ' +
      'the flushes until the queue is empty; each send still returns only once the queue is empty, as before.',
    from: '    await this.transmit();\n    while (this.outboundQueue.length) {\n      await this.flush.asPromise();\n    }\n',
    to:
      '    await this.transmit();\n' +
      '    while (this.outboundQueue.length) { // speaker-agent patch: one waiter on flush for all senders\n' +
      '      await (this.speakerAgentDrained ??= (async () => {\n' +
      '        try { while (this.outboundQueue.length) await this.flush.asPromise(); } finally { this.speakerAgentDrained = void 0; }\n' +
      '      })());\n' +
      '    }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP retransmission (the data channel): werift starts the retransmission timeout (RTO) at 3 s, RFC 4960\'s ' +
      'value for the open Internet, and times the handshake (INIT, COOKIE ECHO) with it, resending at 3 s each ' +
      'time. WebRTC\'s own SCTP (libwebrtc\'s dcsctp) resends its handshake after 1 s and keeps its RTO between ' +
      '0.22 and 0.8 s. On a lossy uplink each lost handshake packet held the call 3 s more: with a fifth of what ' +
      'the device sends lost, a call took 2.4-3.0 s on average to connect (p90 6.2 s, up to 12.2 s; 1 call in 180 not ' +
      'up within the agent\'s 15 s), against 0.8-0.9 s (p90 1.3-2.2 s, up to 5.1 s) with 1 s (28 Nov, three runs of ' +
      '60 calls a side, `npm run bench -- call-setup`). 1 s was also where werift\'s timeout settled once the round ' +
      'trip is measured (0.4 s now), and werift does not back off (it does now): both are patches below.',
    from: 'var SCTP_RTO_INITIAL = 3;\n',
    to: 'var SCTP_RTO_INITIAL = 1; // speaker-agent patch: SCTP retransmission, resend a lost handshake after 1 s as WebRTC\'s own SCTP does\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP retransmission (see above), once the round trip is measured: werift\'s timeout settles at RFC 4960\'s ' +
      'minimum, 1 s, where dcsctp\'s settles at 0.4 s (its rto_min; above the 0.2 s a peer may hold its SACK). The ' +
      'agent\'s channel is quiet most of the time, a few messages at a time, so a lost one has no later ones to ' +
      'report it missing and waits for the timeout: a lost function result or event came a second late. Now ' +
      '0.4 s, as in Chromium (`npm run bench -- datachannel-loss`, "a message lost on a quiet channel", against ' +
      'werift as shipped). On a slower link the timeout follows the measured round trip as before (srtt + 4 rttvar, ' +
      'with the variance floor and the back-off below); the floor only matters where the round trip is short. The ' +
      'first timeout, before any round trip, stays 1 s.',
    from: 'var SCTP_RTO_MIN = 1;\n',
    to: 'var SCTP_RTO_MIN = 0.4; // speaker-agent patch: SCTP retransmission, resend a lost message after 0.4 s as WebRTC\'s own SCTP does\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP retransmission (see above): the timeout backs off. werift resent at the same timeout for ever and takes ' +
      'a round trip only from a message sent once, so once its round trip grew past the timeout (a congested ' +
      'Wi-Fi, a far TURN relay) every message timed out and went twice, its window fell to one packet each time, ' +
      'and no round trip was ever measured again: the timeout never rose to meet it. With the 0.4 s floor that ' +
      'takes a round trip over 0.4 s, not 1 s. Now each expiry doubles the timeout, up to 3 s (libwebrtc caps ' +
      'dcsctp\'s back-off there), never below what the round trip gave; the next message acknowledged at its ' +
      'first sending sets it from the round trip again (RFC 9260 section 6.3.3, E2; ' +
      'test/vendor/weriftSctpRetransmission.test.ts).',
    from: '    this.cwnd = USERDATA_MAX_LENGTH;\n    this.transmit();\n  };\n',
    to:
      '    this.cwnd = USERDATA_MAX_LENGTH;\n' +
      '    this.rto = Math.min(this.rto * 2, Math.max(this.rto, 3)); // speaker-agent patch: SCTP retransmission backs off\n' +
      '    this.transmit();\n' +
      '  };\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP retransmission (see above): a floor under the round trip\'s variance, as dcsctp has (its ' +
      'min_rtt_variance, 220 ms, divided by 8: the timeout at least 110 ms above the smoothed round trip). On a ' +
      'steady link the variance falls towards 0 and the timeout onto the round trip itself, where any jitter makes ' +
      'a message time out before its SACK can come; with the 0.4 s floor that is a round trip from 0.3 s up.',
    from: '      Math.min(this.srtt + 4 * this.rttvar, SCTP_RTO_MAX)\n',
    to: '      Math.min(this.srtt + 4 * Math.max(this.rttvar, 0.0275), SCTP_RTO_MAX) // speaker-agent patch: SCTP retransmission, a floor under the variance\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP counts a message in flight once (the data channel on a lossy link): werift added a message\'s bytes to ' +
      'the flight size at every send and took them off only if the peer had not already acknowledged it in a gap ' +
      'report. After a retransmission timeout it resent every message not yet cumulatively acknowledged, those ' +
      'the peer had reported received too, and their bytes stayed counted after the acknowledgement: the flight ' +
      'size grew with nothing in flight (609 bytes after 2,000 echoed messages at 30 % loss). Bytes counted that ' +
      'way close the congestion window for good: once they reach it, nothing more is sent and, nothing being out, ' +
      'no timer runs to resend, so the channel is silent while the call stays up. Each message now knows whether ' +
      'it is in flight (test/vendor/weriftSctpFlightSize.test.ts).',
    from:
      '  flightSizeIncrease(chunk) {\n' +
      '    this.flightSize += chunk.bookSize;\n' +
      '  }\n' +
      '  flightSizeDecrease(chunk) {\n' +
      '    this.flightSize = Math.max(0, this.flightSize - chunk.bookSize);\n' +
      '  }\n',
    to:
      '  flightSizeIncrease(chunk) { // speaker-agent patch: SCTP counts a message in flight once\n' +
      '    if (chunk.speakerAgentInFlight) return;\n' +
      '    chunk.speakerAgentInFlight = true;\n' +
      '    this.flightSize += chunk.bookSize;\n' +
      '  }\n' +
      '  flightSizeDecrease(chunk) {\n' +
      '    if (!chunk.speakerAgentInFlight) return;\n' +
      '    chunk.speakerAgentInFlight = false;\n' +
      '    this.flightSize = Math.max(0, this.flightSize - chunk.bookSize);\n' +
      '  }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP counts a message in flight once (see above): a retransmission timeout resends only what the peer has ' +
      'not acknowledged (RFC 9260 section 6.3.3: the outstanding messages), and empties the flight as werift ' +
      'already did by setting its size to 0. The first message waiting is always resent: no gap report can ' +
      'validly name it (the cumulative acknowledgement would cover it), so one that did came from a peer that ' +
      'took a report back (werift\'s own never does), and skipping it would leave nothing to resend and no timer.',
    from:
      '    this.timer3Handle = void 0;\n' +
      '    this.sentQueue.forEach((chunk) => {\n' +
      '      if (!this.maybeAbandon(chunk)) {\n' +
      '        chunk.retransmit = true;\n',
    to:
      '    this.timer3Handle = void 0;\n' +
      '    this.sentQueue.forEach((chunk, i) => { // speaker-agent patch: SCTP counts a message in flight once\n' +
      '      chunk.speakerAgentInFlight = false;\n' +
      '      if (i === 0) chunk.acked = false;\n' +
      '      if (!chunk.acked && !this.maybeAbandon(chunk)) {\n' +
      '        chunk.retransmit = true;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP counts a message in flight once (see above): a message marked for resending and then reported ' +
      'received in a gap report is not resent.',
    from: '          sChunk.acked = true;\n          this.flightSizeDecrease(sChunk);\n',
    to:
      '          sChunk.acked = true;\n' +
      '          sChunk.retransmit = false; // speaker-agent patch: SCTP counts a message in flight once\n' +
      '          this.flightSizeDecrease(sChunk);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP takes received messages in serial order (the data channel\'s acknowledgements): werift sorted the ' +
      'sequence numbers (TSNs) it had received out of order with a plain sort(), which orders numbers as text, and ' +
      'advanced its cumulative acknowledgement only while the first of them was the next one due. Where a loss ' +
      'straddled a power of ten (999999999 arriving after 1000000000: "1000000000" sorts first) or the wrap at ' +
      '2^32 (0 sorts before 4294967295 either way), the acknowledgement stopped for good: the sender kept every ' +
      'later message for ever and resent one each second, and the receiver sorted its growing set at every packet. ' +
      'A TSN starts at random and a call sends a few per second, so this is rare, and then lasts the whole call. ' +
      'Now sorted by distance from the cumulative acknowledgement, mod 2^32 (test/vendor/weriftSctpTsnOrder.test.ts). ' +
      'This site: when a message arrives.',
    from: '    for (const tsn2 of [...this.sackMisOrdered].sort()) {\n',
    to:
      '    for (const tsn2 of [...this.sackMisOrdered].sort((a, b) => ((a - this.lastReceivedTsn) >>> 0) - ((b - this.lastReceivedTsn) >>> 0))) { // speaker-agent patch: SCTP takes received messages in serial order\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SCTP takes received messages in serial order (see above): when the peer moves the acknowledgement forward (FORWARD TSN).',
    from: '    for (const tsn of [...this.sackMisOrdered].sort()) {\n',
    to:
      '    for (const tsn of [...this.sackMisOrdered].sort((a, b) => ((a - this.lastReceivedTsn) >>> 0) - ((b - this.lastReceivedTsn) >>> 0))) { // speaker-agent patch: SCTP takes received messages in serial order\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP takes received messages in serial order (see above): the gap report of a SACK lists them in that order, ' +
      'and a gap\'s offset is taken mod 2^32. Across the wrap werift\'s offset was negative, writing the SACK threw, ' +
      'and no SACK went out at all.',
    from:
      '    [...this.sackMisOrdered].sort().forEach((tsn) => {\n' +
      '      const pos = (tsn - this.lastReceivedTsn) % SCTP_TSN_MODULO;\n',
    to:
      '    [...this.sackMisOrdered].sort((a, b) => ((a - this.lastReceivedTsn) >>> 0) - ((b - this.lastReceivedTsn) >>> 0)).forEach((tsn) => { // speaker-agent patch: SCTP takes received messages in serial order\n' +
      '      const pos = (tsn - this.lastReceivedTsn) >>> 0;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP takes received messages in serial order (see above): one before TSN 0 is 4294967295. werift computed ' +
      'it as (0 - 1) % 2^32, which is -1 in JavaScript: a channel closed when the next TSN was 0 sent a stream ' +
      'reset that could not be written (an unhandled RangeError, the far end never closed; from a review), and an ' +
      'association whose first TSN was 0 started its acknowledgements at -1.',
    from: 'function tsnMinusOne(a) {\n  return (a - 1) % SCTP_TSN_MODULO;\n}\n',
    to: 'function tsnMinusOne(a) { // speaker-agent patch: SCTP takes received messages in serial order (one before 0 is 2^32 - 1)\n  return (a - 1 + SCTP_TSN_MODULO) % SCTP_TSN_MODULO;\n}\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP takes DATA only as far ahead as a SACK can report: a SACK gives each block of messages received out of ' +
      'order as a 16-bit offset from the cumulative acknowledgement, and werift took a message of any sequence number ' +
      'ahead of it. One 65,536 or more ahead (a peer\'s bug, or that many tiny messages in flight) made every SACK ' +
      'throw while it was written ("send sack failed", in the debug log only) until the acknowledgement came within ' +
      '65,535 of it: for one far ahead, no acknowledgement for the rest of the call, the peer resending and holding ' +
      'every message after it, and the number kept in the set werift sorts at every packet. Such a message is now ' +
      'dropped unacknowledged, which a sender survives: it ' +
      'resends it as it does any message not acknowledged. libwebrtc\'s dcsctp does the same beyond 100,000 ' +
      '(its kMaxAcceptedOutstandingFragments; werift\'s limit is the offset\'s; test/vendor/weriftSctpSackLimits.test.ts).',
    from: '  receiveDataChunk(chunk) {\n    this.sackNeeded = true;\n    if (this.markReceived(chunk.tsn)) {\n',
    to:
      '  receiveDataChunk(chunk) {\n' +
      '    this.sackNeeded = true;\n' +
      '    const speakerAgentAhead = (chunk.tsn - this.lastReceivedTsn) >>> 0; // speaker-agent patch: SCTP takes DATA only as far ahead as a SACK can report\n' +
      '    if (speakerAgentAhead > 65535 && !uint32Gte(this.lastReceivedTsn, chunk.tsn)) { // (not a duplicate: exactly 2^31 ahead is neither)\n' +
      '      this.sackImmediate = true;\n' +
      '      return;\n' +
      '    }\n' +
      '    if (this.markReceived(chunk.tsn)) { // (the duplicates: serially before the cumulative acknowledgement)\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A SACK fits in one packet: werift listed every block of messages received out of order and every ' +
      'duplicate, so after scattered losses among many small messages (a backlog on bad Wi-Fi) one SACK outgrew ' +
      'the 1,228-byte packets werift sends DATA in (4 bytes a block: 300 blocks), and went out as a datagram the ' +
      'path may have to fragment or drop. Now the first 256 blocks (the oldest: what the sender resends first) and ' +
      '32 duplicates, at most 1,180 bytes a packet; a block left out reads as not yet received, as in a SACK sent ' +
      'before it came (dcsctp reports 20 of each; test/vendor/weriftSctpSackLimits.test.ts).',
    from: '    sack.duplicates = [...this.sackDuplicates];\n    sack.gaps = gaps;\n',
    to:
      '    sack.duplicates = this.sackDuplicates.slice(0, 32); // speaker-agent patch: a SACK fits in one packet\n' +
      '    sack.gaps = gaps.slice(0, 256);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'SCTP round trips on the monotonic clock: werift times a message from its send to its SACK with Date.now. A ' +
      'board without a real-time clock steps its wall clock when NTP syncs (often a minute after boot, by days or ' +
      'months); a step between a message and its SACK made that "round trip" huge (or negative) and pinned the ' +
      'retransmission timeout at its 60 s maximum for the next hundred-odd messages, so a message then lost on ' +
      'Wi-Fi (a function result, an event) was resent after a minute, not a second ' +
      '(test/vendor/weriftSctpClockStep.test.ts). The send time, with the SACK time below.',
    from: '      chunk.sentTime = Date.now() / 1e3;\n',
    to: '      chunk.sentTime = performance.now() / 1e3; // speaker-agent patch: SCTP round trips on the monotonic clock\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'SCTP round trips on the monotonic clock: the SACK time (see the send time above).',
    from: '    const receivedTime = Date.now() / 1e3;\n',
    to: '    const receivedTime = performance.now() / 1e3; // speaker-agent patch: SCTP round trips on the monotonic clock\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN server that does not answer (down, blocked, wrong credentials): werift opens a socket for the ' +
      'allocation and, when the allocation fails, leaves it open; it is in no list the peer connection closes. One ' +
      'socket per call attempt, for as long as the process runs: with a service whose TURN server is gone the ' +
      'agent retries every 30-60 s and runs out of file descriptors (the unit\'s LimitNOFILE) in days, and then ' +
      'nothing, not even the call once the server is back, can open a socket. The failed allocation now closes ' +
      'its transport (test/agent/transport/turnLeak.test.ts).',
    from: '  await turn.connectionMade();\n  return turn;\n',
    to:
      '  try { // speaker-agent patch: a failed TURN allocation closes its socket\n' +
      '    await turn.connectionMade();\n' +
      '  } catch (e) {\n' +
      '    await turn.close().catch(() => void 0);\n' +
      '    throw e;\n' +
      '  }\n' +
      '  return turn;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN allocation that completes after the connection closed is closed: the connect timeout (or SIGTERM) ' +
      'aborts the gathering while it waits on a slow relay and closes the peer connection; werift closed the ' +
      'protocols the ICE connection had and went on waiting, and an allocation that succeeded afterwards was added ' +
      'to the closed connection, in no list anything closes again: its socket stayed open and its refresh loop ' +
      'renewed the allocation on the relay (against the user\'s quota there) for as long as the process ran, one per ' +
      'slow call attempt. close() sets the state "closed" before anything it awaits; the gathering\'s "completed" ' +
      'comes only after this promise settles (test/agent/transport/turnLateAllocation.test.ts, against coturn).',
    from:
      '        this.ensureProtocol(protocol);\n' +
      '        this.protocols.push(protocol);\n' +
      '        const candidateAddress = protocol.turn.relayedAddress;\n',
    to:
      '        if (this.state === "closed") { // speaker-agent patch: a TURN allocation made after the connection closed is closed\n' +
      '          await protocol.close().catch(() => void 0);\n' +
      '          return;\n' +
      '        }\n' +
      '        this.ensureProtocol(protocol); this.protocols.push(protocol);\n' +
      '        const candidateAddress = protocol.turn.relayedAddress;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A closed TURN allocation\'s refresh loop ends at once: close() cancels it, but the loop looked at that only ' +
      'after its sleep, 5/6 of the allocation\'s lifetime (500 s from most relays), keeping a timer and the whole ' +
      'client alive that long after every relayed call, and then sent a Refresh into the closed transport. The ' +
      'cancel now ends the sleep (timers/promises takes an AbortSignal; the loop\'s rejection is swallowed by ' +
      'werift\'s cancelable, as before).',
    from:
      '      onCancel.once(() => {\n' +
      '        run = false;\n' +
      '      });\n' +
      '      while (run) {\n' +
      '        const delay = 5 / 6 * exp * 1e3;\n' +
      '        log21("refresh delay", delay, { exp });\n' +
      '        await setTimeout4(delay);\n',
    to:
      '      const speakerAgentSleep = new AbortController(); // speaker-agent patch: close() ends the refresh loop\'s sleep\n' +
      '      onCancel.once(() => {\n' +
      '        run = false;\n' +
      '        speakerAgentSleep.abort();\n' +
      '      });\n' +
      '      while (run) {\n' +
      '        const delay = 5 / 6 * exp * 1e3;\n' +
      '        log21("refresh delay", delay, { exp });\n' +
      '        await setTimeout4(delay, void 0, { signal: speakerAgentSleep.signal });\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A closed TURN allocation is released on the relay (a Refresh with LIFETIME 0, RFC 8656 7.2): werift only ' +
      'closed its socket, and the relay kept the allocation until its lifetime ran out (600 s from most relays). A ' +
      'relay that limits allocations per user (coturn\'s user-quota, hosted TURN services) refused the next call\'s ' +
      'relay while a flapping network\'s earlier attempts were still counted: a speaker that only a relay can ' +
      'carry stayed without a call for minutes after every few reconnects. Asked with two retransmissions ' +
      '(~350 ms at most, once more after a stale nonce), so a relay gone away delays the close that long only; ' +
      'a second close() waits for the first (before, it closed the socket under the release) ' +
      '(test/agent/transport/turnLateAllocation.test.ts, against coturn with a quota of one).',
    from:
      '  async close() {\n' +
      '    this.refreshHandle?.resolve?.();\n' +
      '    await this.transport.close();\n' +
      '  }\n',
    to:
      '  close() { // speaker-agent patch: one close, which tells the relay the allocation ends\n' +
      '    return this.speakerAgentClosing ??= (async () => {\n' +
      '      this.refreshHandle?.resolve?.();\n' +
      '      if (this.relayedAddress && !this.transport.closed) {\n' +
      '        const release = () => this.request(new Message(4 /* REFRESH */, 0 /* REQUEST */).setAttribute("LIFETIME", 0), this.server, void 0, { retransmissions: 2 });\n' +
      '        await release().catch((e) => { // a stale nonce (438, or 401 with a new realm and nonce): once more, as requestWithRetry\n' +
      '          if (!(e instanceof TransactionFailed)) return;\n' +
      '          const [code] = e.response.getAttributeValue("ERROR-CODE") ?? [];\n' +
      '          const nonce = e.response.getAttributeValue("NONCE");\n' +
      '          const realm = e.response.getAttributeValue("REALM");\n' +
      '          if (!nonce || !((code === 401 && realm) || (code === 438 && this.realm))) return;\n' +
      '          this.nonce = nonce;\n' +
      '          if (code === 401) this.realm = realm;\n' +
      '          this.integrityKey = makeIntegrityKey(this.username, this.realm, this.password);\n' +
      '          return release().catch(() => void 0);\n' +
      '        });\n' +
      '      }\n' +
      '      await this.transport.close();\n' +
      '    })();\n' +
      '  }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'TURN channel refreshes on the monotonic clock: werift stamps when a TURN channel is next due for its ' +
      'ChannelBind refresh (every 500 s; the server forgets a channel 600 s after its last bind) in wall-clock ' +
      'seconds. A board without a real-time clock steps its wall clock when NTP syncs; a step back of more than ' +
      '100 s postponed the refresh by the step, the relay dropped the channel, and a call that only TURN could ' +
      'carry went silent and was ended by the liveness check (test/vendor/weriftTurnClockStep.test.ts, against ' +
      'coturn). The check on the send path, with the other two below.',
    from: '    const cached = this.channelByAddr[key];\n    const now = int(Date.now() / 1e3);\n',
    to:
      '    const cached = this.channelByAddr[key];\n' +
      '    const now = int(performance.now() / 1e3); // speaker-agent patch: TURN channel refreshes on the monotonic clock\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'TURN channel refreshes on the monotonic clock: the check before a bind (see the send path\'s above).',
    from: '    const key = channelKey(addr);\n    const now = int(Date.now() / 1e3);\n    let channel = this.channelByAddr[key];\n',
    to:
      '    const key = channelKey(addr);\n' +
      '    const now = int(performance.now() / 1e3); // speaker-agent patch: TURN channel refreshes on the monotonic clock\n' +
      '    let channel = this.channelByAddr[key];\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'TURN channel refreshes on the monotonic clock: when the next refresh is due (see the send path\'s above).',
    from: '      channel.refreshAt = int(Date.now() / 1e3) + this.channelRefreshTime;\n',
    to: '      channel.refreshAt = int(performance.now() / 1e3) + this.channelRefreshTime; // speaker-agent patch: TURN channel refreshes on the monotonic clock\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'Why the TURN relay was not reached is kept: werift passed the error (a relay certificate not trusted or not ' +
      'yet valid by a clock that is behind, a refused connection) only to its debug log, so a call that ' +
      'only the relay could carry failed as "did not connect within 15000 ms" with nothing about the relay. The ' +
      'agent reads it from the ICE connection when a call fails (src/agent/transport/webrtcTransport.ts).',
    from: '      })().catch((error) => {\n        log23("query TURN server", error);\n',
    // (the agent gathers once per peer connection and never restarts ICE, so the error is this gathering's)
    to:
      '      })().catch((error) => {\n' +
      '        this.speakerAgentTurnError = error; // speaker-agent patch: why the TURN relay was not reached is kept\n' +
      '        log23("query TURN server", error);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN relay that refuses the credentials is named at once: werift checked MESSAGE-INTEGRITY on error ' +
      'responses too, and a relay answers a request whose integrity is wrong (a wrong or expired TURN password) ' +
      'with a 401 that carries none, since the key is what is wrong. werift dropped that 401 and retransmitted ' +
      'until "STUN transaction timed out" (39.5 s), after the call\'s connect timeout, so the failure named no ' +
      'relay. libwebrtc checks success responses only (turn_port.cc: "Check success responses, but not errors, ' +
      'for MESSAGE-INTEGRITY"); so does this. An error response carries nothing a forger could use but the error.',
    from:
      '          const verified = transaction.integrityKey ? parseMessage(data, transaction.integrityKey) : message;\n' +
      '          if (!verified) {\n' +
      '            log21("TURN STUN response failed MESSAGE-INTEGRITY check");\n',
    to:
      '          // speaker-agent patch: integrity checked on success responses only, as libwebrtc does (a relay refusing the credentials answers 401 without it)\n' +
      '          const verified = transaction.integrityKey && message.messageClass !== 272 ? parseMessage(data, transaction.integrityKey) : message;\n' +
      '          if (!verified) {\n' +
      '            log21("TURN STUN response failed MESSAGE-INTEGRITY check");\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN relay that refuses the credentials is named at once (see the patch above): the transaction itself ' +
      'also ignored a response without MESSAGE-INTEGRITY; it now requires it of success responses only. The ' +
      'protocol layers still drop what fails their own check (ICE connectivity checks verify every class).',
    from: '    if (this.integrityKey) {\n      const hasIntegrity = message.attributesKeys.includes("MESSAGE-INTEGRITY")',
    to:
      '    if (this.integrityKey && message.messageClass === 256 /* RESPONSE */) { // speaker-agent patch: errors (a 401 refusing the credentials) carry none\n' +
      '      const hasIntegrity = message.attributesKeys.includes("MESSAGE-INTEGRITY")',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN request sent again after a 438 (Stale Nonce) is signed once: werift set the new nonce on the request ' +
      'it had already signed and added MESSAGE-INTEGRITY and FINGERPRINT again, computed over the old ones still in ' +
      'it. The relay drops a request whose integrity is wrong without an answer, so the allocation\'s refresh timed ' +
      'out and the allocation lapsed: with a relay that ages its nonces (coturn\'s --stale-nonce, 600 s when on) a ' +
      'call that only TURN could carry went silent at its first refresh after the nonce aged, and ChannelBind and ' +
      'CreatePermission failed the same way (test/vendor/weriftTurnLifetimes.test.ts, against coturn).',
    from:
      '    if (this.integrityKey) {\n' +
      '      request.setAttribute("USERNAME", this.username)',
    to:
      '    if (this.integrityKey) {\n' +
      '      // speaker-agent patch: a request sent again (a 438\'s new nonce) is signed once, not over its old signature\n' +
      '      request.attributes = request.attributes.filter(([name]) => name !== "MESSAGE-INTEGRITY" && name !== "FINGERPRINT");\n' +
      '      request.setAttribute("USERNAME", this.username)',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'TURN channels are refreshed every 240 s, inside the 300 s a permission lives (RFC 8656 section 9): a ' +
      'ChannelBind refreshes the permission for its peer too, and werift refreshed channels every 500 s, so a relay ' +
      'that expires permissions by the RFC dropped the call\'s packets from 300 s to 500 s after each bind. ' +
      'libwebrtc refreshes its channel bindings a minute under the permission timeout for the same reason ' +
      '(turn_port.cc, TurnChannelBindRequest::OnResponse).',
    from: 'var DEFAULT_CHANNEL_REFRESH_TIME = 500;\n',
    to: 'var DEFAULT_CHANNEL_REFRESH_TIME = 240; // speaker-agent patch: inside the 300 s a TURN permission lives\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN channel\'s refresh does not hold the call\'s packets back: werift made every packet to a channel due ' +
      'for its refresh wait for the ChannelBind\'s answer, one round trip to the relay and, on a lossy network, its ' +
      'retransmissions (50 ms doubling, up to 6.35 s), every few minutes in the middle of the audio. The channel ' +
      'stays bound on the relay for 600 s after its last bind, so packets now go on through it while the refresh ' +
      'runs; a refresh that fails is tried again 5 s later, not at every packet, and after 60 s of failures (the ' +
      'permission it renews has lapsed on the relay by then) the channel counts as unbound: the next packets wait ' +
      'for its bind (the same number: a relay that still holds the binding refuses a new number for the peer) or ' +
      'go as Send indications when it fails, as werift did at every failed refresh.',
    from:
      '    const existing = this.channelBindingByAddr.get(key);\n' +
      '    if (existing) {\n' +
      '      return existing;\n' +
      '    }\n',
    to:
      '    const existing = this.channelBindingByAddr.get(key);\n' +
      '    if (existing) {\n' +
      '      // speaker-agent patch: a bound channel carries packets while its refresh is under way\n' +
      '      return this.channelByAddr[key]?.refreshAt > 0 ? this.channelByAddr[key] : existing;\n' +
      '    }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'A TURN channel\'s refresh does not hold the call\'s packets back (see the check above): the refresh starts and the packet goes on.',
    from:
      '    this.channelBindingByAddr.set(key, operation);\n' +
      '    try {\n' +
      '      return await operation;\n',
    to:
      '    this.channelBindingByAddr.set(key, operation);\n' +
      '    if (cached?.refreshAt > 0) { // speaker-agent patch: a bound channel\'s refresh runs beside its packets\n' +
      '      operation.then(() => {\n' +
      '        cached.failingSince = undefined;\n' +
      '      }, (error) => {\n' +
      '        const failedAt = int(performance.now() / 1e3);\n' +
      '        cached.failingSince ??= failedAt;\n' +
      '        // tried again in 5 s, not at every packet; let go after a quarter of the refresh time (60 s) of failures\n' +
      '        if (failedAt - cached.failingSince < Math.max(5, this.channelRefreshTime / 4)) cached.refreshAt = failedAt + 5;\n' +
      '        else cached.refreshAt = 0; // its permission has lapsed on the relay: packets wait for a bind again, or go as Send indications\n' +
      '        log21("channelBind refresh error", error);\n' +
      '      }).finally(() => {\n' +
      '        if (this.channelBindingByAddr.get(key) === operation) this.channelBindingByAddr.delete(key);\n' +
      '      });\n' +
      '      return cached;\n' +
      '    }\n' +
      '    try {\n' +
      '      return await operation;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'A TURN permission made for Send indications (werift\'s way when a channel cannot be bound) is refreshed like ' +
      'a channel: werift made it once and never again, and the relay forgets a permission 300 s after it was made. ' +
      'The permission is now due again after the channels\' refresh time, and refreshed beside the packets (it ' +
      'still holds on the relay), again 5 s after a refresh that failed.',
    from: '    const key = permissionKey(addr);\n    if (this.permissionByAddr[key]) {\n      return;\n    }\n',
    to:
      '    const key = permissionKey(addr);\n' +
      '    const permittedUntil = this.permissionByAddr[key]; // speaker-agent patch: a permission is refreshed, not made once\n' +
      '    if (permittedUntil > int(performance.now() / 1e3)) {\n' +
      '      return;\n' +
      '    }\n' +
      '    if (permittedUntil > 0) { // held on the relay still: refreshed beside the packets, at most every 5 s\n' +
      '      this.permissionByAddr[key] = int(performance.now() / 1e3) + 5;\n' +
      '      const refresh = this.permissionQueue.then(() => this.createPermission(addr));\n' +
      '      this.permissionQueue = refresh.then(() => {\n' +
      '        this.permissionByAddr[key] = int(performance.now() / 1e3) + this.channelRefreshTime;\n' +
      '      }, (error) => log21("createPermission refresh error", error));\n' +
      '      return;\n' +
      '    }\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'A TURN permission is refreshed like a channel (see the check above): the check in the queue, and when it is next due.',
    from:
      '      if (this.permissionByAddr[key]) {\n' +
      '        return;\n' +
      '      }\n' +
      '      await this.createPermission(addr);\n' +
      '      this.permissionByAddr[key] = true;\n',
    to:
      '      if (this.permissionByAddr[key] > int(performance.now() / 1e3)) { // speaker-agent patch: a permission is refreshed, not made once\n' +
      '        return;\n' +
      '      }\n' +
      '      await this.createPermission(addr);\n' +
      '      this.permissionByAddr[key] = int(performance.now() / 1e3) + this.channelRefreshTime;\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why:
      'DTLS key exchange (ECDHE) in OpenSSL, not in JavaScript: werift made its X25519 keys and shared secret with ' +
      'tweetnacl and its P-256 ones with @noble/curves, pure JavaScript that runs unoptimised at every handshake ' +
      '(once per call): about 35 ms of the main thread per X25519 operation here, two per handshake, plus the ' +
      'garbage they make; in an emulated machine the companion\'s event loop stopped for seconds when it answered ' +
      'a call, and its watchdog killed it (profiled: werift\'s handshake, tweetnacl\'s field arithmetic and the ' +
      'collections under it). node\'s crypto does the same curves in OpenSSL: the same keys on the wire (raw 32-byte ' +
      'X25519, uncompressed P-256 points) and the same secrets (RFC 7748; the P-256 x-coordinate). These helpers, ' +
      'and the four uses below.',
    from: 'import nacl from "tweetnacl";\n\n// ../dtls/src/cipher/ec.ts\n',
    to:
      '// speaker-agent patch: ECDHE in OpenSSL (node\'s crypto), not in JavaScript (tweetnacl, @noble/curves)\n' +
      'import { createECDH as speakerAgentCreateECDH, createPrivateKey as speakerAgentPrivateKey, createPublicKey as speakerAgentPublicKey, diffieHellman as speakerAgentDiffieHellman, generateKeyPairSync as speakerAgentGenerateKeyPair } from "crypto";\n' +
      'var speakerAgentX25519Pkcs8 = Buffer.from("302e020100300506032b656e04220420", "hex"); // DER before a raw private key\n' +
      'var speakerAgentX25519Spki = Buffer.from("302a300506032b656e032100", "hex"); // DER before a raw public key\n' +
      'function speakerAgentX25519Keypair() {\n' +
      '  const { privateKey, publicKey } = speakerAgentGenerateKeyPair("x25519");\n' +
      '  return {\n' +
      '    privateKey: Buffer.from(privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32)),\n' +
      '    publicKey: Buffer.from(publicKey.export({ format: "der", type: "spki" }).subarray(-32))\n' +
      '  };\n' +
      '}\n' +
      'function speakerAgentX25519(privateKey, publicKey) {\n' +
      '  return speakerAgentDiffieHellman({\n' +
      '    privateKey: speakerAgentPrivateKey({ key: Buffer.concat([speakerAgentX25519Pkcs8, privateKey]), format: "der", type: "pkcs8" }),\n' +
      '    publicKey: speakerAgentPublicKey({ key: Buffer.concat([speakerAgentX25519Spki, publicKey]), format: "der", type: "spki" })\n' +
      '  });\n' +
      '}\n' +
      'function speakerAgentP256Keypair() {\n' +
      '  const ecdh = speakerAgentCreateECDH("prime256v1");\n' +
      '  ecdh.generateKeys();\n' +
      '  const k = ecdh.getPrivateKey(); // without its leading zero bytes (1 key in 128 or so): 32 as @noble/curves made it\n' +
      '  return { privateKey: k.length === 32 ? k : Buffer.concat([Buffer.alloc(32 - k.length), k]), publicKey: ecdh.getPublicKey() };\n' +
      '}\n' +
      'function speakerAgentP256(privateKey, publicKey) {\n' +
      '  const ecdh = speakerAgentCreateECDH("prime256v1");\n' +
      '  ecdh.setPrivateKey(privateKey);\n' +
      '  return ecdh.computeSecret(publicKey);\n' +
      '}\n' +
      '\n// ../dtls/src/cipher/ec.ts\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'DTLS key exchange in OpenSSL (see the helpers above): the P-256 and X25519 shared secrets.',
    from:
      '    case NamedCurveAlgorithm.secp256r1_23:\n' +
      '      return p256PreMasterSecret({ publicKey, privateKey });\n' +
      '    case NamedCurveAlgorithm.x25519_29:\n' +
      '      return Buffer.from(nacl.scalarMult(privateKey, publicKey));\n',
    to:
      '    case NamedCurveAlgorithm.secp256r1_23: // speaker-agent patch: ECDHE in OpenSSL\n' +
      '      return speakerAgentP256(privateKey, publicKey);\n' +
      '    case NamedCurveAlgorithm.x25519_29: // speaker-agent patch: ECDHE in OpenSSL\n' +
      '      return speakerAgentX25519(privateKey, publicKey);\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'DTLS key exchange in OpenSSL (see the helpers above): the P-256 key pair.',
    from: '      const { privateKey, publicKey } = p256Keypair();\n',
    to: '      const { privateKey, publicKey } = speakerAgentP256Keypair(); // speaker-agent patch: ECDHE in OpenSSL\n',
  },
  {
    file: 'node_modules/werift/lib/index.mjs',
    why: 'DTLS key exchange in OpenSSL (see the helpers above): the X25519 key pair.',
    from:
      '      const keys = nacl2.box.keyPair();\n' +
      '      return {\n' +
      '        curve: namedCurve,\n' +
      '        privateKey: Buffer.from(keys.secretKey.buffer),\n' +
      '        publicKey: Buffer.from(keys.publicKey.buffer)\n' +
      '      };\n',
    to:
      '      const keys = speakerAgentX25519Keypair(); // speaker-agent patch: ECDHE in OpenSSL\n' +
      '      return { curve: namedCurve, privateKey: keys.privateKey, publicKey: keys.publicKey };\n',
  },
];

/** Applies every patch under `base`; returns what it did per file. Throws when a file matches neither side. */
export function applyPatches(base = root) {
  const report = [];
  for (const p of PATCHES) {
    const file = path.join(base, p.file);
    const text = readFileSync(file, 'utf8'); // a missing file is an error too: the package changed its layout
    if (text.includes(p.to)) {
      report.push({ file: p.file, state: 'already patched' });
      continue;
    }
    const at = text.indexOf(p.from);
    if (at < 0 || text.indexOf(p.from, at + 1) >= 0) {
      throw new Error(`patch-dependencies: ${p.file} does not contain the expected code exactly once; ` +
        `the dependency changed, re-check the patch (${p.why})`);
    }
    writeFileSync(file, text.slice(0, at) + p.to + text.slice(at + p.from.length));
    report.push({ file: p.file, state: 'patched' });
  }
  return report;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const r of applyPatches()) if (r.state === 'patched') console.log(`patched ${r.file}`);
}
