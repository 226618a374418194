// The encoder thread that turns assistant speech into Opus ahead of playback: real worker thread, real Opus
// (decoded back and checked), a crash of the thread mid-utterance, and bad input.
import { afterEach, describe, expect, it } from 'vitest';
import { OpusFrameDecoder } from '../../../src/common/audio/opusCodec.js';
import { dominantFrequency, rmsDbfs, sineWave } from '../../../src/common/audio/signal.js';
import { OutgoingAudio, opusSilencePacket } from '../../../src/companion/realtime/outgoingAudio.js';
import { ENCODER_THREAD_NICE, ThreadSpeechEncoder, type EncodedBatch } from '../../../src/companion/realtime/speechEncoder.js';
import type { RtpPacket } from 'werift';
import { threadScheduling } from '../../support/threadPriority.js';

let encoder: ThreadSpeechEncoder | undefined;
afterEach(async () => {
  await encoder?.close();
  encoder = undefined;
});

/** A sink that collects batches and lets a test wait for the utterance's last one. */
function collector() {
  const batches: EncodedBatch[] = [];
  const lost: { gen: number; consumed: number; last: boolean }[] = [];
  let wake: (() => void) | undefined;
  const sink = {
    delivered: (b: EncodedBatch) => {
      batches.push(b);
      wake?.();
    },
    lost: (gen: number, consumed: number, last: boolean) => {
      lost.push({ gen, consumed, last });
      wake?.();
    },
  };
  const until = async (done: () => boolean): Promise<void> => {
    while (!done()) await new Promise<void>((r) => (wake = r));
  };
  return { sink, batches, lost, until };
}

function decodeAll(packets: Buffer[]): Int16Array {
  const dec = new OpusFrameDecoder();
  const pcm = new Int16Array(packets.length * 960);
  packets.forEach((p, i) => pcm.set(dec.decode(p), i * 960));
  return pcm;
}

describe('ThreadSpeechEncoder', () => {
  it('runs its thread at nice 19, so the event loop that paces the frames always wins the core', async () => {
    const before = new Set(threadScheduling().filter((t) => t.nice === ENCODER_THREAD_NICE).map((t) => t.tid));
    encoder = new ThreadSpeechEncoder();
    const c = collector();
    encoder.open(c.sink).write(1, 48_000, new Int16Array(960), true);
    await c.until(() => c.batches.some((b) => b.last));
    const lowered = threadScheduling().filter((t) => t.nice === ENCODER_THREAD_NICE && !before.has(t.tid));
    expect(ENCODER_THREAD_NICE).toBe(19);
    expect(lowered.length).toBeGreaterThanOrEqual(1);
    expect(threadScheduling().find((t) => t.tid === process.pid)?.nice).toBe(0); // the event loop keeps its priority
  });

  it('encodes 22.05 kHz speech into 20 ms 48 kHz Opus packets in its worker thread', async () => {
    encoder = new ThreadSpeechEncoder();
    const c = collector();
    const ch = encoder.open(c.sink);
    const tone = sineWave(440, 22_050, 0.5, 0.4);
    ch.write(1, 22_050, tone.slice(0, 7000), false);
    ch.write(1, 22_050, tone.slice(7000), true);
    await c.until(() => c.batches.some((b) => b.last));
    expect(encoder.threadId).toBeGreaterThan(0);
    const packets = c.batches.flatMap((b) => b.packets);
    expect(packets.length).toBe(25);
    expect(c.batches.reduce((n, b) => n + b.consumed, 0)).toBe(tone.length);
    const pcm = decodeAll(packets).subarray(960 * 5);
    expect(rmsDbfs(pcm)).toBeGreaterThan(-15);
    expect(Math.abs(dominantFrequency(pcm, 48_000) - 440)).toBeLessThan(15);
  });

  it('survives its thread crashing: in-flight audio is reported lost, the next write starts a new thread', async () => {
    encoder = new ThreadSpeechEncoder();
    const c = collector();
    const ch = encoder.open(c.sink);
    ch.write(1, 48_000, new Int16Array(960), false);
    await c.until(() => c.batches.length === 1);
    const first = encoder.threadId;
    const crashed = encoder.crashForTest();
    ch.write(1, 48_000, sineWave(300, 48_000, 2, 0.3), false); // queued behind the crash: never encoded
    await crashed;
    await c.until(() => c.lost.length === 1);
    expect(c.lost[0]).toEqual({ gen: 1, consumed: 96_000, last: false });
    ch.write(2, 48_000, sineWave(300, 48_000, 0.1, 0.3), true);
    await c.until(() => c.batches.some((b) => b.gen === 2 && b.last));
    expect(encoder.starts).toBe(2);
    expect(encoder.threadId).not.toBe(first);
    expect(c.batches.filter((b) => b.gen === 2).flatMap((b) => b.packets)).toHaveLength(5);
  });

  it('bad input (an unsupported sample rate) is reported lost for that write, and the thread keeps working', async () => {
    encoder = new ThreadSpeechEncoder();
    const c = collector();
    const ch = encoder.open(c.sink);
    ch.write(1, 7, new Int16Array(100), true);
    await c.until(() => c.lost.length === 1);
    expect(c.lost[0]).toEqual({ gen: 1, consumed: 100, last: true });
    ch.write(2, 16_000, new Int16Array(320), true);
    await c.until(() => c.batches.length === 1);
    expect(c.batches[0].packets).toHaveLength(1);
    expect(encoder.starts).toBe(1);
  });

  it('a thread that cannot start at all (no entry file) turns into encoding on the event loop', async () => {
    encoder = new ThreadSpeechEncoder('noSuchEncoderWorker');
    const c = collector();
    const ch = encoder.open(c.sink);
    ch.write(1, 48_000, new Int16Array(960), false);
    await c.until(() => c.lost.length === 1); // the write that went to the dead thread
    expect(encoder.inlineFallback).toBe(true);
    ch.write(2, 48_000, new Int16Array(1920), true);
    expect(c.batches).toHaveLength(1); // encoded synchronously now
    expect(c.batches[0]).toMatchObject({ gen: 2, consumed: 1920, last: true });
    expect(c.batches[0].packets).toHaveLength(2);
  });
});

describe('OutgoingAudio with the encoder thread', () => {
  it('plays speech encoded ahead of time, then reports the utterance done; a cut drops late batches', async () => {
    encoder = new ThreadSpeechEncoder();
    const sent: RtpPacket[] = [];
    const done: string[] = [];
    const out = new OutgoingAudio((p) => sent.push(p), (id) => done.push(id), encoder);
    out.begin('resp_1', 22_050);
    out.write(sineWave(440, 22_050, 0.3, 0.4));
    out.finish();
    expect(out.queuedMs).toBeCloseTo(300, 0);
    // the thread's packets are back, and the batch that marks the utterance's end (it may come on its own)
    while (out.readyFrames < 15 || !out.encodedAll) await new Promise((r) => setTimeout(r, 5));
    expect(out.queuedMs).toBe(300);
    for (let i = 0; i < 16; i++) out.tick();
    const speech = sent.filter((p) => p.payload !== opusSilencePacket());
    expect(speech).toHaveLength(15);
    expect(done).toEqual(['resp_1']);

    // a cut while the encoder still works on the audio: nothing of it is ever played
    out.begin('resp_2', 48_000);
    out.write(sineWave(300, 48_000, 3, 0.4));
    out.cut();
    await new Promise((r) => setTimeout(r, 200));
    const before = sent.length;
    for (let i = 0; i < 5; i++) out.tick();
    expect(sent.slice(before).every((p) => p.payload === opusSilencePacket())).toBe(true);
    expect(out.queuedMs).toBe(0);
    out.close();
  });
});
