// The real Opus codec (@discordjs/opus): round trip, concealment of lost frames, corrupt packets.
import { describe, expect, it } from 'vitest';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../../src/agent/audio/opusCodec.js';
import { dominantFrequency, rms, tone } from '../../support/audioCapture.js';

const frames = (samples: Int16Array) =>
  Array.from({ length: Math.floor(samples.length / 960) }, (_, i) => samples.subarray(i * 960, (i + 1) * 960));

describe('Opus codec', () => {
  it('round-trips a 440 Hz tone at the configured bitrate', () => {
    const enc = new OpusFrameEncoder({ bitrate: 28_000 });
    expect(enc.bitrate).toBe(28_000);
    const dec = new OpusFrameDecoder();
    const input = tone(440, 1000);
    const out = new Int16Array(input.length);
    let bytes = 0;
    frames(input).forEach((f, i) => {
      const p = enc.encode(f);
      bytes += p.length;
      out.set(dec.decode(p), i * 960);
    });
    expect(dominantFrequency(out)).toBe(440);
    expect(rms(out, 4800)).toBeGreaterThan(0.7 * rms(input));
    // ~28 kbit/s plus FEC: between 2.5 and 6 kB for one second
    expect(bytes).toBeGreaterThan(2500);
    expect(bytes).toBeLessThan(6000);
  });

  it('conceals lost frames: the first continues the tone, a long loss fades out', () => {
    const enc = new OpusFrameEncoder();
    const dec = new OpusFrameDecoder();
    const input = tone(440, 600);
    const packets = frames(input).map((f) => enc.encode(f));
    for (let i = 0; i < 20; i++) dec.decode(packets[i]);
    const first = dec.conceal();
    expect(first.length).toBe(960);
    expect(rms(first)).toBeGreaterThan(0.3 * rms(input));
    const concealed = [first];
    for (let i = 0; i < 7; i++) concealed.push(dec.conceal());
    expect(rms(concealed[7])).toBeLessThan(0.1 * rms(first));
    // Decoding resumes normally afterwards.
    const back = dec.decode(packets[28]);
    expect(back.length).toBe(960);
    expect(dec.stats).toMatchObject({ decoded: 21, concealed: 8 });
  });

  it('conceals a corrupt packet instead of throwing, and PLC before any packet is silence', () => {
    const dec = new OpusFrameDecoder();
    expect(rms(dec.conceal())).toBe(0);
    const frame = dec.decode(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00]));
    expect(frame.length).toBe(960);
    expect(dec.stats.corrupt + dec.stats.decoded).toBe(1);
  });

  it('rejects wrong frame sizes and settings with clear errors', () => {
    const enc = new OpusFrameEncoder();
    expect(() => enc.encode(new Int16Array(480))).toThrow(/960 samples/);
    expect(() => new OpusFrameEncoder({ bitrate: 100 })).toThrow(RangeError);
    expect(() => new OpusFrameEncoder({ packetLossPercent: 101 })).toThrow(RangeError);
  });
});
