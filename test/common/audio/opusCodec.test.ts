// The real Opus codec (@discordjs/opus encoding, Debian's libopus decoding): round trip, concealment and FEC recovery of lost frames, corrupt packets.
import { describe, expect, it } from 'vitest';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../../src/common/audio/opusCodec.js';
import { dominantFrequency, rms, tone } from '../../support/audioCapture.js';

const frames = (samples: Int16Array) =>
  Array.from({ length: Math.floor(samples.length / 960) }, (_, i) => samples.subarray(i * 960, (i + 1) * 960));

/** Voice-like: a 140 Hz voice with harmonics, vibrato and syllable-rate amplitude changes, `seconds` long. */
function voiceLike(seconds: number): Int16Array {
  const voice = new Int16Array(48_000 * seconds);
  for (let i = 0; i < voice.length; i++) {
    const t = i / 48_000;
    const f0 = 140 + 20 * Math.sin(2 * Math.PI * 3 * t);
    let v = 0;
    for (let h = 1; h < 12; h++) v += Math.sin(2 * Math.PI * f0 * h * t + h) / h;
    voice[i] = Math.round(6000 * v * (0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * t)));
  }
  return voice;
}

/** Signal-to-error ratio of `got` against `ref`, in dB. */
function snrDb(ref: Int16Array, got: Int16Array): number {
  let s = 0;
  let e = 0;
  for (let i = 0; i < ref.length; i++) {
    s += ref[i] * ref[i];
    e += (ref[i] - got[i]) ** 2;
  }
  return 10 * Math.log10(s / Math.max(e, 1));
}

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

  // The decoder conceals whatever the far end sends: SILK (the companion server encodes with FEC, so Opus picks
  // SILK for speech) and CELT (the agent's own encoding on a clean link).
  for (const [mode, opts, fadeTo] of [
    ['SILK', { packetLossPercent: 10 }, 0.1],
    ['CELT', {}, 0.6],
  ] as const) {
    it(`conceals lost ${mode} frames: the first continues the tone, a long loss fades out`, () => {
      const enc = new OpusFrameEncoder(opts);
      const dec = new OpusFrameDecoder();
      const input = tone(440, 600);
      const packets = frames(input).map((f) => enc.encode(f));
      expect(packets[10][0] >> 3 >= 16).toBe(mode === 'CELT');
      for (let i = 0; i < 20; i++) dec.decode(packets[i]);
      const first = dec.conceal();
      expect(first.length).toBe(960);
      expect(rms(first)).toBeGreaterThan(0.3 * rms(input));
      const concealed = [first];
      for (let i = 0; i < 7; i++) concealed.push(dec.conceal());
      expect(rms(concealed[7])).toBeLessThan(fadeTo * rms(first));
      // Decoding resumes normally afterwards.
      const back = dec.decode(packets[28]);
      expect(back.length).toBe(960);
      expect(dec.stats).toMatchObject({ decoded: 21, concealed: 8 });
    });
  }

  it('regression (a reconnect soak): reset() made a new native codec each time (two per reconnect, ~50 KB of C memory each until a GC); it resets in place to exactly a fresh decoder', () => {
    const enc = new OpusFrameEncoder({ packetLossPercent: 10 });
    const streamA = frames(tone(300, 400)).map((f) => Buffer.from(enc.encode(f)));
    const enc2 = new OpusFrameEncoder();
    const streamB = frames(tone(700, 400)).map((f) => Buffer.from(enc2.encode(f)));
    const used = new OpusFrameDecoder();
    for (const p of streamA) used.decode(p);
    used.conceal(); // mid-loss state too
    const native = (used as unknown as { native: object }).native;
    used.reset();
    expect((used as unknown as { native: object }).native).toBe(native); // the same native object
    const fresh = new OpusFrameDecoder();
    for (const p of streamB) expect(used.decode(p)).toEqual(fresh.decode(p)); // bit-exact
    expect(used.conceal()).toEqual(fresh.conceal());
  });

  it('regression: a lost frame is recovered from the next packet\'s in-band FEC (@discordjs/opus could only conceal it)', () => {
    // what a far end sends once this device reports loss: SILK with FEC (libwebrtc; the agent's own encoder too)
    const enc = new OpusFrameEncoder({ packetLossPercent: 20 });
    const packets = frames(voiceLike(3)).map((f) => Buffer.from(enc.encode(f)));
    const reference = new OpusFrameDecoder(); // no loss: what each frame decodes to
    const want = packets.map((p) => reference.decode(p));
    const lost = (i: number) => i >= 10 && i % 7 === 3; // one packet in seven, each alone
    const withFec = new OpusFrameDecoder();
    const plcOnly = new OpusFrameDecoder();
    const fecSnr: number[] = [];
    const plcSnr: number[] = [];
    for (let i = 0; i + 1 < packets.length; i++) {
      if (!lost(i)) {
        withFec.decode(packets[i]);
        plcOnly.decode(packets[i]);
        continue;
      }
      fecSnr.push(snrDb(want[i], withFec.recover(packets[i + 1]))); // the jitter buffer holds the next one already
      plcSnr.push(snrDb(want[i], plcOnly.conceal()));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(fecSnr.length).toBeGreaterThanOrEqual(18);
    expect(mean(fecSnr)).toBeGreaterThan(mean(plcSnr) + 6);
    expect(withFec.stats).toMatchObject({ recovered: fecSnr.length, concealed: 0, corrupt: 0 });
    // without FEC in the stream (CELT: the agent's own encoding on a clean link) recover() conceals, as conceal() does
    const celt = new OpusFrameEncoder();
    const cp = frames(voiceLike(1)).map((f) => Buffer.from(celt.encode(f)));
    const a = new OpusFrameDecoder();
    const b = new OpusFrameDecoder();
    for (let i = 0; i < 20; i++) (a.decode(cp[i]), b.decode(cp[i]));
    expect(a.recover(cp[21])).toEqual(b.conceal());
  });

  it('conceals a corrupt packet instead of throwing, and PLC before any packet is silence', () => {
    const dec = new OpusFrameDecoder();
    expect(rms(dec.conceal())).toBe(0);
    const frame = dec.decode(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00]));
    expect(frame.length).toBe(960);
    expect(dec.stats.corrupt + dec.stats.decoded).toBe(1);
    // an empty packet is a lost frame: 20 ms concealed (libopus would conceal 120 ms for it at once)
    const concealed = dec.stats.concealed;
    expect(dec.decode(Buffer.alloc(0)).length).toBe(960);
    expect(dec.stats.concealed).toBe(concealed + 1);
  });

  it('rejects wrong frame sizes and settings with clear errors', () => {
    const enc = new OpusFrameEncoder();
    expect(() => enc.encode(new Int16Array(480))).toThrow(/960 samples/);
    expect(() => new OpusFrameEncoder({ bitrate: 100 })).toThrow(RangeError);
    expect(() => new OpusFrameEncoder({ packetLossPercent: 101 })).toThrow(RangeError);
    for (const bad of [-1, 101, Number.NaN]) expect(() => enc.setExpectedLoss(bad)).toThrow(/packet loss percent out of range/);
    expect(enc.expectedLoss).toBe(0);
  });

  it('encodes CELT without FEC on a clean link, and SILK with in-band FEC once loss is expected', () => {
    const voice = voiceLike(2);
    const enc = new OpusFrameEncoder();
    const dec = new OpusFrameDecoder();
    /** TOC configurations used (RFC 6716 3.1: 0-11 SILK, 12-15 hybrid, 16-31 CELT), and how many SILK packets
     *  carry LBRR (the FEC copy): its flag is the second header bit of the SILK layer (RFC 6716 4.2.3). */
    const run = (from: number) => {
      const configs = new Set<number>();
      let lbrr = 0;
      let silk = 0;
      const out: Int16Array[] = [];
      for (let i = from; i < from + 25; i++) {
        const p = enc.encode(voice.subarray(i * 960, (i + 1) * 960));
        const config = p[0] >> 3;
        configs.add(config);
        if (config < 12 && i >= from + 5) {
          silk++;
          if (p[1] & 0x40) lbrr++;
        }
        out.push(dec.decode(p));
      }
      return { configs: [...configs], lbrr, silk, out };
    };
    const clean = run(0);
    expect(Math.min(...clean.configs)).toBeGreaterThanOrEqual(16);
    // CELT at most super-wideband (configurations 24-27; full band would be 28-31): the bits stay below 12 kHz
    expect(Math.max(...clean.configs)).toBeLessThanOrEqual(27);
    enc.setExpectedLoss(10);
    expect(enc.expectedLoss).toBe(10);
    const lossy = run(25);
    expect(Math.max(...lossy.configs.slice(1))).toBeLessThan(16); // after the one transition frame
    expect(lossy.silk).toBeGreaterThanOrEqual(18);
    expect(lossy.lbrr).toBeGreaterThanOrEqual(Math.floor(0.8 * lossy.silk));
    // Either way the voice comes through: its fundamental is the strongest part of the decoded signal.
    for (const r of [clean, lossy]) {
      const frames = r.out.slice(5);
      const pcm = new Int16Array(frames.length * 960);
      frames.forEach((f, i) => pcm.set(f, i * 960));
      expect(rms(pcm)).toBeGreaterThan(0.3 * rms(voice));
    }
    enc.setExpectedLoss(0);
    const again = run(50);
    expect(Math.min(...again.configs.slice(1))).toBeGreaterThanOrEqual(16);
  });
});
