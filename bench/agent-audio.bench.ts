// Issue #5 benchmark: the agent's audio path on the virtual sound card (scripts/virtual-audio.sh), for 30 s of
// steady two-way audio through Uplink + Downlink, without WebRTC (the call engineer measures werift itself).
//
// What each number includes:
// - mic-to-wire: from the moment a 20 ms capture frame reaches JS (naudiodon's read completes; PortAudio's own
//   callback time is not exposed by naudiodon) through the echo gate, Opus encode, RTP header and the UDP
//   socket send() call (a stand-in for werift's RTP send) returning. It does NOT include the sound card's and
//   PortAudio's input buffering before the frame reaches JS (one 20 ms PortAudio period plus ALSA/PulseAudio).
// - wire-to-speaker: from the moment an RTP packet is handed to Downlink.push (what the call does on receipt)
//   through the jitter buffer, Opus decode and the frame waiting for the device, to the moment the PortAudio
//   callback has copied the frame into the buffer it hands to ALSA (reported to JS right after). Not included:
//   the device buffer itself (60 ms suggested latency). The far end sends every 20 ms from a timer in this
//   process, so the jitter buffer sees real timer jitter but no network. "Underruns" counts device periods
//   that found no frame queued (JS late) and played silence.
// - CPU: user+system time of this process over the steady 30 s (after start-up), as % of one core: capture,
//   echo gate, encode, RTP send, jitter buffer, decode, playback, and the far end's packet timer (pre-encoded
//   packets, so no far-end encoding). The encoder sees real audio (full-duplex gate) for the worst case.
// - RSS: resident memory of this process at the end (includes tsx and the benchmark harness).
import { spawn, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Downlink } from '../src/agent/audio/downlink.js';
import { EchoGate } from '../src/agent/audio/echoGate.js';
import { JitterBuffer } from '../src/agent/audio/jitterBuffer.js';
import { OpusFrameDecoder, OpusFrameEncoder } from '../src/common/audio/opusCodec.js';
import { PortAudioBackend } from '../src/agent/audio/portAudioBackend.js';
import { ResilientCapture, ResilientPlayback } from '../src/agent/audio/resilientDevice.js';
import { Uplink } from '../src/agent/audio/uplink.js';
import { echoGateStage } from '../src/agent/audio/micStages.js';
import { percentile, type BenchRow } from './table.js';

const root = path.resolve(import.meta.dirname, '..');
const seconds = Number(process.env.AUDIO_BENCH_SECONDS ?? 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the virtual card unless one is given (PULSE_SERVER); returns how to stop what it started. */
function startVirtualCard(): () => void {
  if (process.env.PULSE_SERVER) return () => {};
  const dir = process.env.SPEAKER_AGENT_PULSE_DIR ?? path.join(root, '.test-runtime', 'bench-pulse');
  mkdirSync(dir, { recursive: true });
  const out = execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['start'], {
    env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir },
    encoding: 'utf8',
  });
  for (const m of out.matchAll(/^export (\w+)=(.*)$/gm)) process.env[m[1]] = m[2];
  return () => {
    execFileSync(path.join(root, 'scripts/virtual-audio.sh'), ['stop'], { env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir } });
    delete process.env.PULSE_SERVER;
  };
}

/** A voice-like test signal: a 300 Hz fundamental with harmonics, amplitude-modulated at 4 Hz (syllables). */
function voiceLike(ms: number, seed = 0): Int16Array {
  const n = (48 * ms) | 0;
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / 48_000;
    const env = 0.55 + 0.45 * Math.sin(2 * Math.PI * 4 * t + seed);
    const s = Math.sin(2 * Math.PI * 300 * t) + 0.5 * Math.sin(2 * Math.PI * 600 * t) + 0.25 * Math.sin(2 * Math.PI * 1200 * t);
    out[i] = Math.round(6000 * env * s);
  }
  return out;
}

/** CPU ticks (1/100 s) of this process's main thread and of all its other threads (audio, libuv pool, GC). */
function threadTicks(): { main: number; others: number } {
  let main = 0;
  let others = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(f[11]) + Number(f[12]);
      if (Number(tid) === process.pid) main += ticks;
      else others += ticks;
    } catch {
      /* thread ended */
    }
  }
  return { main, others };
}

function rtpPacket(seq: number, ts: number, ssrc: number, payload: Buffer): Buffer {
  const b = Buffer.allocUnsafe(12 + payload.length);
  b[0] = 0x80;
  b[1] = 111;
  b.writeUInt16BE(seq & 0xffff, 2);
  b.writeUInt32BE(ts >>> 0, 4);
  b.writeUInt32BE(ssrc >>> 0, 8);
  payload.copy(b, 12);
  return b;
}

export async function run(): Promise<BenchRow[]> {
  const stopVirtualCard = startVirtualCard();
  // Overrides only to compare device settings; defaults are the product's.
  const backend = new PortAudioBackend({
    framesPerBuffer: process.env.AUDIO_BENCH_FRAMES_PER_BUFFER ? Number(process.env.AUDIO_BENCH_FRAMES_PER_BUFFER) : undefined,
    outputLatencyMs: process.env.AUDIO_BENCH_OUTPUT_LATENCY_MS ? Number(process.env.AUDIO_BENCH_OUTPUT_LATENCY_MS) : undefined,
    inputLatencyMs: process.env.AUDIO_BENCH_INPUT_LATENCY_MS ? Number(process.env.AUDIO_BENCH_INPUT_LATENCY_MS) : undefined,
    realtimePriority: process.env.AUDIO_BENCH_REALTIME_PRIORITY ? Number(process.env.AUDIO_BENCH_REALTIME_PRIORITY) : undefined,
  });
  const gate = new EchoGate({ mode: 'full-duplex' });
  // The devices as the agent uses them: reopened if they fail (a stall > 1.5 s counts as failed).
  const capture = new ResilientCapture({ backend, deviceName: 'default' });
  const uplink = new Uplink({ capture, encoder: new OpusFrameEncoder(), stages: [echoGateStage(gate)] });
  const jitter = new JitterBuffer();
  const playback = new ResilientPlayback({ backend, deviceName: 'default' });
  const downlink = new Downlink({
    playback,
    decoder: new OpusFrameDecoder(),
    jitter,
    echoGate: gate,
  });

  // The wire: RTP over UDP on loopback.
  const sink = dgram.createSocket('udp4');
  await new Promise<void>((r) => sink.bind(0, '127.0.0.1', r));
  const port = sink.address().port;
  const sock = dgram.createSocket('udp4');
  let seq = 0;
  let ts = 0;
  await uplink.start((opus) => {
    sock.send(rtpPacket(seq++, (ts += 960), 0x1111, opus), port, '127.0.0.1');
  });
  await downlink.start();

  // The user speaks into the microphone for the whole run (pacat is another process: not counted).
  const talkMs = (seconds + 10) * 1000;
  const mic = voiceLike(talkMs);
  const pacat = spawn('pacat', ['--playback', '--device=mic_in', '--format=s16le', '--rate=48000', '--channels=1', '--raw'], {
    env: process.env,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  pacat.stdin.on('error', () => {});
  pacat.stdin.end(Buffer.from(mic.buffer, mic.byteOffset, mic.byteLength));

  // The assistant speaks continuously: pre-encoded packets, one every 20 ms from a drift-corrected timer.
  const enc = new OpusFrameEncoder();
  const far = voiceLike(10_000, 1);
  const packets = Array.from({ length: 500 }, (_, i) => enc.encode(far.subarray(i * 960, (i + 1) * 960)));
  let farSeq = 40_000;
  let farTs = 0;
  let next = performance.now();
  let farTimer: NodeJS.Timeout | undefined;
  const sendFar = () => {
    const now = performance.now();
    while (next <= now) {
      downlink.push({ sequenceNumber: farSeq++ & 0xffff, timestamp: (farTs += 960) >>> 0, ssrc: 0x2222, payload: packets[farSeq % packets.length] }, process.hrtime.bigint());
      next += 20;
    }
    farTimer = setTimeout(sendFar, Math.max(0, next - performance.now()));
  };
  sendFar();

  // Let both streams get going (PulseAudio start-up), then measure the steady state.
  await sleep(3000);
  uplink.stats.micToWire.clear();
  downlink.stats.wireToSpeaker.clear();
  const cpu0 = process.cpuUsage();
  const ticks0 = threadTicks();
  const t0 = performance.now();
  const packets0 = uplink.stats.packets;
  const decoded0 = downlink.stats.framesDecoded;
  const concealed0 = downlink.stats.framesConcealed;
  let handed = 0;
  const underruns0 = playback.underruns;
  const onHanded = playback.onHanded; // set by downlink.start(); count what the card really takes
  playback.onHanded = (at: bigint) => {
    handed++;
    onHanded?.(at);
  };
  await sleep(seconds * 1000);
  const cpu = process.cpuUsage(cpu0);
  const ticks1 = threadTicks();
  const wallMs = performance.now() - t0;
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  const underruns = playback.underruns - underruns0;
  const sent = uplink.stats.packets - packets0;
  const played = downlink.stats.framesDecoded - decoded0;
  const concealed = downlink.stats.framesConcealed - concealed0;

  clearTimeout(farTimer);
  pacat.kill('SIGTERM');
  await uplink.stop();
  await downlink.stop();
  sock.close();
  sink.close();
  stopVirtualCard();

  const up = uplink.stats.micToWire.samplesMs();
  const down = downlink.stats.wireToSpeaker.samplesMs();
  const cpuPct = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
  const mainPct = ((ticks1.main - ticks0.main) * 10 * 100) / wallMs;
  const otherPct = ((ticks1.others - ticks0.others) * 10 * 100) / wallMs;
  const upP50 = percentile(up, 50);
  const downP50 = percentile(down, 50);
  return [
    {
      issue: '#5',
      metric: 'mic-to-wire latency p50',
      value: upP50,
      unit: 'ms',
      target: '<= 25 ms',
      pass: upP50 <= 25,
      note: `p95 ${percentile(up, 95).toFixed(2)} ms, ${up.length} frames; capture reaches JS -> UDP send; mic reopened ${capture.stats.opens - 1}x`,
    },
    {
      issue: '#5',
      metric: 'wire-to-speaker latency p50',
      value: downP50,
      unit: 'ms',
      target: '<= 40 ms',
      pass: downP50 <= 40,
      note: `p95 ${percentile(down, 95).toFixed(1)} ms; jitter target ${jitter.targetDelayMs} ms, trimmed ${jitter.stats.trimmed}; card took ${((handed / wallMs) * 1000).toFixed(1)} frames/s (50 = real time), ${underruns} underruns, playout queue ${downlink.playoutQueueMs} ms (grew ${downlink.stats.playoutQueueGrows}x), reopened ${playback.stats.opens - 1}x`,
    },
    {
      issue: '#5',
      metric: `CPU, ${seconds} s two-way audio (no WebRTC)`,
      value: cpuPct,
      unit: '% of 1 core',
      target: '<= 5 %',
      pass: cpuPct <= 5,
      note: `JS thread ${mainPct.toFixed(1)} %, audio/pool threads ${otherPct.toFixed(1)} %; sent ${sent} / played ${played} / concealed ${concealed} frames; load avg ${os.loadavg()[0].toFixed(1)}`,
    },
    { issue: '#5', metric: 'RSS after the audio run', value: rssMb, unit: 'MB', note: 'whole bench process (tsx included)' },
  ];
}
