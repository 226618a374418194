import { describe, expect, it } from 'vitest';
import type { CaptureDevice } from '../../../src/agent/audio/audioDevice.js';
import { EchoGate } from '../../../src/agent/audio/echoGate.js';
import { echoGateStage, type MicStage } from '../../../src/agent/audio/micStages.js';
import { Uplink } from '../../../src/agent/audio/uplink.js';
import { OpusFrameDecoder, OpusFrameEncoder } from '../../../src/common/audio/opusCodec.js';

/** A capture device the test feeds frame by frame (what the sound card's callback does). */
function feedableCapture(): CaptureDevice & { feed(pcm: Int16Array): void } {
  let onFrame: ((f: Int16Array, at: bigint) => void) | undefined;
  return {
    start: async (cb) => void (onFrame = cb),
    stop: async () => void (onFrame = undefined),
    feed: (pcm) => onFrame?.(pcm, process.hrtime.bigint()),
  };
}

const loud = () => new Int16Array(960).fill(8000);

describe('the microphone stages', () => {
  it('run in order on every frame, can replace or hold it, and the encoder gets what comes out', async () => {
    const capture = feedableCapture();
    const seen: string[] = [];
    const tag = (name: string): MicStage => ({ process: (f) => (seen.push(`${name}:${f.pcm[0]}`), f) });
    const halve: MicStage = { process: (f) => ((f.pcm = f.pcm.map((v) => v >> 1)), f) };
    let holding = false;
    const hold: MicStage = { process: (f) => (holding ? undefined : f) };
    const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [tag('a'), halve, tag('b'), hold] });
    const sent: Buffer[] = [];
    await uplink.start((opus, samples) => (expect(samples).toBe(960), sent.push(opus)));
    capture.feed(loud());
    holding = true;
    capture.feed(loud());
    expect(seen).toEqual(['a:8000', 'b:4000', 'a:8000', 'b:4000']);
    expect([sent.length, uplink.stats.held, uplink.stats.packets]).toEqual([1, 1, 1]);
    await uplink.stop();
  });

  it('the echo gate stage sends silence while the assistant is audible (half duplex), the microphone otherwise', async () => {
    const capture = feedableCapture();
    let now = 0;
    const gate = new EchoGate({ mode: 'half-duplex', tailMs: 100, nowMs: () => now });
    const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [echoGateStage(gate)] });
    const sent: Buffer[] = [];
    await uplink.start((opus) => sent.push(opus));
    const level = (p: Buffer) => Math.max(...new OpusFrameDecoder().decode(p).map(Math.abs));
    gate.notePlayback(loud());
    capture.feed(loud()); // during playback + tail: silence
    now = 1000;
    capture.feed(loud()); // long after: the microphone
    expect(level(sent[0])).toBe(0);
    expect(level(sent[1])).toBeGreaterThan(1000);
    expect(gate.stats.framesSilenced).toBe(1);
    await uplink.stop();
  });
});
