// The echo canceller with the real libspeexdsp, in-process, in a synthetic room (test/support/syntheticRoom.ts):
// far-end speech played, heard back 87 ms later at -6 dB through a room impulse response, with noise, and a
// near end 10 dB below the echo. No sound card: the agent's frame timing is simulated (runCall).
import { describe, expect, it, vi } from 'vitest';
import { EchoCanceller, type AecState } from '../../../src/agent/audio/echoCanceller.js';
import { EchoDelay } from '../../../src/agent/audio/echoDelay.js';
import { EchoReference } from '../../../src/agent/audio/echoReference.js';
import { SpeexEcho } from '../../../src/agent/audio/speexEcho.js';
import { AgentError } from '../../../src/agent/errors.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../../src/protocol/media.js';
import { speechClip } from '../../support/speechWav.js';
import { atLevel, bestCorrelation, buildRoom, energyRatioDb, farEndSpeech, runCall, seeded } from '../../support/syntheticRoom.js';

const S = SAMPLE_RATE;

function canceller(opts: { filterMs?: number } = {}) {
  const clock = { ns: 0n };
  const reference = new EchoReference({ rate: 16_000, nowNs: () => clock.ns });
  const aec = new EchoCanceller({ reference, filterMs: opts.filterMs, nowNs: () => clock.ns });
  const states: { state: AecState; reason: string; atMs: number }[] = [];
  aec.onState = (state, reason) => states.push({ state, reason, atMs: Number(clock.ns - 1_000_000_000_000n) / 1e6 });
  return { clock, reference, aec, states };
}

/** where the far end first speaks (ms): its first sample above -50 dBFS */
function firstSpeechMs(pcm: Int16Array): number {
  let i = 0;
  while (i < pcm.length && Math.abs(pcm[i]) < 100) i++;
  return (i * 1000) / S;
}

describe('speex echo canceller (libspeexdsp) in a synthetic room', () => {
  const far = atLevel(farEndSpeech(20), -20);

  it('echo only: converges within 2 s of the first far-end speech and then removes >= 25 dB of echo', () => {
    const room = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -6, noiseDbfs: -65 });
    const { clock, reference, aec, states } = canceller();
    const sent = runCall(far, room.mic, reference, (f, at) => aec.process(f, at), clock);
    const converged = states.find((s) => s.state === 'converged');
    expect(converged, 'the canceller converged').toBeDefined();
    expect(converged!.atMs - firstSpeechMs(far)).toBeLessThanOrEqual(2000);
    expect(aec.stats().delayMs).toBeCloseTo(87, 0);
    // ERLE on what is sent, from 8 s on (the filter's steady state); the untouched microphone would give 0 dB
    const erle = energyRatioDb(room.mic, sent, 8 * S, 20 * S);
    expect(erle).toBeGreaterThanOrEqual(25);
    expect(states.filter((s) => s.state !== 'converged')).toEqual([]); // never fell back
    aec.close();
  });

  it('double talk: the near end (10 dB below the echo) is sent, the echo is not', () => {
    const nearClip = speechClip('Stop. Please stop the story now and tell me what the weather is like tomorrow.', { voice: 'kal', padBeforeMs: 0, padAfterMs: 0 });
    const near = new Int16Array(far.length);
    const from = 10 * S;
    near.set(atLevel(nearClip.pcm, -36).subarray(0, near.length - from), from);
    const to = from + nearClip.pcm.length;
    const room = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -6, noiseDbfs: -65, nearEnd: near });
    expect(energyRatioDb(room.echo, room.near, from, to)).toBeGreaterThan(8); // the echo is ~10 dB louder
    const { clock, reference, aec, states } = canceller();
    const sent = runCall(far, room.mic, reference, (f, at) => aec.process(f, at), clock);
    const before = bestCorrelation(room.mic, room.near, from, to).r;
    const after = bestCorrelation(sent, room.near, from, to).r;
    expect(before).toBeLessThan(0.5); // the raw microphone is mostly echo
    expect(after).toBeGreaterThanOrEqual(0.9);
    // the canceller stayed converged through the double talk: the gate never took the near end away
    expect(states.map((s) => s.state)).toEqual(['converged']);
    // and the steady filter (10 ms frames, speexEcho.ts) was the one sent
    expect(aec.stats().steadyFilter).toBe(true);
    aec.close();
  });

  it('SpeexEcho: rejects frames of the wrong size, is unusable after close, closes twice without harm', () => {
    const s = new SpeexEcho({ sampleRate: 16_000, frameSize: 320, filterMs: 100 });
    expect(() => s.process(new Int16Array(319), new Int16Array(320))).toThrow(RangeError);
    const out = s.process(new Int16Array(320).fill(1000), new Int16Array(320));
    expect(out.length).toBe(320);
    s.close();
    s.close();
    expect(() => s.process(new Int16Array(320), new Int16Array(320))).toThrow(AgentError);
    expect(() => new SpeexEcho({ sampleRate: 16_000, frameSize: 320, filterMs: 0 })).toThrow(RangeError);
  });

  it('SpeexEcho: the steady filter takes over only once allowed and as good as the fast one, until reset', () => {
    const rate = 16_000;
    expect(() => new SpeexEcho({ sampleRate: rate, frameSize: 80, steadyFrameSize: 120, filterMs: 80 })).toThrow(RangeError);
    const s = new SpeexEcho({ sampleRate: rate, frameSize: 80, steadyFrameSize: 160, filterMs: 80 });
    expect(s.blockSize).toBe(160);
    expect(() => s.process(new Int16Array(80), new Int16Array(80))).toThrow(RangeError);
    const rnd = seeded(5);
    const ref = Int16Array.from({ length: 8 * rate }, () => Math.round((rnd() - 0.5) * 8000));
    const mic = ref.map((_, i) => Math.round((i >= 100 ? 0.5 * ref[i - 100] : 0) + (i >= 300 ? -0.2 * ref[i - 300] : 0)));
    const run = (from: number, to: number) => {
      for (let i = from; i < to; i += 320) s.process(mic.subarray(i, i + 320), ref.subarray(i, i + 320));
    };
    run(0, 4 * rate);
    expect(s.steadyFilterInUse, 'not before the caller allows it').toBe(false);
    s.steadyAllowed = true;
    run(4 * rate, 6 * rate);
    expect(s.steadyFilterInUse).toBe(true);
    // what is sent is the steady filter's: it cancels the echo
    run(6 * rate, 8 * rate);
    let pm = 0;
    let pl = 0;
    for (let i = 0; i < 320; i++) {
      pm += mic[8 * rate - 320 + i] ** 2;
      pl += s.linear[i] ** 2;
    }
    expect(10 * Math.log10(pm / Math.max(1, pl))).toBeGreaterThan(20);
    s.reset();
    expect(s.steadyFilterInUse).toBe(false);
    expect(s.steadyAllowed).toBe(false);
    s.close();
  });

  it('SpeexEcho reports the response it learned: a known three-tap echo, in gain per sample of lag', () => {
    const rate = 16_000;
    const s = new SpeexEcho({ sampleRate: rate, frameSize: 80, filterMs: 80 });
    const rnd = seeded(3);
    const ref = Int16Array.from({ length: 5 * rate }, () => Math.round((rnd() - 0.5) * 8000));
    const taps = new Map([[80, 0.5], [200, -0.2], [500, 0.1]]);
    const mic = ref.map((_, i) => Math.round([...taps].reduce((a, [k, g]) => a + (i >= k ? g * ref[i - k] : 0), 0)));
    for (let i = 0; i < ref.length; i += 80) s.process(mic.subarray(i, i + 80), ref.subarray(i, i + 80));
    const h = s.impulseResponse();
    expect(h.length).toBe(s.filterLength);
    for (const [k, g] of taps) expect(h[k]).toBeCloseTo(g, 1);
    // elsewhere only small values (speex's DC notch on the microphone leaves a short tail after each tap)
    const strongest = [...h.keys()].sort((a, b) => Math.abs(h[b]) - Math.abs(h[a])).slice(0, 3);
    expect(strongest.sort((a, b) => a - b)).toEqual([80, 200, 500]);
    s.close();
    expect(() => s.impulseResponse()).toThrow(AgentError);
  });

  it('a frame of another length passes through untouched', () => {
    const { aec } = canceller();
    const odd = new Int16Array(FRAME_SAMPLES / 2).fill(1234);
    expect(aec.process(odd, 1n)).toBe(odd);
    aec.close();
  });
});

describe('the canceller warms V8 up on its heavy JavaScript (echoCanceller.ts KEEP_WARM_FRAMES)', () => {
  it('as it is made and after every 5 s of a silent far end, never while it plays, and changes nothing it sends', () => {
    // far end: 3 s of speech, 11 s of silence (two keep-warm runs: at 5 and 10 s of it), 4 s of speech
    const speech = atLevel(farEndSpeech(7), -20);
    const far = new Int16Array(18 * S);
    far.set(speech.subarray(0, 3 * S));
    far.set(speech.subarray(3 * S, 7 * S), 14 * S);
    const room = buildRoom({ farEnd: far, delayMs: 87, echoGainDb: -6, noiseDbfs: -65 });
    const run = (warmUp: boolean) => {
      const spy = vi.spyOn(EchoDelay.prototype, 'warmUp');
      const clock = { ns: 0n };
      const reference = new EchoReference({ rate: 16_000, nowNs: () => clock.ns });
      const aec = new EchoCanceller({ reference, nowNs: () => clock.ns, warmUp });
      const madeWith = spy.mock.calls.length;
      const warmedAt: number[] = [];
      const sent = runCall(far, room.mic, reference, (f, at, i) => {
        const before = spy.mock.calls.length;
        const out = aec.process(f, at);
        if (spy.mock.calls.length > before) warmedAt.push(i * 20);
        return out;
      }, clock);
      spy.mockRestore();
      const stats = aec.stats();
      aec.close();
      return { sent, madeWith, warmedAt, stats };
    };
    const warm = run(true);
    const cold = run(false);
    expect(warm.madeWith).toBe(1);
    expect(cold.madeWith).toBe(0);
    expect(cold.warmedAt).toEqual([]);
    // the canceller reads the reference 3 frames (60 ms) back, the estimator's lag: the far end counts as silent from
    // ~3.06 s on (the speech is cut at 3 s), so 5 s of it end at ~8.06 s and 10 s at ~13.06 s
    expect(warm.warmedAt.length).toBe(2);
    expect(warm.warmedAt[0]).toBeGreaterThanOrEqual(8000);
    expect(warm.warmedAt[0]).toBeLessThan(8300);
    expect(warm.warmedAt[1] - warm.warmedAt[0]).toBe(5000);
    // the call itself: the delay found and the echo cancelled, the same to the sample with and without
    expect(warm.stats.delayMs).toBeCloseTo(87, 0);
    expect(warm.stats.state).toBe('converged');
    expect(Buffer.from(warm.sent.buffer).equals(Buffer.from(cold.sent.buffer))).toBe(true);
  });
});
