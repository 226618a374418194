// Benchmarks of the companion's REST API (issue #3). The server runs in its own process (as in production),
// so the load generator here does not share its event loop, and its memory is measured from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { percentile, type BenchRow } from './table.js';

const root = path.resolve(import.meta.dirname, '..');

interface ChildServer {
  url: string;
  key: string;
  voiceId: string;
  storySlug: string;
  pid: number;
  child: ChildProcess;
}

const CHILD = `
import { CompanionAdmin } from ${JSON.stringify(path.join(root, 'src/companion/admin.ts'))};
import { startCompanionServer } from ${JSON.stringify(path.join(root, 'src/companion/server.ts'))};
import { loadCompanionSettings } from ${JSON.stringify(path.join(root, 'src/companion/settings.ts'))};
const dataDir = process.env.BENCH_DATA_DIR;
const admin = new CompanionAdmin(dataDir);
const { key } = admin.createWorkspace('bench');
const voice = admin.addWorkspaceVoice({ workspace: 'bench', name: 'Bench', design: 'a calm female voice' });
for (let i = 0; i < 9; i++) admin.addWorkspaceVoice({ workspace: 'bench', name: 'Voice ' + i, design: 'a deep male voice' });
admin.importStories('bench', [{ slug: 'long', name: 'Long', transcript: process.env.BENCH_STORY }]);
admin.close();
const server = await startCompanionServer(loadCompanionSettings({ port: 0, dataDir, log: { level: 'silent' } }));
process.stdout.write(JSON.stringify({ url: server.url, key, voiceId: voice.id, storySlug: 'long', pid: process.pid }) + '\\n');
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
`;

const SENTENCES = [
  'The old lighthouse keeper climbed the winding stairs every evening at dusk.',
  'He polished the great lens until it shone like a second moon over the harbour.',
  'Ships passing in the night saw the beam and knew that home was near.',
  'In 1987, a storm broke 3 windows and scattered 250 letters across the rocks.',
  'Dr. Marsh, the village doctor, said it was the worst weather in forty years!',
];

function textOf(chars: number): string {
  let s = '';
  for (let i = 0; s.length < chars; i++) s += SENTENCES[i % SENTENCES.length] + ' ';
  return s.slice(0, chars).replace(/\s+\S*$/, '').padEnd(chars, '.');
}

async function startChild(dataDir: string, story: string): Promise<ChildServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
    cwd: root,
    env: { ...process.env, BENCH_DATA_DIR: dataDir, BENCH_STORY: story },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      const i = buf.indexOf('\n');
      if (i >= 0) resolve(buf.slice(0, i));
    });
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
  });
  return { ...(JSON.parse(line) as Omit<ChildServer, 'child'>), child };
}

function headers(key: string): Record<string, string> {
  return { 'x-workspace-key': key, 'x-client-id': randomUUID(), 'x-client-secret': randomBytes(32).toString('hex') };
}

/** CPU time (user + system) a process has used, in ms: a figure other processes' load does not inflate. */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

/** n requests with `concurrency` in flight over keep-alive sockets; latencies in ms. */
async function load(url: string, hdrs: Record<string, string>, n: number, concurrency: number): Promise<{ lat: number[]; seconds: number; errors: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const u = new URL(url);
  const lat: number[] = [];
  let errors = 0;
  let next = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: hdrs, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) errors++;
          lat.push(performance.now() - t0);
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end();
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await one();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  return { lat, seconds, errors };
}

interface LoadResult { rps: number; p50: number; p99: number; requests: number; errors: number }

function nodeLoad(r: { lat: number[]; seconds: number; errors: number }): LoadResult {
  return { rps: r.lat.length / r.seconds, p50: percentile(r.lat, 50), p99: percentile(r.lat, 99), requests: r.lat.length, errors: r.errors };
}

function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // wrk --version exits 1 after printing its version
    return (err as { status?: number }).status === 1;
  }
}

/** wrk with 200 connections on core 1 (the server process is not pinned); parses its --latency report. */
function runWrk(url: string, hdrs: Record<string, string>, seconds: number): LoadResult {
  const args = ['-c', '1', 'wrk', '-t1', '-c200', `-d${seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(hdrs)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const out = execFileSync('taskset', args, { encoding: 'utf8' });
  const ms = (label: string): number => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out);
    if (!m) throw new Error(`wrk printed no ${label}% latency:\n${out}`);
    return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors = non2xx + (sockErr ? sockErr.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { rps, p50: ms('50'), p99: ms('99'), requests, errors };
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-companion-'));
  // ~20 minutes of narration at espeak's default pace
  const story = textOf(21_000);
  const srv = await startChild(dataDir, story);
  try {
    const h = headers(srv.key);
    const post = (route: string, body: unknown) =>
      fetch(srv.url + route, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await post(`/v1/app/text-to-speech/${srv.voiceId}/with-timestamps`, { text: 'Warm up.' }).then((r) => r.arrayBuffer());

    const text = textOf(15_000);
    for (const [format, target] of [['wav', 3000], ['mp3_44100_128', 5000]] as const) {
      const cpu0 = cpuMs(srv.pid);
      const [res, ms] = await timed(async () => {
        const r = await post(`/v1/app/text-to-speech/${srv.voiceId}/with-timestamps`, { text, output_format: format });
        return (await r.json()) as { duration_seconds: number; timestamps: unknown[] };
      });
      rows.push({
        issue: '#3',
        metric: `with-timestamps 15,000 chars (${format.startsWith('mp3') ? 'MP3' : 'WAV'})`,
        value: ms,
        unit: 'ms',
        target: `<= ${target} ms`,
        pass: ms <= target,
        note: `${res.duration_seconds?.toFixed(0)} s of audio, ${res.timestamps?.length} words; server main process CPU ${(cpuMs(srv.pid) - cpu0).toFixed(0)} ms; load ${loadAverage()}`,
      });
    }

    // a 10 s clone upload (WAV made from espeak speech by ffmpeg)
    const src = path.join(dataDir, 'src.wav');
    const clip = path.join(dataDir, 'clip.m4a');
    execFileSync('espeak-ng', ['-v', 'en-us', '-w', src, SENTENCES.join(' ')]);
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-stream_loop', '-1', '-i', src, '-t', '10', '-ac', '1', '-c:a', 'aac', clip]);
    const cloneTimes: number[] = [];
    const cloneCpu0 = cpuMs(srv.pid);
    for (let i = 0; i < 3; i++) {
      const form = new FormData();
      form.set('name', `Clone ${i}`);
      form.set('audio_file', new Blob([readFileSync(clip)]), 'clip.m4a');
      const [status, ms] = await timed(async () => {
        const r = await fetch(srv.url + '/v1/app/voices/clone', { method: 'POST', headers: h, body: form });
        await r.arrayBuffer();
        return r.status;
      });
      if (status !== 201) throw new Error(`clone answered ${status}`);
      cloneTimes.push(ms);
    }
    const cloneMs = percentile(cloneTimes, 50);
    rows.push({ issue: '#3', metric: '10 s clone upload (m4a), median of 3', value: cloneMs, unit: 'ms', target: '<= 3000 ms', pass: cloneMs <= 3000, note: `min ${Math.min(...cloneTimes).toFixed(0)} ms; server CPU ${((cpuMs(srv.pid) - cloneCpu0) / 3).toFixed(0)} ms per clone (incl. recognition); load ${loadAverage()}` });

    // 200 concurrent GET /voices (10 voices, each with a signed preview URL). The load comes from wrk in its own
    // process, pinned to the other core, as a device fleet would (an in-process Node client was itself the
    // bottleneck: ~1,600 req/s). Without wrk (scripts/setup.sh --dev installs it), the in-process client is used.
    const wrk = hasWrk();
    if (wrk) runWrk(srv.url + '/v1/app/voices', h, 3); // warm-up
    else await load(srv.url + '/v1/app/voices', h, 2000, 200);
    const cpuBefore = cpuMs(srv.pid);
    const r = wrk ? runWrk(srv.url + '/v1/app/voices', h, 10) : nodeLoad(await load(srv.url + '/v1/app/voices', h, 20_000, 200));
    const cpuPerReqUs = ((cpuMs(srv.pid) - cpuBefore) * 1000) / r.requests;
    rows.push({
      issue: '#3',
      metric: 'GET /voices, 200 concurrent: throughput',
      value: r.rps,
      unit: 'req/s',
      target: '>= 2000 req/s',
      pass: r.rps >= 2000 && r.errors === 0,
      note: `${wrk ? 'wrk -c200, 10 s' : 'in-process client'}; ${r.errors} errors; server CPU ${cpuPerReqUs.toFixed(0)} us/request; load ${loadAverage()}`,
    });
    rows.push({ issue: '#3', metric: 'GET /voices, 200 concurrent: p99 latency', value: r.p99, unit: 'ms', target: '<= 50 ms', pass: r.p99 <= 50, note: `p50 ${r.p50.toFixed(1)} ms${wrk ? ', at saturation (wrk drives as fast as the server answers)' : ''}` });

    // narration of a ~20 minute story: server RSS sampled while the WAV streams to a client that reads slowly
    const before = rssMb(srv.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(srv.pid))), 50);
    let bytes = 0;
    const [, readMs] = await timed(async () => {
      const r = await post(`/v1/app/stories/${srv.storySlug}/read`, {});
      if (r.status !== 200) throw new Error(`read answered ${r.status}`);
      for await (const chunk of r.body!) bytes += (chunk as Uint8Array).length;
    });
    clearInterval(sampler);
    const audioMin = (bytes - 44) / 2 / 22050 / 60;
    const growth = peak - before;
    rows.push({
      issue: '#3',
      metric: `narrate a ${audioMin.toFixed(1)}-minute story: server RSS growth`,
      value: growth,
      unit: 'MB',
      target: 'flat (< 25 MB)',
      pass: growth < 25,
      note: `audio ${(bytes / 1e6).toFixed(0)} MB in ${(readMs / 1000).toFixed(1)} s; RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB`,
    });
  } finally {
    srv.child.kill('SIGTERM');
    await new Promise((r) => srv.child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
