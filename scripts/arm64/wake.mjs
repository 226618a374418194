// The wake word engine's part of scripts/check-arm64.sh: the agent's own OpenWakeWordSpotter
// (src/agent/wake/openWakeWord.ts, bundled by esbuild with onnxruntime-node left external, as in dist/) on
// synthetic audio, once in the host's node (the reference) and once in the arm64 node under qemu:
//   node wake-check.mjs PHRASE_WAV [--reference SCORES_JSON] [--write SCORES_JSON]
// PHRASE_WAV is "hey jarvis" from espeak-ng on the host (any rate: resampled to 16 kHz s16 with the agent's
// resampler). Checks: the phrase, between quiet noise, is detected once, ending near where the phrase ends; 10 s
// of loud pink and white noise is not detected. With --reference, every 80 ms score must equal the host's within
// 0.02 (the same models on another CPU's kernels). Prints the real-time factor (processing time / audio time),
// under qemu a curiosity, not a board figure. Exit 1 on any failure.
import { readFileSync, writeFileSync } from 'node:fs';
import { OpenWakeWordSpotter, phraseModelFor, sensitivityToThreshold } from '../../src/agent/wake/openWakeWord.ts';
import { resample } from '../../src/common/audio/resample.ts';
import { concatPcm } from '../../src/common/audio/signal.ts';
import { decodeWav } from '../../src/common/audio/wav.ts';

const RATE = 16000;
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args.splice(i, 2)[1];
};
const reference = opt('--reference');
const write = opt('--write');
const [wavFile] = args;
if (!wavFile) {
  console.error('usage: node wake-check.mjs PHRASE_WAV [--reference SCORES_JSON] [--write SCORES_JSON]');
  process.exit(2);
}

/** mulberry32: the same noise on every run and every CPU */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
/** white noise at `rms`, optionally low-passed to a pink-ish spectrum (one-pole filter) */
function noise(samples, rms, seed, pinkish = false) {
  const r = rng(seed);
  const f = new Float32Array(samples);
  let y = 0;
  for (let i = 0; i < samples; i++) {
    const w = r() * 2 - 1;
    y = pinkish ? 0.95 * y + 0.05 * w * 4 : w;
    f[i] = y;
  }
  let e = 0;
  for (const v of f) e += v * v;
  const g = rms / Math.sqrt(e / samples);
  return Int16Array.from(f, (v) => Math.max(-32768, Math.min(32767, Math.round(v * g))));
}

const w = decodeWav(readFileSync(wavFile));
let phrase = w.sampleRate === RATE ? w.pcm : resample(w.pcm, w.sampleRate, RATE);
// trim espeak's leading and trailing silence, so "where the phrase ends" is known
let a = 0;
let b = phrase.length - 1;
while (a < b && Math.abs(phrase[a]) < 100) a++;
while (b > a && Math.abs(phrase[b]) < 100) b--;
phrase = phrase.slice(a, b + 1);
const lead = noise(1.5 * RATE, 30, 1);
const clip = concatPcm([lead, phrase, noise(1.5 * RATE, 30, 2)]);
const phraseEnd = (lead.length + phrase.length) / RATE;
const loud = concatPcm([noise(5 * RATE, 3000, 3, true), noise(5 * RATE, 3000, 4)]);

const threshold = sensitivityToThreshold(0.5); // the agent's default sensitivity
const spotter = await OpenWakeWordSpotter.open({ phrase: 'hey jarvis', model: phraseModelFor('hey jarvis'), threshold });
const failures = [];
const scores = { noise: [], phrase: [] };
const t0 = process.hrtime.bigint();
const noiseHits = await spotter.process(loud, scores.noise);
const phraseHits = await spotter.process(clip, scores.phrase); // endSample counts from the noise's start
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
spotter.close();
const audioSecs = (loud.length + clip.length) / RATE;
const max = (xs) => xs.reduce((m, x) => Math.max(m, x), 0);

const where = `${process.arch} node ${process.version}`;
console.log(`wake: ${where}: openWakeWord "hey jarvis" on ONNX Runtime, threshold ${threshold.toFixed(2)} (default sensitivity 0.5)`);
console.log(`wake: noise ${(loud.length / RATE).toFixed(1)} s (pink-ish and white, RMS 3000): ${noiseHits.length} detection(s), max score ${max(scores.noise).toFixed(4)}`);
if (noiseHits.length) failures.push(`noise detected as the phrase (${noiseHits.length}x)`);
const hit = phraseHits[0];
console.log(
  `wake: "hey jarvis" (espeak-ng, ${(phrase.length / RATE).toFixed(2)} s, ends at ${phraseEnd.toFixed(2)} s): ${phraseHits.length} detection(s), ` +
    `max score ${max(scores.phrase).toFixed(4)}${hit ? `, detected end ${(hit.endSample / RATE - loud.length / RATE).toFixed(2)} s` : ''}`,
);
if (phraseHits.length !== 1) failures.push(`the phrase was detected ${phraseHits.length} times, not once`);
else if (Math.abs(hit.endSample / RATE - loud.length / RATE - phraseEnd) > 0.5) failures.push(`detected end ${(hit.endSample / RATE - loud.length / RATE).toFixed(2)} s, phrase ends ${phraseEnd.toFixed(2)} s`);
console.log(`wake: ${audioSecs.toFixed(1)} s of audio in ${secs.toFixed(2)} s: real-time factor ${(secs / audioSecs).toFixed(3)} (${where})`);

if (write) writeFileSync(write, JSON.stringify(scores));
if (reference) {
  const ref = JSON.parse(readFileSync(reference, 'utf8'));
  let worst = 0;
  for (const k of ['noise', 'phrase']) {
    if (ref[k].length !== scores[k].length) failures.push(`${k}: ${scores[k].length} scores, the reference has ${ref[k].length}`);
    for (let i = 0; i < Math.min(ref[k].length, scores[k].length); i++) worst = Math.max(worst, Math.abs(ref[k][i] - scores[k][i]));
  }
  console.log(`wake: ${scores.noise.length + scores.phrase.length} scores vs the reference run's: largest difference ${worst.toExponential(2)}`);
  if (worst > 0.02) failures.push(`scores differ from the reference by up to ${worst.toFixed(4)}`);
}
for (const f of failures) console.error(`wake: FAIL ${f}`);
process.exit(failures.length ? 1 : 0);
