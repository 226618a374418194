// The outgoing track, driven slot by slot (the pacer's job, done by hand here): silence when idle, speech from
// the synthesiser's sample rate encoded to real Opus, the end-of-utterance signal, cuts, and RTP numbering.
import { describe, expect, it } from 'vitest';
import type { RtpPacket } from 'werift';
import { OpusFrameDecoder } from '../../../src/common/audio/opusCodec.js';
import { rmsDbfs, sineWave, dominantFrequency } from '../../../src/common/audio/signal.js';
import { OutgoingAudio, opusSilencePacket } from '../../../src/companion/realtime/outgoingAudio.js';
import { FramePacer } from '../../../src/companion/realtime/framePacer.js';

function track() {
  const sent: RtpPacket[] = [];
  const done: string[] = [];
  const out = new OutgoingAudio((p) => sent.push(p), (id) => done.push(id));
  return { out, sent, done };
}

describe('OutgoingAudio', () => {
  it('sends the shared Opus silence packet every slot when there is nothing to say, numbering RTP', () => {
    const { out, sent } = track();
    for (let i = 0; i < 5; i++) out.tick();
    expect(sent).toHaveLength(5);
    for (const p of sent) expect(p.payload).toBe(opusSilencePacket());
    for (let i = 1; i < 5; i++) {
      expect(sent[i].header.sequenceNumber).toBe((sent[i - 1].header.sequenceNumber + 1) & 0xffff);
      expect(sent[i].header.timestamp).toBe((sent[i - 1].header.timestamp + 960) >>> 0);
    }
    expect(rmsDbfs(new OpusFrameDecoder().decode(sent[0].payload))).toBeLessThan(-80);
  });

  it('plays 22.05 kHz speech as 48 kHz Opus, marks the talkspurt, reports the end once played', async () => {
    const { out, sent, done } = track();
    const tone = sineWave(440, 22_050, 0.5, 0.4); // 500 ms
    out.begin('resp_1', 22_050);
    out.write(tone.slice(0, 5000));
    out.write(tone.slice(5000));
    out.finish();
    expect(out.queuedMs).toBeCloseTo(500, 0);
    for (let i = 0; i < 30; i++) out.tick();
    const speech = sent.filter((p) => p.payload !== opusSilencePacket());
    expect(speech.length).toBe(Math.ceil(500 / 20));
    expect(speech[0].header.marker).toBe(true);
    expect(speech[1].header.marker).toBe(false);
    expect(done).toEqual(['resp_1']);
    expect(out.speaking).toBe(false);
    const dec = new OpusFrameDecoder();
    const pcm = new Int16Array(960 * 10);
    for (let i = 0; i < 10; i++) pcm.set(dec.decode(speech[5 + i].payload), i * 960);
    expect(rmsDbfs(pcm)).toBeGreaterThan(-15);
    expect(Math.abs(dominantFrequency(pcm, 48_000) - 440)).toBeLessThan(15);
  });

  it('cut() drops queued speech at once, no end-of-utterance signal, and releases waiting producers', async () => {
    const { out, sent, done } = track();
    out.begin('resp_2', 48_000);
    out.write(sineWave(300, 48_000, 5, 0.4));
    for (let i = 0; i < 3; i++) out.tick();
    const waiting = out.waitForRoom(1000);
    const droppedMs = out.cut();
    await waiting;
    expect(droppedMs).toBeCloseTo(5000 - 60, 0);
    const before = sent.length;
    for (let i = 0; i < 3; i++) out.tick();
    expect(sent.slice(before).every((p) => p.payload === opusSilencePacket())).toBe(true);
    expect(done).toEqual([]);
    expect(out.stats.cutFrames).toBeGreaterThan(240);
  });

  it('waitForRoom resolves once playback has drained the queue below the mark', async () => {
    const { out } = track();
    out.begin('resp_3', 48_000);
    out.write(new Int16Array(48_000)); // 1 s
    let resolved = false;
    const p = out.waitForRoom(500).then(() => (resolved = true));
    for (let i = 0; i < 24; i++) out.tick();
    await Promise.resolve();
    expect(resolved).toBe(false);
    for (let i = 0; i < 2; i++) out.tick();
    await p;
    expect(out.queuedMs).toBeLessThan(500);
  });
});

describe('FramePacer', () => {
  it('serves every registered stream each slot and stops its timer when the last one leaves', async () => {
    const pacer = new FramePacer();
    let a = 0;
    let b = 0;
    const sa = { tick: () => a++ };
    const sb = { tick: () => b++ };
    pacer.add(sa);
    pacer.add(sb);
    await new Promise((r) => setTimeout(r, 200));
    pacer.remove(sb);
    const bAt = b;
    await new Promise((r) => setTimeout(r, 100));
    expect(a).toBeGreaterThan(bAt);
    expect(b).toBe(bAt);
    expect(pacer.stats.frames).toBe(a + b);
    pacer.remove(sa);
    expect(pacer.size).toBe(0);
    const aAt = a;
    await new Promise((r) => setTimeout(r, 100));
    expect(a).toBe(aAt);
  });
});
