// Issue #15 benchmark, in-process figures of the agent's echo canceller (no sound card): the synthetic room of
// test/support/syntheticRoom.ts (far-end speech from flite's voices at -20 dBFS, heard back 87 ms later at -6 dB
// through a 40 ms room impulse response, white noise at -65 dBFS; near-end speech 10 dB below the echo), run
// frame by frame through the same chain as the agent's `audio.duplex auto`: EchoReference fed as the downlink
// feeds it, EchoCanceller stage, then the half-duplex gate it controls.
//
// The scenario and its figures (what each number is) live in test/support/syntheticAec.ts, shared with the
// arm64/armhf check (scripts/arm64/echo.mjs). Here also:
// - added latency: the chain's own delay (resamplers, measured by correlation on a near end alone; speex's
//   residual suppressor, one speex frame) plus the p50 of the time process() takes per 20 ms frame.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { SAMPLE_RATE } from '../src/protocol/media.js';
import { speechClip } from '../test/support/speechWav.js';
import { atLevel, bestCorrelation, energyRatioDb, farEndSpeech } from '../test/support/syntheticRoom.js';
import {
  DEFAULT_AEC,
  delayChange,
  doubleTalk,
  echoOnly,
  NEAR_END_TEXT,
  NEAR_END_VOICE,
  scenarioSpeech,
  simulate,
  type AecVariant,
} from '../test/support/syntheticAec.js';
import { percentile, type BenchRow } from './table.js';

const S = SAMPLE_RATE;

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const { far, nearClip } = scenarioSpeech(farEndSpeech(20), speechClip(NEAR_END_TEXT, { voice: NEAR_END_VOICE, padBeforeMs: 0, padAfterMs: 0 }).pcm);
  // the first is the canceller's default
  const variants: AecVariant[] = [
    DEFAULT_AEC,
    { rate: 16_000, filterMs: 80, speexFrameMs: 5, residualSuppression: false },
    { rate: 16_000, filterMs: 120, speexFrameMs: 20, residualSuppression: false },
    { rate: 48_000, filterMs: 80, speexFrameMs: 5, residualSuppression: true },
  ];
  for (const v of variants) {
    const label = `${v.rate / 1000} kHz, ${v.filterMs} ms filter, ${v.speexFrameMs} ms frames${v.speexFrameMs < 10 ? ' (+ the steady 10 ms filter)' : ''}${v.residualSuppression ? ', speex residual suppression' : ', no residual suppression'}`;
    const isDefault = v === variants[0];
    const issue = isDefault ? '#15' : '#15 (alt)';
    // echo only
    if (isDefault) simulate(v, far.subarray(0, 5 * S), [{ fromSample: 0, delayMs: 87 }]); // JIT warm-up for the CPU figure
    const eo = echoOnly(v, far, 8);
    const erle = (a: number, b: number) => energyRatioDb(eo.sim.room.mic, eo.sim.sent, a * S, b * S);
    const convMs = eo.convergenceMs;
    const steady = eo.erleDb;
    rows.push({ issue, metric: `ERLE after convergence, echo only, 8-20 s [${label}]`, value: round1(steady), unit: 'dB', target: '>= 25 dB', pass: steady >= 25, note: `2-5 s ${erle(2, 5).toFixed(1)}, 5-8 s ${erle(5, 8).toFixed(1)}, 10-20 s ${erle(10, 20).toFixed(1)} dB; PulseAudio anchor 15.7-17.3 dB` });
    rows.push({ issue, metric: `convergence after the first far-end speech [${label}]`, value: Math.round(convMs), unit: 'ms', target: '<= 2000 ms', pass: convMs <= 2000, note: `delay ${eo.sim.stats.delayMs} ms, confidence ${eo.sim.stats.delayConfidence}` });
    // double talk
    const dt = doubleTalk(v, far, nearClip, 10);
    rows.push({ issue, metric: `double talk: near end heard (10 dB below the echo) [${label}]`, value: round1(dt.heardPct), unit: '%', target: '>= 80 %', pass: dt.heardPct >= 80, note: `${dt.heard}/${dt.windows} windows of 100 ms; correlation with the clean near end ${dt.corr.toFixed(3)} (raw mic ${dt.rawCorr.toFixed(3)}); PulseAudio anchor 4-34 %` });
    // CPU and latency (from the echo-only run)
    const cpuPct = eo.sim.cpuMsPerS / 10;
    rows.push({ issue, metric: `canceller CPU per second of audio [${label}]`, value: round2(eo.sim.cpuMsPerS), unit: 'ms', target: '<= 15 ms (1.5 % of a core)', pass: cpuPct <= 1.5, note: `${cpuPct.toFixed(2)} % of one core in real time; this machine, other helpers running` });
    if (!isDefault) continue;
    // the chain's own delay: a near end alone through it, correlated with its input
    const alone = simulate(v, new Int16Array(far.length), [{ fromSample: 0, delayMs: 87 }], atLevel(farEndSpeech(4), -26));
    const lag = bestCorrelation(alone.sent, alone.room.near, 0, 4 * S, 10);
    const p50 = percentile(eo.sim.frameMs, 50);
    // speex does not run on a near end alone (no delay found, nothing to cancel): its residual suppressor's
    // one-frame delay (overlap-add) is added by its definition, measured separately (speexEcho.ts)
    const resMs = v.residualSuppression ? v.speexFrameMs : 0;
    const added = lag.lagMs + resMs + p50;
    rows.push({ issue, metric: `added mic-to-wire latency p50 [${label}]`, value: round2(added), unit: 'ms', target: '<= 10 ms', pass: added <= 10, note: `resampling ${lag.lagMs.toFixed(2)} ms + residual suppressor ${resMs} ms + processing p50 ${p50.toFixed(3)} ms (p95 ${percentile(eo.sim.frameMs, 95).toFixed(3)} ms) per 20 ms frame` });
    // delay change during the call
    const dc = delayChange(v, far, 10);
    rows.push({ issue, metric: `delay change 87 -> 150 ms: new delay taken [${label}]`, value: Math.round(dc.retrackMs), unit: 'ms', target: '<= 2000 ms', pass: dc.retrackMs <= 2000, note: `delay now ${dc.delayMs} ms` });
    rows.push({ issue, metric: `delay change 87 -> 150 ms: converged again [${label}]`, value: Math.round(dc.reconvergedMs), unit: 'ms', target: '<= 2000 ms', pass: dc.reconvergedMs <= 2000, note: 'the half-duplex gate covers the time between' });
  }
  rows.push(coldStart());
  return rows;
}

/** The longest frame of a fresh process's first call (bench/aecColdStart.ts), with the canceller's JIT warm-up
 *  and without, the median of 3 processes each, interleaved. The speaker's queue holds one 20 ms frame: a frame
 *  that takes most of it underruns the speaker on a loaded board. */
function coldStart(): BenchRow {
  const runs: Record<'warm' | 'cold', { maxMs: number; atS: string; constructMs: number }[]> = { warm: [], cold: [] };
  for (let i = 0; i < 3; i++) {
    for (const m of ['warm', 'cold'] as const) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'aecColdStart.ts'), m], { encoding: 'utf8' });
      runs[m].push(JSON.parse(out.trim().split('\n').at(-1)!));
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const warm = median(runs.warm.map((r) => r.maxMs));
  const cold = median(runs.cold.map((r) => r.maxMs));
  const at = (m: 'warm' | 'cold') => runs[m].map((r) => `${r.atS} s`).join(', ');
  const made = median(runs.warm.map((r) => r.constructMs)) - median(runs.cold.map((r) => r.constructMs));
  return {
    issue: '#15',
    metric: "canceller's longest frame in a fresh process's first call (first delay estimate, first convergence)",
    value: round1(warm),
    unit: 'ms',
    target: '<= 10 ms',
    pass: warm <= 10,
    note: `without the JIT warm-up ${round1(cold)} ms (ratio ${(warm / cold).toFixed(2)}); longest at ${at('warm')} with it, ${at('cold')} without; the warm-up adds ${round1(made)} ms to making the canceller (at start-up, before any call)`,
  };
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;
