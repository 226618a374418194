// The wake gate in the real Uplink (real Opus encoder): nothing of the microphone on the wire while closed, the
// engine fed every frame, the pre-roll sent first and drained at twice real time, and the silent keep-alive.
import { describe, expect, it } from 'vitest';
import type { CaptureDevice } from '../../../src/agent/audio/audioDevice.js';
import type { MicStage } from '../../../src/agent/audio/micStages.js';
import { KEEP_ALIVE_MS, Uplink } from '../../../src/agent/audio/uplink.js';
import { WakeGate } from '../../../src/agent/audio/wakeGate.js';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../../src/common/audio/opusCodec.js';

/** A capture device the test feeds frame by frame, with the capture time it chooses (20 ms apart). */
function feedableCapture(): CaptureDevice & { feed(pcm: Int16Array, atNs: bigint): void } {
  let onFrame: ((f: Int16Array, at: bigint) => void) | undefined;
  return {
    start: async (cb) => void (onFrame = cb),
    stop: async () => void (onFrame = undefined),
    feed: (pcm, at) => onFrame?.(pcm, at),
  };
}

/** Frame number n: every sample n (so the stage after the gate can tell which frame it got). */
const numbered = (n: number) => new Int16Array(960).fill(n);
const T0 = 1_000_000_000n;
const at = (n: number) => T0 + BigInt(n) * 20_000_000n;

/** SCRIPTED wake word engine (a stand-in for the real one): records what it is fed. */
function recordingEngine() {
  const fed: number[] = [];
  return { fed, feed: (pcm: Int16Array) => void fed.push(pcm[0]) };
}

async function rig(preRollMs: number) {
  const capture = feedableCapture();
  const engine = recordingEngine();
  const gate = new WakeGate({ preRollMs, maxDetectLatencyMs: 500, engine });
  const after: number[] = [];
  const tag: MicStage = { process: (f) => (after.push(f.pcm[0]), f) };
  const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [gate, tag] });
  const sent: { opus: Buffer; samples: number }[] = [];
  await uplink.start((opus, samples) => void sent.push({ opus, samples }));
  let n = 0;
  const feed = (count: number) => {
    for (let i = 0; i < count; i++, n++) capture.feed(numbered(n), at(n));
  };
  return { gate, engine, uplink, sent, after, feed, frameNo: () => n };
}

describe('WakeGate', () => {
  it('closed: nothing is encoded or sent, and the wake word engine hears every frame', async () => {
    const r = await rig(300);
    r.feed(40);
    expect(r.sent).toEqual([]);
    expect(r.after).toEqual([]);
    expect(r.engine.fed).toEqual([...Array(40).keys()]);
    expect(r.uplink.stats.held).toBe(40);
    await r.uplink.stop();
  });

  it('without a call (no sink) the engine still hears every frame, even with the gate open; nothing is encoded', async () => {
    const capture = feedableCapture();
    const engine = recordingEngine();
    const gate = new WakeGate({ preRollMs: 100, maxDetectLatencyMs: 500, engine });
    const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [gate] });
    await uplink.start(undefined);
    for (let n = 0; n < 10; n++) capture.feed(numbered(n), at(n));
    gate.openFrom(at(5));
    for (let n = 10; n < 20; n++) capture.feed(numbered(n), at(n));
    expect(engine.fed).toEqual([...Array(20).keys()]);
    expect(uplink.stats.packets).toBe(0);
    expect(uplink.stats.droppedNoSink).toBe(10); // the frames the open gate passed, dropped for want of a call
    await uplink.stop();
  });

  it('opened from the end of the wake word minus the pre-roll: those frames go first, then the live ones, at most two per captured frame', async () => {
    const r = await rig(300);
    r.feed(50); // frames 0..49; say the wake word ended at frame 40's capture, heard 10 frames later
    r.gate.openFrom(at(40) - 300_000_000n); // 300 ms = 15 frames before: frames 25..49 are the backlog
    expect(r.gate.backlog).toBe(25);
    r.feed(30); // frames 50..79 captured while the backlog drains
    // each captured frame sends two: the oldest waiting, then one more; in order, none lost, none twice
    expect(r.after).toEqual([...Array(55).keys()].map((i) => i + 25));
    expect(r.sent.length).toBe(55);
    expect(r.gate.backlog).toBe(0);
    r.feed(3); // caught up: live, one per frame
    expect(r.after.slice(-3)).toEqual([80, 81, 82]);
    expect(r.sent.length).toBe(58);
    expect(r.engine.fed.length).toBe(83); // fed while open too
    await r.uplink.stop();
  });

  it('a pre-roll older than the ring holds starts at the oldest frame kept; no fromNs sends only live audio', async () => {
    const r = await rig(100); // ring: (100 + 500) ms / 20 + 2 = 32 frames
    r.feed(100);
    r.gate.openFrom(0n);
    expect(r.gate.backlog).toBe(31);
    r.gate.close();
    r.feed(1);
    r.gate.openFrom();
    r.feed(2);
    expect(r.after).toEqual([101, 102]);
    await r.uplink.stop();
  });

  it('closing drops the backlog and holds the microphone again', async () => {
    const r = await rig(300);
    r.feed(20);
    r.gate.openFrom(at(5));
    r.feed(1);
    r.gate.close();
    r.feed(10);
    expect(r.after).toEqual([5, 6]);
    expect(r.gate.backlog).toBe(0);
    await r.uplink.stop();
  });

  it('keep-alive: while nothing is sent, one packet of digital silence per KEEP_ALIVE_MS, its RTP time covering the gap', async () => {
    const r = await rig(300);
    const t = process.hrtime.bigint();
    expect(r.uplink.keepAlive(t)).toBe(true); // nothing sent yet: the first one goes at once
    expect(r.uplink.keepAlive(t + 100_000_000n)).toBe(false);
    expect(r.uplink.keepAlive(t + BigInt(KEEP_ALIVE_MS) * 1_000_000n + 1n)).toBe(false); // the clock of the last send is real time
    const later = process.hrtime.bigint() + 1_000_000_000n;
    expect(r.uplink.keepAlive(later)).toBe(true);
    expect(r.sent.map((p) => p.samples)).toEqual([960, 50 * 960]);
    const decoder = new OpusFrameDecoder();
    for (const p of r.sent) expect(Math.max(...decoder.decode(p.opus).map(Math.abs))).toBe(0);
    expect(r.uplink.stats.keepAlives).toBe(2);
    await r.uplink.stop();
  });
});
