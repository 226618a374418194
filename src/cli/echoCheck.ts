// `doctor`'s echo check: plays a short probe (2.5 s of noise at -30 dBFS) through the speaker while the
// microphone records it back through the agent's own echo canceller (the same chain as audio.duplex auto), and
// reports the echo's delay and how much of it the canceller removed, with what to do when that is poor.
// No echo at all (a microphone that is muted or far from the speaker, the plain virtual sound card) is said as
// such: a warning, not a failure.
import type { AudioBackend, CaptureDevice, PlaybackDevice } from '../agent/audio/audioDevice.js';
import { EchoCanceller } from '../agent/audio/echoCanceller.js';
import { EchoReference } from '../agent/audio/echoReference.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../protocol/media.js';

export interface EchoCheckResult {
  name: 'echo';
  status: 'pass' | 'warn' | 'fail' | 'skip';
  detail: string;
  fix?: string;
  category?: 'audio';
  /** the figures, for --json */
  delayMs?: number;
  reductionDb?: number;
  /** silence the speaker played for want of frames during the probe: the echo moved by as much */
  underrunMs?: number;
}

// The canceller converges within 2 s (issue #15's target; 1.8 s measured): the reduction is read after 1.9 s. With
// 1.5 s (0.9 s to learn) the echo room's 150 ms echo read 8.7, 14.7 and 18.2 dB on the busy test machine (a
// "poor" warning for a room the canceller handles: 24-25 dB at 87 ms).
export const PROBE_MS = 2500;
/** the reduction is measured over the probe's end, once the canceller has had time to find the delay and adapt */
const MEASURE_MS = 600;
const PROBE_DBFS = -30;
/** a reduction below this is poor: the gate will take over in calls */
const GOOD_DB = 10;

function probe(ms: number): Int16Array {
  const n = (ms * SAMPLE_RATE) / 1000;
  const out = new Int16Array(n);
  const amp = 32768 * 10 ** (PROBE_DBFS / 20) * Math.sqrt(3); // uniform noise: RMS = amp / sqrt(3)
  const fade = SAMPLE_RATE / 20; // 50 ms in and out, no click
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (s * 48271) % 2147483647;
    const g = Math.min(1, i / fade, (n - 1 - i) / fade);
    out[i] = Math.round((s / 2147483647 - 0.5) * 2 * amp * g);
  }
  return out;
}

/** What one probe measured. */
interface ProbeResult {
  /** the echo's delay as the canceller found it; undefined: no echo heard */
  delayMs: number | undefined;
  /** the microphone before the probe, dBFS */
  quietDbfs: number;
  /** microphone over canceller output over the probe's end, dB */
  reductionDb: number;
  /** silence the speaker played for want of frames during the probe (a busy machine) */
  starvedMs: number;
}

export async function checkEcho(
  backend: AudioBackend | undefined,
  captureDevice: string,
  playbackDevice: string,
  daemon: string | undefined,
  probeMs = PROBE_MS,
): Promise<EchoCheckResult> {
  if (!backend) return { name: 'echo', status: 'skip', detail: 'the audio addon does not load' };
  if (daemon) return { name: 'echo', status: 'skip', detail: 'the running agent holds the sound card: `speaker-agent status` shows its echo canceller' };
  let r: ProbeResult | { noCanceller: string };
  try {
    r = await runProbe(backend, captureDevice, playbackDevice, probeMs);
    // A speaker underrun moves the echo under a canceller that had 1.9 s to learn it: the figure is the machine's
    // load, not the room's. Measured once more; the second figure stands.
    if ('delayMs' in r && r.delayMs !== undefined && r.reductionDb < GOOD_DB && r.starvedMs > 0) r = await runProbe(backend, captureDevice, playbackDevice, probeMs);
  } catch (err) {
    return { name: 'echo', status: 'fail', detail: `cannot play and record at once: ${(err as Error).message}`, fix: 'see the capture and playback checks', category: 'audio' };
  }
  if ('noCanceller' in r) return { name: 'echo', status: 'fail', detail: r.noCanceller, fix: 'apt install libspeexdsp1   (or set audio.duplex to half)', category: 'audio' };
  const delay = r.delayMs;
  if (delay === undefined) {
    return {
      name: 'echo',
      status: 'warn',
      detail: `no echo heard: the microphone did not pick up the probe played through the speaker (microphone at ${fmt(r.quietDbfs)} dBFS before it)`,
      fix: 'if the probe was audible: is the microphone muted, or far from the speaker, or the speaker volume at 0? With no echo the canceller has nothing to do',
    };
  }
  const reduction = r.reductionDb;
  const starved = r.starvedMs > 0 ? `; the speaker underran ${Math.round(r.starvedMs)} ms during it` : '';
  const detail = `echo heard ${delay} ms after playback, reduced by ${reduction.toFixed(1)} dB by the canceller (probe ${probeMs / 1000} s at ${PROBE_DBFS} dBFS${starved})`;
  const underrunMs = Math.round(r.starvedMs);
  if (reduction >= GOOD_DB) return { name: 'echo', status: 'pass', detail, delayMs: delay, reductionDb: round1(reduction), underrunMs };
  return {
    name: 'echo',
    status: 'warn',
    detail: `${detail}: poor, the microphone will be gated while the assistant speaks`,
    fix:
      (r.starvedMs > 0 ? 'the speaker underran in both probes: is the machine busy (top)? ' : '') +
      'lower the speaker volume (a distorting speaker cannot be cancelled), move the microphone away from the speaker, ' +
      'use one card for both (a USB microphone and another card for the speaker drift apart), turn off sound-server ' +
      'effects on the speaker path; or set audio.duplex to half',
    delayMs: delay,
    reductionDb: round1(reduction),
    underrunMs,
  };
}

/** Plays the probe while the microphone records it through a fresh canceller; noCanceller: why there is none
 *  (libspeexdsp missing). */
async function runProbe(backend: AudioBackend, captureDevice: string, playbackDevice: string, probeMs: number): Promise<ProbeResult | { noCanceller: string }> {
  let reference: EchoReference | undefined;
  let aec: EchoCanceller;
  try {
    reference = new EchoReference({ rate: 16_000 });
    aec = new EchoCanceller({ reference });
  } catch (err) {
    reference?.close();
    return { noCanceller: (err as Error).message };
  }
  const signal = probe(probeMs);
  const silence = new Int16Array(FRAME_SAMPLES);
  let cap: CaptureDevice | undefined;
  let pb: PlaybackDevice | undefined;
  // what the microphone heard before the probe (its own noise), and at the probe's end: in and out
  let quietSum = 0;
  let quietN = 0;
  let inSum = 0;
  let outSum = 0;
  let probeAtNs = 0n;
  try {
    cap = backend.openCapture(captureDevice);
    pb = backend.openPlayback(playbackDevice);
    let written = -1; // frames of the probe written; -1: not started
    const write = () => {
      while (pb!.queuedMs < 20) {
        let frame: Int16Array = silence;
        if (written >= 0 && written * FRAME_SAMPLES < signal.length) frame = signal.subarray(written * FRAME_SAMPLES, (written + 1) * FRAME_SAMPLES);
        if (written >= 0) written++;
        reference!.notePlayback(frame, pb!.queuedMs);
        const before = pb!.queuedMs;
        pb!.write(frame);
        if (pb!.queuedMs <= before && pb!.queuedMs < 20) return;
      }
    };
    pb.onHanded = write;
    // silence the speaker played for want of frames, placed where it played (before the frames still queued)
    pb.onStarved = (ms, queuedMs) => reference!.noteStarved(ms, queuedMs);
    await pb.start();
    write();
    const measureFrom = BigInt(probeMs - MEASURE_MS) * 1_000_000n;
    await cap.start((frame, at) => {
      const out = aec.process(frame, at);
      let a = 0;
      let b = 0;
      for (let i = 0; i < frame.length; i++) {
        a += frame[i] * frame[i];
        b += out[i] * out[i];
      }
      if (probeAtNs === 0n) {
        quietSum += a;
        quietN += frame.length;
      } else if (at - probeAtNs > measureFrom + 300_000_000n && at - probeAtNs < BigInt(probeMs + 300) * 1_000_000n) {
        // the probe's end, as heard (allowing 300 ms for the way through the card and the room)
        inSum += a;
        outSum += b;
      }
    });
    // Sound servers take a moment to start a stream: listen to the room first, then play.
    await sleep(400);
    probeAtNs = process.hrtime.bigint();
    const starvedBefore = reference.stats.starvedMs; // a stream's start may starve: not the probe's
    written = 0;
    await sleep(probeMs + 400);
    return {
      delayMs: aec.stats().delayMs,
      quietDbfs: dbfs(quietSum, Math.max(1, quietN)),
      reductionDb: 10 * Math.log10((inSum + 1) / (outSum + 1)),
      starvedMs: reference.stats.starvedMs - starvedBefore,
    };
  } finally {
    if (pb) {
      pb.onHanded = undefined;
      pb.onStarved = undefined;
    }
    await cap?.stop().catch(() => undefined);
    await pb?.stop().catch(() => undefined);
    aec.close();
    reference.close();
  }
}

const dbfs = (sum: number, n: number) => (sum > 0 ? 10 * Math.log10(sum / n / 32768 ** 2) : -Infinity);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-inf');
const round1 = (x: number) => Math.round(x * 10) / 10;
