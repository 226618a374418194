// One fresh process, one call through the canceller (test/support/syntheticAec.ts, the synthetic room): the
// longest 20 ms frame of the call's first seconds, where the first delay estimate and the first convergence fall,
// with V8 cold. Run by bench/agent-aec.bench.ts, with the canceller's warm-up (echoCanceller.ts warmUp) and
// without. Prints one JSON line.
import { DEFAULT_AEC, simulate } from '../test/support/syntheticAec.js';
import { atLevel, farEndSpeech } from '../test/support/syntheticRoom.js';

const warmUp = process.argv[2] !== 'cold';
const far = atLevel(farEndSpeech(6), -20);
const sim = simulate({ ...DEFAULT_AEC, warmUp }, far, [{ fromSample: 0, delayMs: 87 }]);
const sorted = [...sim.frameMs].sort((a, b) => a - b);
const longest = sim.frameMs.indexOf(sorted.at(-1)!);
process.stdout.write(`${JSON.stringify({ warmUp, maxMs: sorted.at(-1), atS: (longest * 0.02).toFixed(2), secondMs: sorted.at(-2), p50Ms: sorted[sorted.length >> 1], constructMs: sim.constructMs, converged: sim.states.some((s) => s.state === 'converged') })}\n`);
