// The companion's speech recogniser's memory (2 Dec: its decoders' dictionaries, see lmDictionary.ts), side by side
// in one run:
//   - one decoder pair (grammar + language model), each way in its own process (bench/recognizerMemoryMain.ts),
//     three rounds alternating: as shipped (the dictionary cache made beforehand, as at every start but the
//     first), and the anchor, two bare decoders on Debian's full dictionary as the companion made them before;
//     and the first start, which makes the cache;
//   - `companion serve` (the CLI bundle, its own process; one decoding thread kept loaded as shipped) at rest once
//     its decoders are loaded (RSS settled), with the cache in its data directory;
//   - the recogniser's threads (bench/recognizerThreadsMain.ts), one kept as shipped against two kept as before:
//     RSS at rest, while two utterances overlap, and after the second thread's idle stop; each utterance's wait;
//   - the companion's reply synthesis process (dist/espeakWorker.js) with its page-out of start-up code against
//     without, three rounds alternating: PSS at rest and after a reply, the reply's first audio and the pages it
//     read back from the disk.
import { fork, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rssMb } from './agentProcess.js';
import { percentile, type BenchRow } from './table.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/speaker-agent.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Pair {
  rssMb: number;
  anonMb: number;
  ms: number;
}

function pair(variant: 'full' | 'shipped', cacheDir: string): Pair {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/recognizerMemoryMain.ts'), variant, cacheDir], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`recognizerMemoryMain ${variant}: exit ${r.status}: ${r.stderr.slice(-300)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Pair;
}

const med = (xs: number[]) => percentile(xs, 50);

interface Threads {
  restMb: number;
  busyMb: number;
  afterMb: number;
  threads: number;
  firstMs: number;
  secondMs: number;
  wholeMs: number;
}

function threads(keep: 1 | 2, cacheDir: string): Threads {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/recognizerThreadsMain.ts'), String(keep), cacheDir], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`recognizerThreadsMain ${keep}: exit ${r.status}: ${r.stderr.slice(-300)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Threads;
}

/** Proportional set size of a process (its share of shared pages), MB. */
function pssMb(pid: number): number {
  return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))![1]) / 1024;
}

/** The child processes of pid (the companion's espeak synthesis workers). */
function childrenOf(pid: number): number[] {
  const tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return tasks ? tasks.split(/\s+/).map(Number) : [];
}

/** How long a bulk synthesis worker (dist/espeakWorker.js, as the companion forks it) takes from its fork to
 *  'ready' (espeak loaded): what the first bulk request after an idle minute waits for beyond its synthesis. */
async function espeakWorkerStartMs(): Promise<number> {
  const t0 = performance.now();
  const child = fork(path.join(ROOT, 'dist/espeakWorker.js'), ['500'], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('message', (m: { type?: string }) => (m?.type === 'ready' ? resolve() : reject(new Error(`espeak worker: ${JSON.stringify(m)}`))));
      child.once('exit', (code) => reject(new Error(`espeak worker exited ${code}`)));
    });
    return performance.now() - t0;
  } finally {
    child.kill();
  }
}

interface ReplyWorker {
  restPss: number;
  afterPss: number;
  firstAudioMs: number;
  majorFaults: number;
}

/** A reply synthesis process as the companion forks it (60 ms buffers; its page-out 1 s after start, or never):
 *  PSS 3 s after its ready, then one reply's first audio, the pages the reply read from the disk (major faults), and
 *  PSS after it. */
async function replyWorker(pageOutMs: number): Promise<ReplyWorker> {
  const child = fork(path.join(ROOT, 'dist/espeakWorker.js'), ['60', String(pageOutMs)], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  const majorFaults = () => Number(readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ')[9]);
  const next = (type: string) =>
    new Promise<void>((resolve, reject) => {
      const on = (m: { type?: string }) => {
        if (m?.type === type) {
          child.off('message', on);
          resolve();
        } else if (m?.type === 'fatal' || m?.type === 'error') reject(new Error(`espeak worker: ${JSON.stringify(m)}`));
      };
      child.on('message', on);
    });
  try {
    await next('ready');
    await sleep(3000);
    const restPss = pssMb(child.pid!);
    const faults0 = majorFaults();
    const t0 = performance.now();
    const done = next('done');
    const audio = next('audio');
    child.send({ type: 'synth', job: 1, text: 'Sure, the volume is now fifty percent. Anything else?', voice: { name: 'en-us', rate: 175, pitch: 50, range: 50 } });
    await audio;
    const firstAudioMs = performance.now() - t0;
    await done;
    return { restPss, afterPss: pssMb(child.pid!), firstAudioMs, majorFaults: majorFaults() - faults0 };
  } finally {
    child.kill();
  }
}

/** `companion serve` until its RSS has settled (within 1 MB over 10 s, after its decoders loaded), in MB; and its
 *  child processes then (espeak workers), their number and PSS. */
async function companionAtRest(dataDir: string): Promise<{ rss: number; seconds: number; children: number; childrenPss: number }> {
  const child = spawn(process.execPath, [CLI, 'companion', 'serve', '--port', '0', '--data-dir', dataDir], { stdio: 'ignore', env: { ...process.env, SPEAKER_AGENT_LOG_LEVEL: 'warn' } });
  const t0 = performance.now();
  try {
    const samples: number[] = [];
    for (let i = 0; i < 120; i++) {
      await sleep(1000);
      samples.push(rssMb(child.pid!));
      const last = samples.slice(-11);
      // loaded: past the two language models (> 150 MB) and flat for 10 s; past its reply worker's page-out (30 s
      // after its start, at the worker's next 10 s tick)
      if (last.length === 11 && last[10] > 150 && Math.max(...last) - Math.min(...last) <= 1 && performance.now() - t0 > 50_000) break;
    }
    const children = childrenOf(child.pid!);
    const childrenPss = children.reduce((a, pid) => a + pssMb(pid), 0);
    return { rss: samples[samples.length - 1], seconds: (performance.now() - t0) / 1000, children: children.length, childrenPss };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

export async function run(): Promise<BenchRow[]> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-recognizer-'));
  try {
    const cacheDir = path.join(tmp, 'cache');
    const first = pair('shipped', cacheDir);
    const shipped: Pair[] = [];
    const full: Pair[] = [];
    for (let i = 0; i < 3; i++) {
      shipped.push(pair('shipped', cacheDir));
      full.push(pair('full', cacheDir));
    }
    const s = { anon: med(shipped.map((p) => p.anonMb)), rss: med(shipped.map((p) => p.rssMb)), ms: med(shipped.map((p) => p.ms)) };
    const f = { anon: med(full.map((p) => p.anonMb)), rss: med(full.map((p) => p.rssMb)), ms: med(full.map((p) => p.ms)) };
    const rows: BenchRow[] = [
      {
        issue: '-',
        metric: 'companion recogniser: one decoder pair (grammar + language model), anonymous memory; anchor: both on Debian\'s full dictionary',
        value: s.anon,
        unit: 'MB',
        target: '< anchor',
        pass: s.anon < f.anon,
        note: `anchor ${f.anon.toFixed(1)} MB (ratio ${(s.anon / f.anon).toFixed(2)}); RSS ${s.rss.toFixed(1)} vs ${f.rss.toFixed(1)} MB; loaded in ${s.ms.toFixed(0)} vs ${f.ms.toFixed(0)} ms (medians of 3); the first start, making the dictionary: ${first.anonMb.toFixed(1)} MB, ${first.ms.toFixed(0)} ms`,
      },
    ];
    const dataDir = path.join(tmp, 'companion');
    const made = await companionAtRest(dataDir); // makes the cache in its data directory
    const rest = await companionAtRest(dataDir);
    rows.push({
      issue: '-',
      metric: '`companion serve` at rest, decoders loaded (1 thread kept), RSS',
      value: rest.rss,
      unit: 'MB',
      note: `settled after ${rest.seconds.toFixed(0)} s; its first start (making the dictionary) ${made.rss.toFixed(1)} MB`,
    });
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) starts.push(await espeakWorkerStartMs());
    rows.push({
      issue: '-',
      metric: '`companion serve` at rest: its espeak synthesis processes (the realtime one kept; bulk ones only while bulk work runs), PSS',
      value: rest.childrenPss,
      unit: 'MB',
      note: `${rest.children} process(es) (before 2 Dec: 3, a realtime and 2 bulk workers); a bulk worker's start, fork to espeak loaded, which the first bulk request after an idle minute waits for: ${med(starts).toFixed(0)} ms (median of 3)`,
    });
    const paged: ReplyWorker[] = [];
    const kept: ReplyWorker[] = [];
    for (let i = 0; i < 3; i++) {
      paged.push(await replyWorker(1000));
      kept.push(await replyWorker(0));
    }
    const r = (xs: ReplyWorker[], k: keyof ReplyWorker) => med(xs.map((x) => x[k]));
    rows.push({
      issue: '-',
      metric: 'the companion\'s reply synthesis process at rest, PSS: start-up code paged out against kept',
      value: r(paged, 'restPss'),
      unit: 'MB',
      target: '< anchor',
      pass: r(paged, 'restPss') < r(kept, 'restPss'),
      note: `anchor ${r(kept, 'restPss').toFixed(1)} MB (ratio ${(r(paged, 'restPss') / r(kept, 'restPss')).toFixed(2)}); after a reply ${r(paged, 'afterPss').toFixed(1)} vs ${r(kept, 'afterPss').toFixed(1)} MB; that reply's first audio ${r(paged, 'firstAudioMs').toFixed(1)} vs ${r(kept, 'firstAudioMs').toFixed(1)} ms, pages read back from the disk ${r(paged, 'majorFaults')} vs ${r(kept, 'majorFaults')} (medians of 3 alternating)`,
    });
    const one: Threads[] = [];
    const two: Threads[] = [];
    for (let i = 0; i < 3; i++) {
      one.push(threads(1, cacheDir));
      two.push(threads(2, cacheDir));
    }
    const m = (xs: Threads[], k: keyof Threads) => med(xs.map((x) => x[k]));
    rows.push({
      issue: '-',
      metric: 'recogniser threads at rest, RSS: 1 kept (a second while utterances overlap) against 2 kept',
      value: m(one, 'restMb'),
      unit: 'MB',
      target: '< anchor',
      pass: m(one, 'restMb') < m(two, 'restMb'),
      note: `anchor ${m(two, 'restMb').toFixed(1)} MB; two utterances overlapping ${m(one, 'busyMb').toFixed(1)} vs ${m(two, 'busyMb').toFixed(1)} MB; after the idle stop ${m(one, 'afterMb').toFixed(1)} MB (threads left ${one.map((x) => x.threads).join('/')}) (medians of 3 alternating, each in its own process, under tsx)`,
    });
    rows.push({
      issue: '-',
      metric: 'recogniser: wait from the end of an utterance to its transcript, the second overlapping one (its thread started for it) against 2 kept',
      value: m(one, 'secondMs'),
      unit: 'ms',
      note: `anchor ${m(two, 'secondMs').toFixed(0)} ms; the first utterance ${m(one, 'firstMs').toFixed(0)} vs ${m(two, 'firstMs').toFixed(0)} ms (spoken 0.3 s apart, fed in real time; medians of 3); worst case, a short second utterance given whole (no speech time to load in): ${m(one, 'wholeMs').toFixed(0)} vs ${m(two, 'wholeMs').toFixed(0)} ms`,
    });
    return rows;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
