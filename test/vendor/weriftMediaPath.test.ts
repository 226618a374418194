// werift's per-packet media path as patched by scripts/patch-dependencies.mjs (issue #5, CPU in a call): each
// patch gives the same results as the code it replaced, or the correct result where that code was wrong.
import { createHook } from 'node:async_hooks';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { waitUntil } from '../support/audioCapture.js';
import {
  Event, MediaStreamTrack, RTCRtpCodecParameters, RTCRtpReceiver, RtpHeader, RtpPacket, UdpTransport, compactNtp, getBit, int, ntpTime,
  ntpTimeToEpochMs, uint32Add, useTWCC,
} from 'werift';

const require = createRequire(import.meta.url);
const NTP_EPOCH_OFFSET_MS = -Date.UTC(1900, 0, 1); // 1900 to 1970

/** werift's getBit as shipped: the byte printed in binary, sliced and parsed back. */
function shippedGetBit(bits: number, startIndex: number, length = 1): number {
  let bin = bits.toString(2).split('');
  bin = [...Array(8 - bin.length).fill('0'), ...bin];
  return Number.parseInt(bin.slice(startIndex, startIndex + length).join(''), 2);
}

describe('werift getBit (arithmetic for a byte)', () => {
  it('gives what the shipped string version gives for every byte, start and length, out-of-range ones too', () => {
    let compared = 0;
    for (let byte = 0; byte < 256; byte++) {
      for (let start = 0; start <= 9; start++) {
        for (let length = 0; length <= 9; length++) {
          expect(Object.is(getBit(byte, start, length), shippedGetBit(byte, start, length)), `${byte} ${start} ${length}`).toBe(true);
          compared++;
        }
      }
    }
    expect(compared).toBe(256 * 10 * 10);
  });

  it('parses RTP headers (marker, payload type, padding, extension, CSRCs) as serialized', () => {
    for (const props of [
      { marker: true, payloadType: 111, sequenceNumber: 65535, timestamp: 0xfffffff0, ssrc: 0x12345678 },
      { marker: false, payloadType: 0, sequenceNumber: 1, timestamp: 960, ssrc: 1, csrc: [7, 8], padding: true },
      { marker: true, payloadType: 127, sequenceNumber: 300, timestamp: 1, ssrc: 2, extensions: [{ id: 1, payload: Buffer.from([0xab]) }] },
    ]) {
      const header = new RtpHeader(props);
      const parsed = RtpHeader.deSerialize(header.serialize(header.serializeSize));
      expect({ v: parsed.version, m: parsed.marker, pt: parsed.payloadType, seq: parsed.sequenceNumber, ts: parsed.timestamp, ssrc: parsed.ssrc })
        .toEqual({ v: 2, m: props.marker, pt: props.payloadType, seq: props.sequenceNumber, ts: props.timestamp, ssrc: props.ssrc });
      expect(parsed.padding).toBe(props.padding === true);
      expect(parsed.csrcLength).toBe(props.csrc?.length ?? 0);
      expect(parsed.extension).toBe(props.extensions !== undefined);
      expect(parsed.extensions.map((e) => [e.id, e.payload.toString('hex')])).toEqual((props.extensions ?? []).map((e) => [e.id, e.payload.toString('hex')]));
    }
  });
});

describe('werift int and uint32Add (no strings, no BigInts)', () => {
  // Edge values, then a seeded spread over 1e-8 .. 1e17 (no Math.random: a failure reproduces)
  const values: number[] = [0, -0, 1, -1, 0.5, -0.5, -0.3, 1e-7, 5e-7, 1e-6, -1e-6, 2.5e-6, 123456.789, -98765.4321, 2 ** 31,
    2 ** 32, 4294967295, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 1e20, 9.99e20, 1e21, -1e21, NaN, Infinity, -Infinity, 1e300];
  let seed = 12345;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 20_000; i++) values.push((next() - 0.5) * 10 ** (next() * 25 - 8), Math.round((next() - 0.5) * 2 ** (next() * 60)));

  it('int truncates exactly as the shipped Number.parseInt(n, 10) does, -0 and exponent forms included', () => {
    for (const v of values) expect(Object.is(int(v), Number.parseInt(v as unknown as string, 10)), String(v)).toBe(true);
  });

  it('uint32Add wraps to 32 bits as the shipped BigInt version does, and still throws for a fraction', () => {
    const shipped = (a: number, b: number): number => Number((BigInt(a) + BigInt(b)) & 0xffffffffn);
    const ints = values.filter(Number.isInteger).slice(0, 2000);
    for (const a of ints.slice(0, 40)) for (const b of ints.slice(0, 500)) expect(uint32Add(a, b), `${a} + ${b}`).toBe(shipped(a, b));
    expect(uint32Add(0xffffffff, 1)).toBe(0);
    expect(uint32Add(5, -10)).toBe(0xfffffffb);
    expect(() => uint32Add(1.5, 1)).toThrow(RangeError);
  });
});

describe('werift ntpTime (RFC 3550 NTP by arithmetic)', () => {
  it('is seconds since 1900 in the high 32 bits and the fraction of a second in 1/2^32 in the low 32', () => {
    const before = Date.now();
    const ntp = ntpTime();
    const after = Date.now();
    const ms = Number(ntp >> 32n) * 1000 + (Number(ntp & 0xffffffffn) / 2 ** 32) * 1000 - NTP_EPOCH_OFFSET_MS;
    expect(ms).toBeGreaterThanOrEqual(before - 2); // performance.timeOrigin + now() vs Date.now(): sub-ms apart
    expect(ms).toBeLessThanOrEqual(after + 2);
  });

  it('reads back through ntpTimeToEpochMs, and its middle 32 bits are the compact NTP of receiver reports', () => {
    const ntp = ntpTime();
    expect(Math.abs(ntpTimeToEpochMs(ntp) - Date.now())).toBeLessThan(50);
    expect(compactNtp(ntp)).toBe(Number((ntp >> 16n) & 0xffffffffn));
    // half a second is 0x80000000 in the fraction, whatever the decimal digits of the time look like
    const half = (3_900_000_000n << 32n) | 0x80000000n;
    expect(ntpTimeToEpochMs(half)).toBe(3_900_000_000 * 1000 + 500 - NTP_EPOCH_OFFSET_MS);
  });
});

describe('werift Event (no async work without promise subscribers)', () => {
  it('creates no promise when nothing subscribed with a promise; promise subscribers still run, in order', async () => {
    const event = new Event<[number]>();
    const seen: number[] = [];
    event.subscribe((n) => seen.push(n));
    let promises = 0;
    const hook = createHook({ init: (_id, type) => { if (type === 'PROMISE') promises++; } }).enable();
    for (let i = 0; i < 100; i++) event.execute(i);
    hook.disable();
    expect(seen).toHaveLength(100);
    expect(promises).toBe(0);

    const awaited: number[] = [];
    const next = event.asPromise();
    event.execute(1000);
    expect((await next)[0]).toBe(1000);
    event.watch((n) => n === 2000).then(([n]) => awaited.push(n), () => undefined);
    event.execute(2000);
    await new Promise((r) => setImmediate(r));
    expect(awaited).toEqual([2000]);
    expect(seen.at(-1)).toBe(2000);
  });
});

describe('werift RTCRtpReceiver (TWCC decided once per negotiation)', () => {
  it('asks its codecs about TWCC once for many packets, and again after new codecs, which turn TWCC on', () => {
    const receiver = new RTCRtpReceiver({} as never, 'audio', 1);
    // what ReceiverTWCC touches; no packet is sent within this test (its reports run on a timer)
    (receiver as unknown as { dtlsTransport: unknown }).dtlsTransport = { sendRtcp: async () => undefined, transportSequenceNumber: 0 };
    const opus = (rtcpFeedback: ReturnType<typeof useTWCC>[]) =>
      new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2, payloadType: 111, rtcpFeedback });
    receiver.prepareReceive({ codecs: [opus([])], encodings: [] } as never);
    const track = new MediaStreamTrack({ kind: 'audio', remote: true, ssrc: 5 });
    receiver.addTrack(track);
    let asked = 0;
    const getter = Object.getOwnPropertyDescriptor(RTCRtpReceiver.prototype, 'twccEnabled')!.get!;
    Object.defineProperty(receiver, 'twccEnabled', { get() { asked++; return getter.call(this); } });
    const delivered: number[] = [];
    track.onReceiveRtp.subscribe((rtp) => delivered.push(rtp.header.sequenceNumber));
    const packet = (seq: number) => new RtpPacket(new RtpHeader({ ssrc: 5, payloadType: 111, sequenceNumber: seq, timestamp: seq * 960 }), Buffer.alloc(10));
    try {
      for (let seq = 0; seq < 50; seq++) receiver.handleRtpBySsrc(packet(seq), {});
      expect(delivered).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(asked).toBe(1);
      expect(receiver.receiverTWCC).toBeUndefined();
      receiver.prepareReceive({ codecs: [opus([useTWCC()])], encodings: [] } as never);
      receiver.handleRtpBySsrc(packet(50), {});
      expect(asked).toBeGreaterThan(1);
      expect(receiver.receiverTWCC).toBeDefined();
      expect(delivered.at(-1)).toBe(50);
    } finally {
      receiver.stop();
    }
  });
});

describe('werift UdpTransport (an IP literal skips dns.lookup once bound)', () => {
  const dns = require('node:dns') as typeof import('node:dns');
  const realLookup = dns.lookup;
  let lookups: string[] = [];
  const transports: UdpTransport[] = [];
  afterEach(async () => {
    dns.lookup = realLookup;
    syncBuiltinESMExports();
    await Promise.all(transports.splice(0).map((t) => t.close()));
  });

  it('binds (its lookup stays asynchronous), sends to an IP without a lookup, and still resolves host names', async () => {
    lookups = [];
    dns.lookup = ((host: string, ...rest: unknown[]) => {
      lookups.push(host);
      return (realLookup as (...a: unknown[]) => unknown)(host, ...rest);
    }) as typeof dns.lookup;
    syncBuiltinESMExports(); // werift imports lookup from node:dns as an ES module binding
    const a = await UdpTransport.init('udp4', { interfaceAddresses: { udp4: '127.0.0.1' } });
    const b = await UdpTransport.init('udp4', { interfaceAddresses: { udp4: '127.0.0.1' } });
    transports.push(a, b);
    expect(lookups).toContain('127.0.0.1'); // bind resolved its address the usual way
    const got: string[] = [];
    b.onData = (data: Buffer) => got.push(data.toString());
    lookups = [];
    for (let i = 0; i < 20; i++) await a.send(Buffer.from(`ip ${i}`), ['127.0.0.1', b.port]);
    await waitUntil(() => got.length === 20, 2000, '20 datagrams');
    expect(lookups).toEqual([]);
    await a.send(Buffer.from('by name'), ['localhost', b.port]);
    await waitUntil(() => got.includes('by name'), 2000, 'the datagram sent by name');
    expect(lookups).toContain('localhost');
    expect(got.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => `ip ${i}`));
  });
});
