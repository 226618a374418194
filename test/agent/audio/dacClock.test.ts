import { describe, expect, it } from 'vitest';
import { DacClock, DAC_STEP_MS } from '../../../src/agent/audio/dacClock.js';

/** Playback callbacks as the vendored FrameIO reported them on the loaded test machine (27 Nov, (ii) of
 *  test/agent/echo.e2e.test.ts beside two busy loops): bytes of frames taken, bytes of silence for want of them,
 *  PortAudio's status flags, the callback's steady-clock time (ms) and PortAudio's DAC latency of its buffer (ms;
 *  0 at the underrun: ALSA reports no delay then). PortAudio's audio thread was not scheduled for 118 ms; the
 *  ALSA buffer ran dry 40 ms before it recovered (paOutputUnderflow), then played 3 frames of the stream's own
 *  silence (the ring held one frame). */
const RECORDED: Array<[consumed: number, starved: number, flags: number, atMs: number, latencyMs: number]> = [
  [1920, 0, 0, 78494118.245, 56.021],
  [0, 1920, 0, 78494132.056, 62.208],
  [0, 1920, 0, 78494151.913, 62.333],
  [1920, 0, 0, 78494176.754, 57.5],
  [1920, 0, 4, 78494294.216, 0],
  [0, 1920, 0, 78494294.608, 19.75],
  [0, 1920, 0, 78494294.67, 39.687],
  [0, 1920, 0, 78494294.674, 59.667],
  [1920, 0, 0, 78494319.954, 54.458],
  [1920, 0, 0, 78494341.685, 52.667],
  [1920, 0, 0, 78494388.081, 26.271],
  [0, 1920, 0, 78494388.093, 46.25],
  [1920, 0, 0, 78494400.779, 53.583],
];
/** The same run, another moment: ALSA's delay read 61 and 81 ms for two callbacks (54-56 ms otherwise), with the
 *  callbacks on time: the DAC time stepped +26 ms and back at the next callback; the echo did not move. */
const RECORDED_BLIP: typeof RECORDED = [
  [1920, 0, 0, 78955791.189, 56.187],
  [1920, 0, 0, 78955817.796, 49.562],
  [1920, 0, 0, 78955862.449, 24.875],
  [0, 1920, 0, 78955862.463, 44.854],
  [1920, 0, 0, 78955891.596, 61.458],
  [0, 1920, 0, 78955891.611, 81.458],
  [1920, 0, 0, 78955916.068, 54.604],
  [1920, 0, 0, 78955936.397, 54.25],
];
const FRAME_BYTES = 1920;
const play = (dac: DacClock, calls: typeof RECORDED) => calls.map(([consumed, starved, flags, at, lat]) => dac.note(msOf(consumed + starved), flags, at, lat));
const msOf = (bytes: number) => (bytes / FRAME_BYTES) * 20;

describe('DacClock: silence played below the playback stream, from PortAudio DAC times', () => {
  it('finds the 40 ms the sound server played at a recorded underrun, placed before the frames taken since', () => {
    const dac = new DacClock();
    const found = play(dac, RECORDED);
    // the stream's own silence (the starved frames) is counted in what the callbacks took: no step there
    expect(found.slice(0, 5).every((f) => f === undefined)).toBe(true);
    // the first timed callback after the underrun: the silence came before the underrun's callback's frame (20 ms)
    expect(found[5]?.gapMs).toBeCloseTo(40.0, 0);
    expect(found[5]?.afterMs).toBe(20);
    expect(found.slice(6).every((f) => f === undefined)).toBe(true);
    expect(dac.stats.steps).toBe(1);
  });

  it('a DAC time that jumps with the callbacks on time is no silence (the buffer never ran dry)', () => {
    const dac = new DacClock();
    expect(play(dac, RECORDED_BLIP).every((f) => f === undefined)).toBe(true);
    expect(dac.stats).toMatchObject({ steps: 0, unexplained: 1 });
  });

  it('a card whose latency reads are absurd finds no silence: the steps are bounded by how late the callbacks ran', () => {
    const dac = new DacClock();
    // the recorded underrun, with each latency read as a driver might misreport it (an absolute time, in ms): the
    // DAC time steps by seconds at every callback, none of which ran that late
    const absurd = RECORDED.map(([c, st, f, at, lat]) => [c, st, f, at, lat > 0 ? at + lat : 0] as (typeof RECORDED)[number]);
    expect(play(dac, absurd).every((f) => f === undefined)).toBe(true);
    expect(dac.stats).toMatchObject({ steps: 0, silenceMs: 0 });
  });

  it('a clock that creeps (the sound server smoothing its latency) or jitters under the step is no silence', () => {
    const dac = new DacClock();
    let t = 1000;
    const found = [];
    for (let i = 0; i < 500; i++) {
      t += 20;
      found.push(dac.note(20, 0, t, 60 + i * 0.05 + (i % 2 ? 0.4 : -0.4)));
    }
    expect(found.every((f) => f === undefined)).toBe(true);
    expect(dac.stats.steps).toBe(0);
  });

  it('a step back is counted only; untimed callbacks report nothing; the step is bounded by how late they ran', () => {
    const dac = new DacClock();
    expect(dac.note(20, 0, 1000, 60)).toBeUndefined(); // due at the DAC at 1060
    expect(dac.note(20, 0, 1020, 60 - DAC_STEP_MS - 1)).toBeUndefined();
    expect(dac.stats).toMatchObject({ steps: 0, backSteps: 1 });
    // the buffer ran dry: the next callbacks ran 30 ms after their buffers were due (at 1097 and 1117)
    expect(dac.note(20, 0x4, 1127, 0)).toBeUndefined();
    expect(dac.note(20, 0x10, 1147, 50)).toBeUndefined(); // priming output: not the DAC's time
    // the next timed one (due at 1137): its DAC time says 40 ms later, the callbacks were at most 30 ms late
    expect(dac.note(20, 0, 1147, 1137 + 40 - 1147)).toEqual({ gapMs: expect.closeTo(30, 6), afterMs: 40 });
    dac.reset();
    expect(dac.note(20, 0, 5000, 60)).toBeUndefined(); // a new stream: a new origin
  });
});
