import { describe, expect, it } from 'vitest';
import type { CaptureDevice } from '../../../src/agent/audio/audioDevice.js';
import { EchoGate } from '../../../src/agent/audio/echoGate.js';
import { echoCancelStage, echoGateStage, type MicStage } from '../../../src/agent/audio/micStages.js';
import { EchoCanceller } from '../../../src/agent/audio/echoCanceller.js';
import { EchoReference } from '../../../src/agent/audio/echoReference.js';
import { createLogger } from '../../../src/common/logger.js';
import { SAMPLE_RATE } from '../../../src/protocol/media.js';
import { speechClip } from '../../support/speechWav.js';
import { atLevel, bestCorrelation, buildRoom, farEndSpeech, runCall, type EchoPathSegment } from '../../support/syntheticRoom.js';
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

describe('the echo canceller stage and its fallback to the gate (audio.duplex auto)', () => {
  const S = SAMPLE_RATE;

  /** The agent's auto chain on the synthetic room: canceller stage, then the gate, on one simulated clock. */
  function autoChain(seconds: number, segments: EchoPathSegment[], nearEnd?: Int16Array, farEnd = farEndSpeech(seconds), echoGainDb = -6) {
    const far = atLevel(farEnd, -20);
    const room = buildRoom({ farEnd: far, delayMs: segments, echoGainDb, noiseDbfs: -65, nearEnd });
    const clock = { ns: 0n };
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } });
    const reference = new EchoReference({ rate: 16_000, nowNs: () => clock.ns });
    const aec = new EchoCanceller({ reference, logger });
    const gate = new EchoGate({ mode: 'half-duplex', tailMs: 200, nowMs: () => Number(clock.ns) / 1e6 });
    const stage = echoCancelStage(aec, gate);
    const modes: string[] = [];
    const spans: (number | undefined)[] = [];
    const measured: boolean[] = [];
    const tails: number[] = [];
    const both = {
      notePlayback: (f: Int16Array, q: number) => (reference.notePlayback(f, q), gate.notePlayback(f, q)),
    };
    const sent = runCall(far, room.mic, both, (pcm, capturedAtNs) => {
      const out = stage.process({ pcm, capturedAtNs })!;
      modes.push(gate.mode);
      spans.push(aec.echoSpanMs);
      measured.push(aec.echoPathMeasured);
      tails.push(gate.tailMs);
      return gate.filter(out.pcm, 0);
    }, clock);
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; state?: string; reason?: string }).filter((l) => /echo canceller: (converg|diverg)/.test(l.msg));
    aec.close();
    return { far, room, sent, modes, spans, measured, tails, logged };
  }

  const silent = (pcm: Int16Array, fromMs: number, toMs: number) => pcm.subarray((fromMs * S) / 1000, (toMs * S) / 1000).every((v) => v === 0);

  it('gates while not converged, opens once converged (the near end then reaches the peer over the far end), gates again while it re-converges after a delay change', () => {
    const near = new Int16Array(24 * S);
    const clip = atLevel(speechClip('Stop the story please, I want to hear the news.', { voice: 'kal', padBeforeMs: 0, padAfterMs: 0 }).pcm, -36);
    near.set(clip, 6 * S);
    const { sent, modes, logged, room } = autoChain(24, [{ fromSample: 0, delayMs: 87 }, { fromSample: 14 * S, delayMs: 150 }], near);
    // before convergence the far end plays and the gate sends silence
    expect(modes[25]).toBe('half-duplex');
    expect(silent(sent, 400, 700)).toBe(true);
    // converged: the user talking over the assistant is sent
    expect(modes[Math.floor(6000 / 20)]).toBe('full-duplex');
    expect(bestCorrelation(sent, room.near, 6 * S, 6 * S + clip.length).r).toBeGreaterThan(0.9);
    // the delay changed at 14 s: the filter now adds echo of its own (diverged) and/or the new delay is found
    // (converging): the gate either way, each change logged once with its reason; then converged again
    const states = logged.map((l) => l.state);
    expect(states[0]).toBe('converged');
    expect(states.at(-1)).toBe('converged');
    expect(states.slice(1, -1).length).toBeGreaterThan(0);
    expect(states.slice(1, -1).every((s) => s === 'converging' || s === 'diverged')).toBe(true);
    expect(logged.find((l) => l.state === 'converging')?.reason).toMatch(/echo path moved: 150 ms found|delay changed from 87 to 150/);
    expect(states.every((s, i) => i === 0 || s !== states[i - 1])).toBe(true);
    expect(modes.slice(700, 1200)).toContain('half-duplex');
    expect(modes.at(-1)).toBe('full-duplex');
  });

  const frameRms = (pcm: Int16Array, i: number) => Math.sqrt(pcm.subarray(i * 960, (i + 1) * 960).reduce((a, v) => a + v * v, 0) / 960);
  const dbfs = (rms: number) => 20 * Math.log10(rms / 32768);
  /** The far end in bursts: onMs of speech, then offMs of pause, for `seconds`. */
  function bursts(seconds: number, onMs: number, offMs: number) {
    const far = farEndSpeech(seconds);
    const period = ((onMs + offMs) * S) / 1000;
    for (let i = 0; i < far.length; i++) if (i % period >= (onMs * S) / 1000) far[i] = 0;
    return far;
  }

  it('regression: a speaker with more latency than the gate\'s tail (260 ms against 200) sent the end of every word\'s echo before convergence; the gate now holds for the measured echo path', () => {
    // the far end in bursts: 500 ms of speech, 500 ms of pause (longer than the configured tail and the measured one)
    const { sent, modes, spans, measured, tails } = autoChain(10, [{ fromSample: 0, delayMs: 260 }], undefined, bursts(10, 500, 500));
    const found = measured.indexOf(true);
    expect(found, 'the delay is found').toBeGreaterThan(0);
    // what the canceller measured, and the gate's tail from then on: the echo's delay and the room's tail
    expect(spans[found]).toBeGreaterThan(260 + 60);
    expect(spans[found]).toBeLessThan(260 + 120);
    expect(tails.slice(found).every((t) => t >= 260 + 60)).toBe(true);
    // not vacuous: frames the gate passed before convergence, after the delay was found (the pauses' ends)
    const passed = modes.map((m, i) => i).filter((i) => i >= found && modes[i] === 'half-duplex' && frameRms(sent, i) > 0);
    expect(passed.length, 'frames passed by the gate before convergence').toBeGreaterThan(5);
    // and none of them carries echo: the room's noise only (-65 dBFS; the echo is -26 dBFS)
    const loudest = Math.max(...passed.map((i) => frameRms(sent, i)));
    expect(dbfs(loudest), 'loudest frame passed before convergence, dBFS').toBeLessThan(-55);
  });

  it('regression: before the delay was found the gate held for its configured 200 ms only, and sent the end of each word\'s echo at up to -14 dBFS; it now holds for the longest path the canceller looks for', () => {
    // pauses longer than that longest path (595 ms), so the gate opens in each of them
    const { sent, modes, measured, tails } = autoChain(10, [{ fromSample: 0, delayMs: 260 }], undefined, bursts(10, 500, 1000));
    const found = measured.indexOf(true);
    expect(found, 'the delay is found').toBeGreaterThan(0);
    expect(tails.slice(0, found).every((t) => t === 595)).toBe(true);
    // not vacuous: frames the gate passed before the delay was found (the long pauses' ends)
    const passed = modes.map((m, i) => i).filter((i) => i < found && modes[i] === 'half-duplex' && frameRms(sent, i) > 0);
    expect(passed.length, 'frames passed by the gate before the delay was found').toBeGreaterThan(5);
    const loudest = Math.max(...passed.map((i) => frameRms(sent, i)));
    expect(dbfs(loudest), 'loudest frame passed before the delay was found, dBFS').toBeLessThan(-55);
  });

  it('a microphone that does not hear the speaker (a headset, a speaker across the room) is not gated for the longest path all call: after 5 s of the far end with no delay found, the configured tail', () => {
    // the echo 70 dB down: below the room's noise, nothing to measure
    const { measured, tails, spans } = autoChain(14, [{ fromSample: 0, delayMs: 87 }], undefined, bursts(14, 500, 500), -70);
    expect(measured.includes(true), 'no delay is found').toBe(false);
    expect(tails[50], 'the first second: the longest path').toBe(595);
    // the far end plays half the time: 5 s of it by about 10 s; the estimator looks one frame behind
    const back = spans.findIndex((d) => d === undefined);
    expect(back * 20, 'ms of the call when the gate goes back to its tail').toBeGreaterThan(9000);
    expect(back * 20, 'ms of the call when the gate goes back to its tail').toBeLessThan(12_500);
    expect(tails.slice(back).every((t) => t === 200)).toBe(true);
  });

  it('falls back to the gate when the canceller diverges (its output louder than the microphone), with the reason', () => {
    // from 8 s on the microphone no longer hears the speaker (moved away, muted): the adapted filter now adds
    // an echo of its own to what is sent
    const { modes, logged } = autoChain(14, [{ fromSample: 0, delayMs: 87 }, { fromSample: 8 * S, delayMs: 87, gainDb: -120 }]);
    expect(logged[0].state).toBe('converged');
    expect(logged.slice(1).map((l) => l.state)).toEqual(['diverged']);
    expect(logged[1].reason).toMatch(/louder than the microphone/);
    expect(modes.slice(8000 / 20, 9500 / 20)).toContain('half-duplex');
    expect(modes.at(-1)).toBe('half-duplex');
  });
});
