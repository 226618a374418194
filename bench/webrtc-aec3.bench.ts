// Issue #15: WebRTC's AEC3 (Debian 13 trixie's webrtc-audio-processing 1.x, what Raspberry Pi OS ships now) side by
// side with the agent's speex chain, on the same synthetic room as agent-aec (test/support/syntheticRoom.ts: the
// same far end, heard 87 ms later at -6 dB, noise at -65 dBFS; near-end speech 10 dB below the echo from 10 s; a
// delay change 87 -> 150 ms at 10 s), every figure computed here by the same functions from the same inputs.
// AEC3 runs in scripts/webrtc-aec/aec3.cc, built in a trixie root by scripts/webrtc-aec/build.sh (x86-64, and
// cross-built for arm64/armhf run under qemu-user, called explicitly); without that root every row says
// "not available". AEC3 runs at 48 kHz (the agent's wire rate: no resampler around it; its linear filter works on
// the 0-8 kHz band either way, the 8-24 kHz bands get its suppressor's gains), high-pass on, gain control off,
// 10 ms frames: the far end's frame to ProcessReverseStream, then the microphone's frame to ProcessStream.
// Variants: delay hint = the true bulk delay (set_stream_delay_ms 87, then 150 after the change) or none (0: AEC3
// finds the delay itself); noise suppression off or moderate; at 16 kHz (resampled around it) once. Under qemu
// (arm64, armhf; BENCH_AEC3_QEMU=0 skips them) one variant: the figures that do not depend on speed.
//
// Metrics (as agent-aec's, see there), for both:
// - ERLE 8-20 s, echo only: mic energy / sent energy. The noise (-65 dBFS against an echo around -26 dBFS) caps it
//   near 39 dB unless noise suppression removes the noise too.
// - convergence: the agent's own criterion applied to the output (echoCanceller.ts CONVERGED_DB): the end of the
//   second 200 ms block in a row, of 20 ms frames with the far end audible at the true delay, whose ERLE >= 20 dB;
//   from the first far-end speech (and from the delay change). For the speex chain that is its output before the
//   half-duplex gate; its own state's figure (what agent-aec reports, gate lifted) is in the note.
// - double talk heard: 100 ms windows of near-end speech whose sent audio correlates >= 0.5 with the clean near end.
// - CPU per second of audio: AEC3's ProcessReverseStream + ProcessStream (process CPU clock, in the tool); the
//   speex chain's reference + process as agent-aec measures it. Same machine, same run.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { loadavg } from 'node:os';
import path from 'node:path';
import type { AecState } from '../src/agent/audio/echoCanceller.js';
import { resample } from '../src/common/audio/resample.js';
import { SAMPLE_RATE } from '../src/protocol/media.js';
import { speechClip } from '../test/support/speechWav.js';
import { atLevel, bestCorrelation, buildRoom, energyRatioDb, farEndSpeech, type EchoPathSegment, type Room } from '../test/support/syntheticRoom.js';
import { DEFAULT_AEC, heardWindows, simulate } from '../test/support/syntheticAec.js';
import type { BenchRow } from './table.js';

const S = SAMPLE_RATE;
/** the agent's convergence criterion (echoCanceller.ts): two 200 ms blocks in a row at this ERLE */
const CONVERGED_DB = 20;
const ACTIVE_RMS = 100;

const roots = process.env.SPEAKER_AGENT_ROOTS ?? '/var/tmp/speaker-agent-roots';
/** the trixie root scripts/webrtc-aec/build.sh makes (x86-64, with the arm64/armhf cross builds in it) */
const aec3Root = process.env.SPEAKER_AGENT_AEC3_ROOT ?? path.join(roots, 'aec3-trixie-amd64');

interface Tool {
  arch: string;
  cmd: string;
  args: string[];
}

/** The AEC3 tool for each architecture built, run from the root's own loader and libraries (no chroot, no root). */
export function tools(): Tool[] {
  const out: Tool[] = [];
  const bin = (n: string) => path.join(aec3Root, 'usr/local/bin', n);
  if (process.arch === 'x64' && existsSync(bin('aec3'))) {
    const libs = ['usr/lib/x86_64-linux-gnu', 'lib/x86_64-linux-gnu'].map((d) => path.join(aec3Root, d)).join(':');
    out.push({ arch: 'x86-64', cmd: path.join(aec3Root, 'lib64/ld-linux-x86-64.so.2'), args: ['--library-path', libs, bin('aec3')] });
  }
  const qemu = (n: string) => [path.join(roots, 'qemu-user-static/usr/bin', n), `/usr/bin/${n}`].find((p) => existsSync(p));
  for (const [arch, exe, emu] of [['arm64', 'aec3-aarch64', 'qemu-aarch64-static'], ['armhf', 'aec3-armhf', 'qemu-arm-static']] as const) {
    const q = qemu(emu);
    if (existsSync(bin(exe)) && q && process.env.BENCH_AEC3_QEMU !== '0') out.push({ arch: `${arch} (qemu)`, cmd: q, args: ['-L', aec3Root, bin(exe)] });
  }
  return out;
}

function packageVersion(): string {
  try {
    const status = readFileSync(path.join(aec3Root, 'var/lib/dpkg/status'), 'utf8');
    const m = /Package: (libwebrtc-audio-processing-1-\d+)\n(?:.+\n)*?Version: (.+)/.exec(status);
    return m ? `${m[1]} ${m[2]}` : 'libwebrtc-audio-processing (version unknown)';
  } catch {
    return 'libwebrtc-audio-processing (version unknown)';
  }
}

interface Run {
  room: Room;
  /** what is sent, and the canceller's output before any gate (the same for AEC3) */
  sent: Int16Array;
  out: Int16Array;
  cpuMsPerS: number;
  states?: { state: AecState; atMs: number }[];
  /** AEC3's own delay estimate every 100 ms */
  delays?: { ms: number; delayMs: number }[];
}

interface Inputs {
  far: Int16Array;
  segments: EchoPathSegment[];
  near?: Int16Array;
}

/** The agent's chain as agent-aec runs it (its default variant), keeping the output before the gate. */
export function speexChain(inp: Inputs): Run {
  const r = simulate(DEFAULT_AEC, inp.far, inp.segments, inp.near);
  return { room: r.room, sent: r.sent, out: r.beforeGate, states: r.states, cpuMsPerS: r.cpuMsPerS };
}

/** AEC3 over the room's microphone; at 16 kHz both inputs are resampled (the project's resampler, as the agent's
 *  chain does around speex) and the output back to 48 kHz, so every figure is taken at 48 kHz alike. */
export function aec3(tool: Tool, inp: Inputs, hint: boolean, ns: 'off' | 'moderate', dir: string, rate: 16_000 | 48_000 = 48_000): Run {
  const room = buildRoom({ farEnd: inp.far, delayMs: inp.segments, echoGainDb: -6, noiseDbfs: -65, nearEnd: inp.near });
  const f = (n: string) => path.join(dir, n);
  const write = (n: string, pcm: Int16Array) => {
    const x = resample(pcm, S, rate);
    writeFileSync(f(n), Buffer.from(x.buffer, x.byteOffset, x.byteLength));
  };
  write('far.s16', inp.far);
  write('mic.s16', room.mic);
  const hints = hint ? inp.segments.map((s) => `${s.delayMs}@${Math.round((s.fromSample * 1000) / S)}`).join(',') : 'none';
  const res = JSON.parse(execFileSync(tool.cmd, [...tool.args, f('far.s16'), f('mic.s16'), f('out.s16'), String(rate), hints, ns, f('stats.tsv')], { encoding: 'utf8', timeout: 600_000 })) as { seconds: number; cpuMs: number; errors: number };
  if (res.errors > 0) throw new Error(`AEC3 reported ${res.errors} processing errors`);
  const b = readFileSync(f('out.s16'));
  const out = new Int16Array(room.mic.length);
  const back = resample(new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)), rate, S);
  out.set(back.subarray(0, out.length));
  const delays = readFileSync(f('stats.tsv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split('\t').map(Number)).map(([ms, delayMs]) => ({ ms, delayMs }));
  return { room, sent: out, out, delays, cpuMsPerS: res.cpuMs / res.seconds };
}

/** The agent's convergence criterion on an output, 200 ms blocks of far-end active 20 ms frames (the far end
 *  audible at the true delay) from `fromMs` on: `first`, the end of the first two blocks in a row with ERLE >= 20 dB
 *  (when the agent's gate would lift); `stays`, the end of the two in a row after the last block under 20 dB (from
 *  then on to the end of the run every block holds it). ms from `fromMs`, NaN when never. */
function convergedAtMs(run: Run, inp: Inputs, fromMs: number): { first: number; stays: number } {
  const frame = S / 50;
  const blocks: { endMs: number; good: boolean }[] = [];
  let frames = 0;
  let a = 0;
  let b = 0;
  for (let i = Math.round((fromMs * S) / 1000 / frame) * frame; i + frame <= run.out.length; i += frame) {
    const seg = [...inp.segments].reverse().find((s) => i >= s.fromSample)!;
    const j = i - Math.round((seg.delayMs * S) / 1000);
    if (j < 0) continue;
    let r = 0;
    for (let k = j; k < j + frame; k++) r += inp.far[k] ** 2;
    if (r < ACTIVE_RMS * ACTIVE_RMS * frame) continue;
    for (let k = i; k < i + frame; k++) (a += run.room.mic[k] ** 2), (b += run.out[k] ** 2);
    if (++frames < 10) continue;
    blocks.push({ endMs: ((i + frame) * 1000) / S - fromMs, good: 10 * Math.log10((a + 1) / (b + 1)) >= CONVERGED_DB });
    a = b = frames = 0;
  }
  const at = (k: number) => (k < blocks.length ? blocks[k].endMs : NaN);
  const first = blocks.findIndex((x, k) => k > 0 && x.good && blocks[k - 1].good);
  let lastBad = -1;
  blocks.forEach((x, k) => (lastBad = x.good ? lastBad : k));
  return { first: first < 0 ? NaN : at(first), stays: at(lastBad + 2) };
}

function heard(dt: Run, from: number, to: number): { pct: number; windows: number; heard: number; r: number } {
  const { heard: h, windows } = heardWindows(dt.sent, dt.room.near, from, to);
  return { pct: (100 * h) / Math.max(1, windows), windows, heard: h, r: bestCorrelation(dt.sent, dt.room.near, from, to, 25).r };
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const far = atLevel(farEndSpeech(20), -20);
  let speechAt = 0;
  while (Math.abs(far[speechAt]) < 100) speechAt++;
  const speechAtMs = (speechAt * 1000) / S;
  const nearClip = atLevel(speechClip('Stop. Please stop the story now and tell me what the weather is like tomorrow.', { voice: 'kal', padBeforeMs: 0, padAfterMs: 0 }).pcm, -36);
  const near = new Int16Array(far.length);
  const dtFrom = 10 * S;
  near.set(nearClip.subarray(0, near.length - dtFrom), dtFrom);
  const dtTo = dtFrom + nearClip.length;
  const echoOnly: Inputs = { far, segments: [{ fromSample: 0, delayMs: 87 }] };
  const doubleTalk: Inputs = { ...echoOnly, near };
  const change: Inputs = { far, segments: [{ fromSample: 0, delayMs: 87 }, { fromSample: 10 * S, delayMs: 150 }] };

  const report = (label: string, eo: Run, dt: Run, dc: Run, notes: { conv?: string; change?: string; cpu?: string }) => {
    const erle = (a: number, b: number) => energyRatioDb(eo.room.mic, eo.sent, a * S, b * S);
    const steady = erle(8, 20);
    rows.push({ issue: '#15', metric: `ERLE after convergence, echo only, 8-20 s [${label}]`, value: round1(steady), unit: 'dB', target: '>= 25 dB', pass: steady >= 25, note: `2-5 s ${erle(2, 5).toFixed(1)}, 5-8 s ${erle(5, 8).toFixed(1)}, 10-20 s ${erle(10, 20).toFixed(1)} dB` });
    const conv = convergedAtMs(eo, echoOnly, speechAtMs);
    rows.push({ issue: '#15', metric: `convergence after the first far-end speech (>= 20 dB from then on) [${label}]`, value: Math.round(conv.stays), unit: 'ms', target: '<= 2000 ms', pass: conv.stays <= 2000, note: `first two blocks >= 20 dB at ${Math.round(conv.first)} ms; ${notes.conv ?? ''}` });
    const h = heard(dt, dtFrom, dtTo);
    rows.push({ issue: '#15', metric: `double talk: near end heard (10 dB below the echo) [${label}]`, value: round1(h.pct), unit: '%', target: '>= 80 %', pass: h.pct >= 80, note: `${h.heard}/${h.windows} windows of 100 ms; correlation with the clean near end ${h.r.toFixed(3)}` });
    const again = convergedAtMs(dc, change, 10_000);
    const de = (a: number, b: number) => energyRatioDb(dc.room.mic, dc.sent, a * S, b * S).toFixed(1);
    rows.push({ issue: '#15', metric: `delay change 87 -> 150 ms: converged again (>= 20 dB from then on) [${label}]`, value: Math.round(again.stays), unit: 'ms', target: '<= 2000 ms', pass: again.stays <= 2000, note: `first two blocks >= 20 dB at ${Math.round(again.first)} ms; ERLE 10-11 s ${de(10, 11)}, 11-12 s ${de(11, 12)}, 12-20 s ${de(12, 20)} dB${notes.change ? '; ' + notes.change : ''}` });
    rows.push({ issue: '#15', metric: `canceller CPU per second of audio [${label}]`, value: round2(eo.cpuMsPerS), unit: 'ms', target: '<= 15 ms (1.5 % of a core)', pass: eo.cpuMsPerS <= 15, note: notes.cpu ?? `this machine, load ${loadavg()[0].toFixed(1)}` });
  };

  // the agent's chain (warmed up once for the JIT, as agent-aec does)
  speexChain({ far: far.subarray(0, 5 * S), segments: echoOnly.segments });
  const sEo = speexChain(echoOnly);
  const sDc = speexChain(change);
  const stateConv = sEo.states!.find((s) => s.state === 'converged');
  const stateAgain = sDc.states!.find((s) => s.atMs > 10_000 && s.state === 'converged');
  const stateMoved = sDc.states!.find((s) => s.atMs > 10_000 && s.state !== 'converged');
  report('agent speex chain, 16 kHz, 80 ms filter, residual suppression', sEo, speexChain(doubleTalk), sDc, {
    conv: `its own state (the gate lifted, agent-aec's figure): ${stateConv ? Math.round(stateConv.atMs - speechAtMs) : 'never'} ms`,
    change: `its own state: the move seen (gate closed) after ${stateMoved ? Math.round(stateMoved.atMs - 10_000) : 'never'} ms, converged again after ${stateAgain ? Math.round(stateAgain.atMs - 10_000) : 'never'} ms`,
  });

  const available = tools();
  if (available.length === 0) {
    rows.push({ issue: '#15', metric: 'WebRTC AEC3 (trixie webrtc-audio-processing 1.x)', value: NaN, unit: '', note: `not available: no AEC3 tool under ${aec3Root} (build it: sudo scripts/webrtc-aec/build.sh)` });
    return rows;
  }
  const pkg = packageVersion();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aec3-'));
  try {
    for (const tool of available) {
      const native = tool.arch === 'x86-64';
      // under qemu: the figures that do not depend on speed, one variant (the SIMD paths differ: close to x86-64, not equal)
      const variants: [boolean, 'off' | 'moderate', 16_000 | 48_000][] = native
        ? [[true, 'off', 48_000], [false, 'off', 48_000], [true, 'moderate', 48_000], [false, 'moderate', 48_000], [false, 'off', 16_000]]
        : [[false, 'off', 48_000]];
      for (const [hint, ns, rate] of variants) {
        const label = `WebRTC AEC3 ${tool.arch}, ${rate / 1000} kHz, ${hint ? 'delay hint = true delay' : 'no delay hint'}, noise suppression ${ns}`;
        const eo = aec3(tool, echoOnly, hint, ns, dir, rate);
        const dc = aec3(tool, change, hint, ns, dir, rate);
        const taken = dc.delays!.find((d) => d.ms > 10_000 && Math.abs(d.delayMs - 150) <= 10);
        const first = eo.delays!.find((d) => Math.abs(d.delayMs - 87) <= 10);
        if (native && hint && ns === 'off') {
          // the double-talk metric's calibration: the same near end with the far end silent (nothing to suppress)
          const alone = aec3(tool, { far: new Int16Array(far.length), segments: echoOnly.segments, near }, hint, ns, dir, rate);
          const h = heard(alone, dtFrom, dtTo);
          const lag = bestCorrelation(alone.sent, alone.room.near, dtFrom, dtTo, 25).lagMs;
          rows.push({ issue: '#15', metric: `near end alone (far end silent): heard [${label}]`, value: round1(h.pct), unit: '%', note: `${h.heard}/${h.windows} windows; correlation ${h.r.toFixed(3)} at a lag of ${lag.toFixed(1)} ms (AEC3's own delay; the metric allows 0-25 ms)` });
        }
        report(label, eo, aec3(tool, doubleTalk, hint, ns, dir, rate), dc, {
          conv: `${pkg}; its delay estimate reached 87 +- 10 ms at ${first ? first.ms - Math.round(speechAtMs) : 'never'} ms, ${eo.delays!.at(-1)!.delayMs} ms at the end`,
          change: `its delay estimate reached 150 +- 10 ms ${taken ? `${taken.ms - 10_000} ms after the change` : 'never'} (${dc.delays!.at(-1)!.delayMs} ms at the end)`,
          cpu: !native ? 'under qemu-user emulation on this machine: not a board figure' : rate === S ? `this machine, load ${loadavg()[0].toFixed(1)}` : 'AEC3 alone: the resampling around it (in the speex chain\'s figure for speex) not counted',
        });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;
