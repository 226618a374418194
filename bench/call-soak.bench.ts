// A speaker's call lives for weeks (src/agent/agent.ts keeps it up for ever), so a leak per packet, per message or
// per function call shows only over hours, not in the minutes the other benches measure. This bench holds ONE call
// per agent for BENCH_SOAK_MIN minutes (default 60): both ways audio all the time (the peer's tone every 10 s, the
// virtual microphone's tone), and every 30 s a function call on the data channel (set_device_volume on the real
// mixer) whose output must come back. The machine's Node and, when there is one, the newest LTS run at once, each
// agent on a private copy of its binary (bench/agentProcess.ts), each with its own peer.
// BENCH_SOAK_MODE=wake: a kitchen's day instead. The agents listen for the wake word (the real engine, in its
// thread for the whole run); the microphone is silent but for the wake phrase (flite voices) every 2 minutes, after
// which the microphone goes onto the call until a second of silence closes it, and the peer answers with 3 s of
// audio. Each phrase must be heard. A second
// run of the bench at the same time is fine: each run starts its own virtual sound card.
// Sampled every 30 s: RSS and its anonymous part, open descriptors and threads. The figures:
//   - memory growth: the least-squares slope of the samples after BENCH_SOAK_WARM_MIN (default 20), in MB an
//     hour, and the median of the last 5 minutes against that of the first 5 after the warm-up. The target is on
//     anonymous memory, where a leak shows; RSS also counts code read back from files after the page-out of
//     start-up code (a minute in), which returns page by page as paths first run: bounded by what runs, it rose
//     0.3 MB over the second half hour of the first soak (1 Dec). The warm-up: V8 flushes bytecode about 7 minutes
//     in, and in that soak RSS settled 10-25 minutes in;
//   - descriptors and threads, first sample after the warm-up against the last;
//   - calls: the agent must never have re-created its call, and every function call must have been answered.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { Readable } from 'node:stream';
import path from 'node:path';
import { sineWave } from '../src/common/audio/signal.js';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { openDescriptors } from '../test/support/processResources.js';
import { BENCH_KEY, buildAgent, otherNode, pagedOut, privateNode, rssMb, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio } from './agentProcess.js';
import { percentile, slope, type BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SAMPLE_MS = 30_000;
const FUNCTION_EVERY_MS = 30_000;
const WAKE_EVERY_MS = 120_000;

const threads = (pid: number) => Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
const version = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

/** flite voices saying the wake phrase (the default engine's "hey jarvis"), as WAV files */
function wakeWavs(dir: string): string[] {
  return ['slt', 'awb', 'rms', 'kal16'].map((voice) => {
    const wav = path.join(dir, `wake-${voice}.wav`);
    execFileSync('flite', ['-voice', voice, '-t', 'hey jarvis', '-o', wav]);
    return wav;
  });
}

export interface Sample {
  min: number;
  rss: number;
  /** the anonymous part of rss (heap, stacks, V8): what a leak grows; the rest is code and data read from files,
   *  which after the page-out of start-up code comes back page by page as paths first run, up to what runs */
  anon: number;
  fds: number;
  threads: number;
}

const anonymousMb = (pid: number) => Number(/^Anonymous:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? NaN) / 1024;

/** one sample of a process, `min` minutes since t0 (performance.now()); undefined once the process has exited
 *  (its /proc directory is gone: the soak's rows then have fewer samples, and its other rows say what failed) */
export function sampleOf(pid: number, t0: number): Sample | undefined {
  try {
    return { min: (performance.now() - t0) / 60_000, rss: rssMb(pid), anon: anonymousMb(pid), fds: openDescriptors(pid).total, threads: threads(pid) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw err;
  }
}

/** Why each call after the first ended, from an agent's log lines ("call ended: ..."), for a row's note. */
export function callEndings(lines: string[]): string[] {
  return lines.flatMap((l) => {
    const msg = /"msg":"(call ended: [^"]*)"/.exec(l)?.[1];
    return msg ? [msg] : [];
  });
}

/** The figures of one process's samples: memory growth (the slope after warmMin, in MB an hour) and descriptors and
 *  threads after the warm-up against the end. */
export function growthRows(label: string, samples: Sample[], warmMin: number, minutes: number): BenchRow[] {
  const steady = samples.filter((s) => s.min >= warmMin);
  if (steady.length < 4) return [{ issue: '-', metric: label, value: NaN, unit: '', note: `${samples.length} samples, too few after ${warmMin} min: set BENCH_SOAK_MIN above ${warmMin + 5}` }];
  const perHour = (k: 'rss' | 'anon') => slope(steady.map((s) => s.min), steady.map((s) => s[k])) * 60;
  const medians = (k: 'rss' | 'anon') =>
    [steady.filter((s) => s.min < steady[0].min + 5), steady.filter((s) => s.min > steady.at(-1)!.min - 5)].map((xs) => percentile(xs.map((s) => s[k]), 50).toFixed(1)).join(' -> ');
  const [first, last] = [steady[0], steady.at(-1)!];
  const all = samples.map((s) => s.rss);
  return [
    {
      issue: '-',
      metric: `${label}: anonymous memory growth over ${minutes} min (slope after ${warmMin} min)`,
      value: perHour('anon'),
      unit: 'MB/h',
      target: '<= 1 MB/h',
      pass: perHour('anon') <= 1,
      note: `medians ${medians('anon')} MB (first and last 5 min after the warm-up); RSS ${medians('rss')} MB, slope ${perHour('rss').toFixed(2)} MB/h, all samples ${Math.min(...all).toFixed(1)}-${Math.max(...all).toFixed(1)} MB`,
    },
    {
      issue: '-',
      metric: `${label}: descriptors / threads, after the warm-up -> the end`,
      value: last.fds - first.fds,
      unit: 'fds',
      target: '0 fds, 0 threads',
      pass: last.fds === first.fds && last.threads === first.threads,
      note: `${first.fds} -> ${last.fds} descriptors, ${first.threads} -> ${last.threads} threads`,
    },
  ];
}

export async function run(): Promise<BenchRow[]> {
  // an hour: not part of a plain `npm run bench`, only when named (`npm run bench call-soak`) or given a length
  const named = process.argv.slice(2).some((o) => 'call-soak.bench.ts'.includes(o));
  if (!named && !process.env.BENCH_SOAK_MIN) return [{ issue: '-', metric: 'call soak', value: NaN, unit: '', note: 'an hour long: `npm run bench call-soak` (BENCH_SOAK_MIN, BENCH_SOAK_MODE=wake)' }];
  const minutes = Number(process.env.BENCH_SOAK_MIN ?? 60);
  const warmMin = Number(process.env.BENCH_SOAK_WARM_MIN ?? 20);
  const mode = process.env.BENCH_SOAK_MODE === 'wake' ? 'wake' : 'always';
  const b = otherNode();
  const nodes = b ? [process.execPath, b] : [process.execPath];
  const privates = nodes.map((n) => privateNode(n));
  startVirtualAudio();
  const agentMain = await buildAgent();
  const peers = nodes.map(() => new TestAssistantPeerProcess({ workspaceKey: BENCH_KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json') }));
  const samples: Sample[][] = nodes.map(() => []);
  const sent = nodes.map(() => 0);
  const answered = nodes.map(() => 0);
  const calls = nodes.map(() => 0);
  const played = nodes.map(() => 0);
  const heard = nodes.map(() => 0);
  const peerTone = sineWave(440, 48_000, 10, 0.3);
  let pacat: ChildProcess | undefined;
  const timers: NodeJS.Timeout[] = [];
  const agents = nodes.map(() => undefined as ReturnType<typeof spawnAgent> | undefined);
  try {
    await Promise.all(peers.map((p) => p.start()));
    const config = mode === 'wake' ? { listening: { mode, silenceMs: 1_000 } } : undefined;
    nodes.forEach((_, i) => (agents[i] = spawnAgent(agentMain, peers[i].url, mkdtempSync(path.join(os.tmpdir(), 'bench-state-')), config, privates[i])));
    await Promise.all(agents.map((a) => a!.next(/^call connected$/, 60_000)));
    if (mode === 'wake') await Promise.all(agents.map((a) => (a!.lines.some((l) => l.includes('wake word engine ready')) ? 0 : a!.next(/^wake word engine ready$/, 60_000))));
    const t0 = performance.now();
    const feed = () => peers.forEach((p) => void p.playTone(peerTone).catch(() => undefined));
    if (mode === 'always') {
      feed();
      timers.push(setInterval(feed, 10_000));
    }
    if (mode === 'always') {
      pacat = spawn('pacat', ['--playback', '--device=mic_in', '--format=s16le', '--rate=48000', '--channels=1', '--raw'], { env: process.env, stdio: ['pipe', 'ignore', 'ignore'] });
      pacat.stdin!.on('error', () => undefined);
      // a second of tone, again and again (the whole run's at once would be 3 MB a minute in this process)
      const second = Buffer.from(sineWave(700, 48_000, 1, 0.3).buffer);
      Readable.from((function* () {
        for (let i = 0; i < minutes * 60 + 120; i++) yield second;
      })()).pipe(pacat.stdin!);
    } else {
      const answer = sineWave(440, 48_000, 3, 0.3);
      const wavs = wakeWavs(mkdtempSync(path.join(os.tmpdir(), 'bench-wake-')));
      let w = 0;
      const sayWake = () => {
        agents.forEach((a, i) => {
          played[i]++;
          // the assistant's answer: a few seconds of audio (the agent pages its start-up code out only outside
          // a conversation, so an assistant that never stops talking would keep it in)
          void a!.next(/^wake word heard$/, 10_000).then(() => (heard[i]++, peers[i].playTone(answer)), () => undefined);
        });
        execFileSync('paplay', ['-d', 'mic_in', wavs[w++ % wavs.length]], { env: process.env });
      };
      timers.push(setInterval(sayWake, WAKE_EVERY_MS));
    }
    let n = 0;
    const callFunction = () =>
      peers.forEach((p, i) => {
        const callId = `soak_${i}_${n}`;
        sent[i]++;
        void p.sendEvent({
          type: 'response.output_item.done',
          item: { type: 'function_call', id: `item_${callId}`, call_id: callId, name: 'set_device_volume', arguments: JSON.stringify({ volume_level: 40 + (n % 2) * 20 }) },
        });
        n++;
      });
    timers.push(setInterval(callFunction, FUNCTION_EVERY_MS));
    await Promise.all(agents.map((a) => pagedOut(a!)));
    while (performance.now() - t0 < minutes * 60_000) {
      await sleep(SAMPLE_MS);
      agents.forEach((a, i) => {
        const sample = sampleOf(a!.child.pid!, t0);
        if (sample) samples[i].push(sample);
      });
    }
    timers.forEach(clearInterval);
    await sleep(11_000); // the last phrase's and function call's answers
    peers.forEach((p, i) => {
      answered[i] = p.events.filter((e) => /"function_call_output"/.test(e.raw) && /"soak_/.test(e.raw)).length;
      calls[i] = p.callIds.length;
    });
  } finally {
    timers.forEach(clearInterval);
    pacat?.kill();
    await Promise.all(agents.map((a) => (a ? stopAgent(a) : undefined)));
    await Promise.all(peers.map((p) => p.kill()));
    stopVirtualAudio();
  }
  const rows: BenchRow[] = [];
  nodes.forEach((node, i) => {
    const v = version(node);
    rows.push({
      issue: '-',
      metric: `call soak (${mode}), Node ${v}: calls made / function calls answered`,
      value: calls[i],
      unit: 'calls',
      target: '1 call, all answered',
      pass: calls[i] === 1 && answered[i] === sent[i],
      note: `${answered[i]} of ${sent[i]} function calls answered${calls[i] > 1 ? `; ${callEndings(agents[i]?.lines ?? []).join('; ')}` : ''}`,
    });
    if (mode === 'wake')
      rows.push({ issue: '-', metric: `call soak (wake), Node ${v}: wake phrases heard`, value: heard[i], unit: `of ${played[i]}`, target: 'all', pass: played[i] > 0 && heard[i] === played[i], note: 'flite voices, one every 2 minutes, into a silent microphone' });
    rows.push(...growthRows(`call soak (${mode}), Node ${v}, one call`, samples[i], warmMin, minutes));
  });
  return rows;
}
