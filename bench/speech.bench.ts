// Speech engine benchmarks: espeak synthesis with word timings (WAV and MP3), first-chunk latency of a short
// reply, pocketsphinx real-time factor, VAD cost per frame, and the main thread's longest stall meanwhile.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { percentile, type BenchRow } from './table.js';
import { EspeakSynthesizer } from '../src/companion/speech/espeakSynthesizer.js';
import { createMp3Encoder } from '../src/companion/speech/audioConvert.js';
import { PocketsphinxRecognizer } from '../src/companion/speech/pocketsphinxRecognizer.js';
import { VoiceActivityDetector } from '../src/companion/speech/vad.js';
import { decodeWav, wavHeader } from '../src/common/audio/wav.js';
import { resample, Resampler } from '../src/common/audio/resample.js';

const STORY =
  'Once upon a time, in a village by the sea, there lived a girl called Mira who loved to read. ' +
  'Every evening she climbed the old lighthouse, counted 127 steps, and read aloud to the gulls! ' +
  'Dr. Holm, the keeper, said it cost $3.50 a week to keep the lamp burning; "worth every penny," he laughed. ';

function story(chars: number): string {
  let t = '';
  while (t.length < chars) t += STORY;
  return t.slice(0, chars);
}

/** CPU seconds (user + system) a process has used, from /proc (Linux); 0 when unreadable. */
function procCpuSec(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return 0;
  }
}

/** Longest gap between 5 ms timer ticks while fn runs: how long the event loop was blocked. */
async function withStallMeter<T>(fn: () => Promise<T>): Promise<{ value: T; maxStallMs: number }> {
  let last = performance.now();
  let max = 0;
  const iv = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 5);
    last = now;
  }, 5);
  try {
    const value = await fn();
    return { value, maxStallMs: max };
  } finally {
    clearInterval(iv);
  }
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const synth = new EspeakSynthesizer();
  await synth.ready();
  const text = story(15000);
  // warm-up (JIT, espeak data pages)
  await synth.synthesize(story(2000), { language: 'en-us' }, { onAudio: () => {} });

  // 15,000 characters -> WAV with timestamps
  const wavTimes: number[] = [];
  let durationMin = 0;
  let cpuSec = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const workerCpu0 = synth.workerPids('bulk').reduce((a, pid) => a + procCpuSec(pid), 0);
    const mainCpu0 = process.cpuUsage();
    // as the REST API does it: a streamed WAV body (header first, PCM appended as it comes)
    const parts: Buffer[] = [];
    const r = await synth.synthesize(text, { language: 'en-us' }, { onAudio: (p) => parts.push(Buffer.from(p.buffer, p.byteOffset, p.byteLength)) });
    const wav = Buffer.concat([wavHeader(r.samples * 2, r.sampleRate), ...parts]);
    wavTimes.push(performance.now() - t0);
    const mainCpu = process.cpuUsage(mainCpu0);
    cpuSec = synth.workerPids('bulk').reduce((a, pid) => a + procCpuSec(pid), 0) - workerCpu0 + (mainCpu.user + mainCpu.system) / 1e6;
    durationMin = r.durationMs / 60000;
    if (wav.length !== 44 + r.samples * 2) throw new Error('WAV length mismatch');
  }
  // event-loop health while synthesizing (audio only counted: the stall is the synthesizer's own)
  const stall = (await withStallMeter(() => synth.synthesize(text, { language: 'en-us' }, { onAudio: () => {} }))).maxStallMs;
  const wavP50 = percentile(wavTimes, 50) / 1000;
  rows.push({ issue: '#3', metric: 'TTS 15,000 chars -> WAV + word timestamps (p50 of 3)', value: wavP50, unit: 's', target: '<= 3 s', pass: wavP50 <= 3, note: `${durationMin.toFixed(1)} min of audio, 2 bulk workers, ${cpuSec.toFixed(2)} CPU-s in all; load ${loadavg()[0].toFixed(1)}` });
  rows.push({ issue: '#3', metric: 'main-thread longest stall during 15k synthesis', value: stall, unit: 'ms', target: '<= 20 ms', pass: stall <= 20 });

  // 15,000 characters -> MP3 (synthesis and encoding overlap: PCM streams into ffmpeg)
  const mp3Times: number[] = [];
  let mp3Bytes = 0;
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now();
    const enc = createMp3Encoder(synth.sampleRate);
    let bytes = 0;
    enc.output.on('data', (b: Buffer) => { bytes += b.length; });
    await synth.synthesize(text, { language: 'en-us' }, { onAudio: (p) => enc.write(p) });
    await enc.end();
    mp3Times.push(performance.now() - t0);
    mp3Bytes = bytes;
  }
  const mp3P50 = percentile(mp3Times, 50) / 1000;
  rows.push({ issue: '#3', metric: 'TTS 15,000 chars -> MP3 + timestamps (p50 of 2)', value: mp3P50, unit: 's', target: '<= 5 s', pass: mp3P50 <= 5, note: `${(mp3Bytes / 1e6).toFixed(1)} MB at 64 kbit/s` });

  // first audio chunk of a short reply on the realtime lane (idle, and while a bulk narration runs)
  const reply = 'Sure! I set the volume to forty percent. Anything else?';
  const firstChunk = async () => {
    const t0 = performance.now();
    let first = 0;
    await synth.synthesize(reply, { language: 'en-us', gender: 'female' }, { lane: 'realtime', onAudio: () => { if (!first) first = performance.now() - t0; } });
    return first;
  };
  const idle: number[] = [];
  for (let i = 0; i < 20; i++) idle.push(await firstChunk());
  const busy: number[] = [];
  const bulk = synth.synthesize(text, { language: 'en-us' }, { onAudio: () => {} });
  for (let i = 0; i < 10; i++) busy.push(await firstChunk());
  await bulk;
  rows.push({ issue: '#2', metric: 'TTS first chunk of a short reply, p50 (idle)', value: percentile(idle, 50), unit: 'ms', target: '<= 100 ms (budget in 600 ms reply)', pass: percentile(idle, 50) <= 100, note: `p95 ${percentile(idle, 95).toFixed(1)} ms` });
  rows.push({ issue: '#2', metric: 'TTS first chunk of a short reply, p50 (bulk running)', value: percentile(busy, 50), unit: 'ms', target: '<= 100 ms', pass: percentile(busy, 50) <= 100, note: `p95 ${percentile(busy, 95).toFixed(1)} ms` });
  await synth.close();

  // recognizer real-time factor on flite speech (16 kHz), command mode (grammar + LM decoders) and dictation
  const dir = path.resolve(import.meta.dirname, '../.test-runtime/bench-speech');
  mkdirSync(dir, { recursive: true });
  const wavFile = path.join(dir, 'utterances.wav');
  execFileSync('flite', ['-voice', 'slt', '-t', 'Set the volume to forty percent. What time is it? Read me the story about the little red hen, please.', '-o', wavFile]);
  const w = decodeWav(readFileSync(wavFile));
  const pcm16 = resample(w.pcm, w.sampleRate, 16000);
  const audioSec = pcm16.length / 16000;
  const rec = new PocketsphinxRecognizer();
  await rec.warmUp();
  for (const mode of ['command', 'dictation'] as const) {
    const rtfs: number[] = [];
    let recStall = 0;
    const cpus: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const { maxStallMs } = await withStallMeter(() => rec.recognize(pcm16, { mode }));
      const c = process.cpuUsage(c0);
      rtfs.push((performance.now() - t0) / 1000 / audioSec);
      cpus.push((c.user + c.system) / 1e6 / audioSec);
      recStall = Math.max(recStall, maxStallMs);
    }
    const rtf = percentile(rtfs, 50);
    rows.push({ issue: '#2', metric: `STT real-time factor (${mode}, one-shot ${audioSec.toFixed(1)} s)`, value: rtf, unit: 'x', target: '<= 0.3', pass: rtf <= 0.3, note: `CPU-s per audio-s ${percentile(cpus, 50).toFixed(2)}; main-thread stall max ${recStall.toFixed(1)} ms` });
  }
  // streaming: audio written in real-time-sized pieces; what remains at end() is the user-visible latency
  const s = rec.createStream({ mode: 'command' });
  for (let i = 0; i < pcm16.length; i += 320) {
    s.write(pcm16.subarray(i, i + 320));
    if (i % 3200 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  await new Promise((r) => setTimeout(r, audioSec * 1000 * 0.5)); // let decoding keep up, as it would while the user talks
  const tEnd = performance.now();
  await s.end();
  rows.push({ issue: '#2', metric: 'STT end-of-speech -> transcript (streamed, command mode)', value: performance.now() - tEnd, unit: 'ms', target: 'fits 600 ms reply budget', note: 'after the audio was streamed' });
  await rec.close();

  // VAD and resampler cost per 20 ms frame at 48 kHz
  const frame48 = resample(pcm16, 16000, 48000);
  const vad = new VoiceActivityDetector({ sampleRate: 48000 });
  const frames = Math.floor(frame48.length / 960);
  // CPU time rather than wall time: the main thread is the only busy one here, and CPU time is what 20 calls
  // on one core spend, whatever else the machine is doing
  const cpuUs = (c: NodeJS.CpuUsage) => c.user + c.system;
  let c0 = process.cpuUsage();
  for (let rep = 0; rep < 20; rep++) for (let f = 0; f < frames; f++) vad.process(frame48.subarray(f * 960, f * 960 + 960));
  const vadUs = cpuUs(process.cpuUsage(c0)) / (20 * frames);
  rows.push({ issue: '#2', metric: 'VAD CPU per 20 ms frame (48 kHz)', value: vadUs, unit: 'µs', target: '<= 200 µs (20 calls on one core)', pass: vadUs <= 200 });
  const rs = new Resampler(48000, 16000);
  c0 = process.cpuUsage();
  for (let rep = 0; rep < 20; rep++) for (let f = 0; f < frames; f++) rs.process(frame48.subarray(f * 960, f * 960 + 960));
  const rsUs = cpuUs(process.cpuUsage(c0)) / (20 * frames);
  rows.push({ issue: '#2', metric: 'Resampler 48k->16k CPU per 20 ms frame', value: rsUs, unit: 'µs', target: '<= 200 µs', pass: rsUs <= 200 });
  return rows;
}
