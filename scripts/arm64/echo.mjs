// The echo canceller's part of scripts/check-arm64.sh (issue #15 on arm64 and armhf): the agent's own chain
// (EchoReference -> EchoCanceller -> the half-duplex gate, libspeexdsp through koffi) over the synthetic room, with
// the same code as bench/agent-aec.bench.ts (test/support/syntheticAec.ts), bundled by esbuild with koffi left
// external, once in the host's node and once in the target's node under qemu:
//   node echo-check.mjs FAR_WAV NEAR_WAV [--write FIGURES_JSON] [--reference FIGURES_JSON]
// FAR_WAV is the far end's speech, NEAR_WAV the near end's command, both 48 kHz s16 mono from flite on the host
// (scripts/arm64/echo-speech.ts: flite is a host tool); their levels are set here (-20 dBFS, the echo -6 dB
// below that, 87 ms late; the command 10 dB below the echo). Two calls, 26 s of audio: the far end (16 s) with
// the echo path 87 ms, then 150 ms from 10 s on (echo only until then: convergence, ERLE 6-10 s; after the change:
// the new delay taken, converged again, as in the bench); the command over the far end's first 10 s from 4 s on
// (double talk). Checks issue #15's targets: ERLE >= 25 dB, convergence <= 2 s, double
// talk heard >= 80 %, converged again <= 2 s after the delay change. With --reference, prints the host's figures
// beside these (not compared: a fixed-point libspeexdsp computes other numbers). Prints the real-time factor of
// the chain (its CPU time / audio time): under qemu an emulator's figure, not a board's. Exit 1 on a missed target.
import { readFileSync, writeFileSync } from 'node:fs';
import { SPEEXDSP_LIBRARY } from '../../src/agent/audio/speexEcho.ts';
import { decodeWav } from '../../src/common/audio/wav.ts';
import { SAMPLE_RATE } from '../../src/protocol/media.ts';
import { CHANGED_DELAY_MS, DEFAULT_AEC, delayChange, doubleTalk, ECHO_DELAY_MS, scenarioSpeech } from '../../test/support/syntheticAec.ts';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args.splice(i, 2)[1];
};
const reference = opt('--reference');
const write = opt('--write');
const [farFile, nearFile] = args;
if (!farFile || !nearFile) {
  console.error('usage: node echo-check.mjs FAR_WAV NEAR_WAV [--write FIGURES_JSON] [--reference FIGURES_JSON]');
  process.exit(2);
}
const read = (file) => {
  let w;
  try {
    w = decodeWav(readFileSync(file));
  } catch (err) {
    console.error(`echo: ${file}: ${err.message}`);
    process.exit(2);
  }
  if (w.sampleRate !== SAMPLE_RATE || w.channels !== 1) {
    console.error(`echo: ${file}: ${w.sampleRate} Hz, ${w.channels} channel(s); expected ${SAMPLE_RATE} Hz mono (scripts/arm64/echo-speech.ts)`);
    process.exit(2);
  }
  return w.pcm;
};
const { far, nearClip } = scenarioSpeech(read(farFile), read(nearFile));
const seconds = far.length / SAMPLE_RATE;
const CHANGE_AT_S = 10;
const ERLE_FROM_S = 6;
const DOUBLE_TALK_AT_S = 4;
const DOUBLE_TALK_S = 10;
if (seconds < CHANGE_AT_S + 4 || nearClip.length / SAMPLE_RATE > DOUBLE_TALK_S - DOUBLE_TALK_AT_S) {
  console.error(
    `echo: the far end must be >= ${CHANGE_AT_S + 4} s and the command <= ${DOUBLE_TALK_S - DOUBLE_TALK_AT_S} s (far ${seconds.toFixed(1)} s, command ${(nearClip.length / SAMPLE_RATE).toFixed(1)} s)`,
  );
  process.exit(2);
}

const where = `${process.arch} node ${process.version}`;
const v = DEFAULT_AEC;
const t0 = process.hrtime.bigint();
const dc = delayChange(v, far, CHANGE_AT_S, ERLE_FROM_S);
const dtFar = far.subarray(0, DOUBLE_TALK_S * SAMPLE_RATE);
const dt = doubleTalk(v, dtFar, nearClip, DOUBLE_TALK_AT_S);
const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
const audioS = seconds + DOUBLE_TALK_S;
const frames = [...dc.sim.frameMs].sort((a, b) => a - b);
const fig = {
  arch: process.arch,
  erleDb: dc.erleBeforeDb,
  convergenceMs: dc.convergenceMs,
  heardPct: dt.heardPct,
  reconvergedMs: dc.reconvergedMs,
  retrackMs: dc.retrackMs,
  erleAfterChangeDb: dc.erleAfterDb,
  // the chain's CPU time (and wall time) per second of audio / 1000, in the first call (the JIT's warm-up
  // included)
  rtf: dc.sim.cpuMsPerS / 1000,
  wallRtf: dc.sim.wallMsPerS / 1000,
  frameP50Ms: frames[frames.length >> 1],
};
const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)} ms` : 'never');
console.log(`echo: ${where}: the agent's canceller (${v.rate / 1000} kHz, ${v.filterMs} ms filter, ${v.speexFrameMs} ms frames${v.speexFrameMs < 10 ? " + a steady 10 ms filter" : ""}, residual suppression) on ${SPEEXDSP_LIBRARY} through koffi`);
console.log(
  `echo: echo only (${ECHO_DELAY_MS} ms, -6 dB): ERLE ${fig.erleDb.toFixed(1)} dB ${ERLE_FROM_S}-${CHANGE_AT_S} s, converged ${ms(fig.convergenceMs)} after the first far-end speech`,
);
console.log(
  `echo: delay change ${ECHO_DELAY_MS} -> ${CHANGED_DELAY_MS} ms at ${CHANGE_AT_S} s: new delay taken ${ms(fig.retrackMs)}, converged again ${ms(fig.reconvergedMs)} (delay now ${dc.delayMs} ms), ERLE ${fig.erleAfterChangeDb.toFixed(1)} dB ${CHANGE_AT_S + 2}-${seconds.toFixed(0)} s`,
);
console.log(
  `echo: double talk (the command 10 dB below the echo, ${DOUBLE_TALK_AT_S}-${(DOUBLE_TALK_AT_S + nearClip.length / SAMPLE_RATE).toFixed(1)} s): heard ${fig.heardPct.toFixed(1)} % (${dt.heard}/${dt.windows} windows of 100 ms), correlation ${dt.corr.toFixed(3)} (raw mic ${dt.rawCorr.toFixed(3)})`,
);
console.log(
  `echo: the chain's CPU ${dc.sim.cpuMsPerS.toFixed(2)} ms per s of audio: real-time factor ${fig.rtf.toFixed(4)} (wall time ${fig.wallRtf.toFixed(4)}), processing p50 ${fig.frameP50Ms.toFixed(3)} ms per 20 ms frame (${where}); ` +
    `the two calls, ${audioS.toFixed(0)} s of audio, with the room and the figures took ${wallS.toFixed(1)} s`,
);

const failures = [];
if (!(fig.erleDb >= 25)) failures.push(`ERLE ${fig.erleDb.toFixed(1)} dB < 25 dB`);
if (!(fig.convergenceMs <= 2000)) failures.push(`convergence ${ms(fig.convergenceMs)} > 2000 ms`);
if (!(fig.heardPct >= 80)) failures.push(`double talk heard ${fig.heardPct.toFixed(1)} % < 80 %`);
if (!(fig.reconvergedMs <= 2000)) failures.push(`re-convergence after the delay change ${ms(fig.reconvergedMs)} > 2000 ms`);
if (write) writeFileSync(write, JSON.stringify(fig));
if (reference) {
  const r = JSON.parse(readFileSync(reference, 'utf8'));
  console.log(
    `echo: ${fig.arch} vs ${r.arch}: ERLE ${fig.erleDb.toFixed(1)} vs ${r.erleDb.toFixed(1)} dB, convergence ${ms(fig.convergenceMs)} vs ${ms(r.convergenceMs)}, ` +
      `heard ${fig.heardPct.toFixed(1)} vs ${r.heardPct.toFixed(1)} %, re-convergence ${ms(fig.reconvergedMs)} vs ${ms(r.reconvergedMs)}, ` +
      `real-time factor ${fig.rtf.toFixed(4)} (emulated) vs ${r.rtf.toFixed(4)}`,
  );
}
for (const f of failures) console.error(`echo: FAIL ${f}`);
process.exit(failures.length ? 1 : 0);
