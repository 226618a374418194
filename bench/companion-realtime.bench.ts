// Issue #2 benchmarks: the companion's realtime assistant.
// - end of user speech -> first audible reply packet, measured at a werift client (the clip ends where speech ends)
// - recogniser real-time factor on the spoken utterances (whole-utterance decode time / audio duration)
// - concurrent two-way calls one core holds with no late outgoing frames: the server runs in its own process
//   pinned to core 0 (taskset -c 0); N werift clients run in another process on core 1 and talk continuously
//   (a question every few seconds, so the assistant answers and both directions carry speech)
// - resident memory per extra call (server RSS with N calls vs none, after GC)
// The same file is the two child processes (RT_BENCH_ROLE=server | clients), so the benchmark is one module.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { percentile, type BenchRow } from './table.js';
import { unitNodeFlags } from './unitFlags.js';
import type { RealtimeTestClient as Client } from '../test/support/realtimeTestClient.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SELF = path.join(ROOT, 'bench', 'companion-realtime.bench.ts');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const STEPS = [8, 12, 16, 20, 24, 28, 32];
const STEP_SECONDS = 12;

/** CPU time of this process's main thread alone (Linux /proc, clock ticks of 10 ms): the event loop's own cost,
 *  apart from the recogniser and encoder threads, and unaffected by other processes on the core. */
/** Time this process's main thread spent runnable but waiting for a CPU (Linux schedstat, ns -> ms): high when
 *  other processes contend for the server's core, i.e. lateness the server itself did not cause. */
function mainThreadRunqueueWaitMs(): number {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return NaN;
  }
}

function mainThreadCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // utime + stime
  } catch {
    return NaN;
  }
}

// ---- child: the server ----------------------------------------------------------------------------------------
async function serverRole(): Promise<void> {
  const Fastify = (await import('fastify')).default;
  const { loadCompanionSettings } = await import('../src/companion/settings.js');
  const { createCompanionContext } = await import('../src/companion/context.js');
  const { createRealtimeService } = await import('../src/companion/realtime/plugin.js');
  const { createWorkspace } = await import('../src/companion/db/workspaces.js');
  const { sha256Hex } = await import('../src/companion/auth/secrets.js');
  const { silentLogger } = await import('../src/common/logger.js');
  const dataDir = process.env.RT_BENCH_DATA!;
  const settings = loadCompanionSettings({ host: '127.0.0.1', port: 0, dataDir, realtime: { maxCalls: 64, idleTimeoutMs: 60_000 } }, {});
  const { context } = await createCompanionContext(settings, { logger: silentLogger });
  const rt = createRealtimeService(context);
  const app = Fastify();
  await app.register(rt.plugin);
  // ?gc=1 forces a full GC first (for a resident-memory reading). The windows of pacer statistics are read
  // without one: a forced mark-compact stalls the loop ~50 ms and would be counted as the server's late frames.
  app.get<{ Querystring: { gc?: string } }>('/bench/stats', async (req) => {
    if (req.query.gc === '1') (globalThis as { gc?: () => void }).gc?.();
    const cpu = process.cpuUsage();
    const elu = performance.eventLoopUtilization();
    return { ...rt.stats(), rss: process.memoryUsage().rss, cpuMs: (cpu.user + cpu.system) / 1000, mainCpuMs: mainThreadCpuMs(), mainWaitMs: mainThreadRunqueueWaitMs(), loopActiveMs: elu.active };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const key = 'wk_bench_' + Math.random().toString(36).slice(2);
  const ws = createWorkspace(context.db, 'bench', sha256Hex(key));
  const { upsertStory } = await import('../src/companion/db/stories.js');
  const sentence = 'The little kite rose over the hills, and the wind carried it far beyond the river and the old mill. ';
  upsertStory(context.db, {
    workspace_id: ws.id, slug: 'kite', name: 'The Kite', transcript: sentence.repeat(40), excerpt: null, age_group: null,
    illustration_url: null, illustration_alt: null, sort_order: 0, default_voice_profile_id: null,
  });
  const addr = app.server.address();
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`, key }) + '\n');
}

// ---- child: N load clients -------------------------------------------------------------------------------------
async function clientsRole(): Promise<void> {
  const { RealtimeTestClient } = await import('../test/support/realtimeTestClient.js');
  const { speechClip } = await import('../test/support/speechWav.js');
  const { OpusFrameEncoder } = await import('../src/common/audio/opusCodec.js');
  const { deviceHeaders } = await import('../src/protocol/headers.js');
  const { randomUUID, randomBytes } = await import('node:crypto');
  const url = process.env.RT_BENCH_URL!;
  const key = process.env.RT_BENCH_KEY!;
  const clip = speechClip('read me a story', { padBeforeMs: 300, padAfterMs: 300 });
  const enc = new OpusFrameEncoder();
  const packets: Buffer[] = [];
  for (let i = 0; i + 960 <= clip.pcm.length; i += 960) packets.push(enc.encode(clip.pcm.subarray(i, i + 960)));
  const clients: Client[] = [];
  const rl = createInterface({ input: process.stdin });
  rl.on('line', async (line) => {
    const n = Number(line);
    if (line === 'quit') {
      await Promise.all(clients.map((c) => c.close()));
      process.exit(0);
    }
    const created: Client[] = [];
    try {
    while (clients.length + created.length < n) {
      // a few at a time: connection setup (DTLS) is the expensive part of a call
      const batch = Math.min(4, n - clients.length - created.length);
      created.push(
        ...(await Promise.all(
          Array.from({ length: batch }, () =>
            RealtimeTestClient.connect({
              baseUrl: url,
              headers: deviceHeaders({ workspaceKey: key, clientId: randomUUID(), clientSecret: randomBytes(24).toString('hex') }),
              decode: false,
              openTimeoutMs: 60_000,
            }),
          ),
        )),
      );
    }
    } catch (err) {
      process.stdout.write(JSON.stringify({ error: String((err as Error).message ?? err) }) + '\n');
      return;
    }
    for (const c of created) {
      clients.push(c);
      // ask for a (long) story once: from then on the assistant speaks on this call for the whole run while the
      // client keeps sending its microphone frames, i.e. audio flows both ways on every call
      void (async () => {
        for (let attempt = 0; attempt < 3; attempt++) {
          const reading = c.waitFor('response.created', () => true, 15_000).then(() => true, () => false);
          await c.playEncoded(packets);
          if (await reading) return;
        }
      })();
    }
    process.stdout.write(JSON.stringify({ clients: clients.length }) + '\n');
  });
}

// ---- parent ----------------------------------------------------------------------------------------------------
function lines(child: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
}

async function nextJson<T>(it: AsyncIterator<string>, timeoutMs = 60_000): Promise<T> {
  const t = new Promise<never>((_, rej) => setTimeout(() => rej(new Error('child did not answer')), timeoutMs));
  for (;;) {
    const r = await Promise.race([it.next(), t]);
    if (r.done) throw new Error('child exited');
    try {
      return JSON.parse(r.value) as T;
    } catch {
      /* a non-JSON line */
    }
  }
}

interface ServerStats {
  cpuMs: number;
  mainCpuMs: number;
  mainWaitMs: number;
  loopActiveMs: number;
  speechFrames: number;
  silenceFrames: number;
  calls: number;
  connectedCalls: number;
  rss: number;
  pacer: { frames: number; lateFrames: number; skippedFrames: number; maxLatenessMs: number };
}

async function latencyAndRtf(): Promise<BenchRow[]> {
  const { startRealtimeTestServer } = await import('../test/support/realtimeServer.js');
  const { RealtimeTestClient } = await import('../test/support/realtimeTestClient.js');
  const { speechClip } = await import('../test/support/speechWav.js');
  const { resample } = await import('../src/common/audio/resample.js');
  const srv = await startRealtimeTestServer();
  const latencies: number[] = [];
  const rtfs: number[] = [];
  try {
    const phrases = ['what time is it', 'hello', 'list the stories', 'help'];
    const c = await RealtimeTestClient.connect({ baseUrl: srv.url, headers: srv.newDevice() });
    for (let round = 0; round < 3; round++) {
      for (const p of phrases) {
        const clip = speechClip(p, { padBeforeMs: 400, padAfterMs: 0 });
        const done = c.waitFor('response.done', (e) => e.response.status === 'completed', 20_000);
        await c.play(clip.pcm); // resolves as the last speech frame is sent: end of speech
        c.markAudio();
        await done;
        if (c.audio.firstAudibleAt !== undefined) latencies.push(c.audio.firstAudibleAt - c.markedAt);
        await new Promise((r) => setTimeout(r, 300));
      }
    }
    await c.close();
    const rec = srv.server.context.speech.recognizer;
    for (const p of phrases) {
      const clip = speechClip(p, { padBeforeMs: 200, padAfterMs: 200 });
      const pcm16 = resample(clip.pcm, 48_000, 16_000);
      const t0 = performance.now();
      await rec.recognize(pcm16, { mode: 'command' });
      rtfs.push((performance.now() - t0) / (pcm16.length / 16));
    }
  } finally {
    await srv.close();
  }
  const p50 = percentile(latencies, 50);
  const rtf = rtfs.reduce((a, b) => a + b, 0) / rtfs.length;
  return [
    { issue: '#2', metric: 'end of speech -> first reply audio p50', value: p50, unit: 'ms', target: '<= 600 ms', pass: p50 <= 600, note: `p90 ${percentile(latencies, 90).toFixed(0)} ms, n=${latencies.length}, werift client, VAD hangover incl.` },
    { issue: '#2', metric: 'speech recognition real-time factor', value: rtf, unit: 'x', target: '<= 0.3', pass: rtf <= 0.3, note: 'pocketsphinx, command grammar + LM, whole utterances' },
  ];
}

/** The companion unit's node flags (plus BENCH_SERVER_FLAGS, to try others), so the figures are the service's. */
function companionUnitNodeFlags(): string[] {
  return [...unitNodeFlags('speaker-agent-companion.service', 'companion'), ...(process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean)];
}

async function concurrency(): Promise<BenchRow[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'rt-bench-'));
  const server = spawn('taskset', ['-c', '0', process.execPath, ...companionUnitNodeFlags(), '--expose-gc', '--import', 'tsx', SELF], {
    env: { ...process.env, RT_BENCH_ROLE: 'server', RT_BENCH_DATA: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: ROOT,
  });
  let clients: ChildProcess | undefined;
  const rows: BenchRow[] = [];
  try {
    const s = await nextJson<{ url: string; key: string }>(lines(server));
    const stats = async (gc = false): Promise<ServerStats> => (await (await fetch(`${s.url}/bench/stats${gc ? '?gc=1' : ''}`)).json()) as ServerStats;
    clients = spawn('taskset', ['-c', '1', process.execPath, '--import', 'tsx', SELF], {
      env: { ...process.env, RT_BENCH_ROLE: 'clients', RT_BENCH_URL: s.url, RT_BENCH_KEY: s.key },
      stdio: ['pipe', 'pipe', 'inherit'],
      cwd: ROOT,
    });
    const clientOut = lines(clients);
    await new Promise((r) => setTimeout(r, 1500));
    const rss0 = (await stats(true)).rss;
    let best = 0;
    let clean = true;
    const notes: string[] = [];
    const speechShare: string[] = [];
    const cpuPerCall: number[] = [];
    const mainCpuPerCall: number[] = [];
    const waitNotes: string[] = [];
    const loopNotes: string[] = [];
    const rssAt: { n: number; rss: number }[] = [];
    for (const n of STEPS) {
      clients.stdin!.write(`${n}\n`);
      const added = await nextJson<{ clients?: number; error?: string }>(clientOut, 180_000);
      if (added.error) {
        notes.push(`${n}: clients could not connect (${added.error})`);
        break;
      }
      await new Promise((r) => setTimeout(r, 3000)); // settle (connects, the story requests being answered)
      const before = await stats();
      await new Promise((r) => setTimeout(r, STEP_SECONDS * 1000));
      const after = await stats();
      const frames = after.pacer.frames - before.pacer.frames;
      const speech = after.speechFrames - before.speechFrames;
      const cpuShare = (after.cpuMs - before.cpuMs) / (STEP_SECONDS * 1000);
      const loopBusy = (after.loopActiveMs - before.loopActiveMs) / (STEP_SECONDS * 1000);
      loopNotes.push(`${n}:${Math.round(100 * loopBusy)}%`);
      cpuPerCall.push(cpuShare / n);
      mainCpuPerCall.push((after.mainCpuMs - before.mainCpuMs) / (STEP_SECONDS * 1000) / n);
      const late = after.pacer.lateFrames - before.pacer.lateFrames + (after.pacer.skippedFrames - before.pacer.skippedFrames);
      notes.push(`${n}:${late}/${frames}`);
      waitNotes.push(`${n}:${Math.round(after.mainWaitMs - before.mainWaitMs)}ms`);
      speechShare.push(`${n}:${Math.round((100 * speech) / Math.max(1, frames))}%`);
      const rss = (await stats(true)).rss; // after the window: the forced GC's pause falls in the next step's settling time
      rssAt.push({ n, rss });
      process.stderr.write(`bench #2: ${n} calls (${after.connectedCalls} connected): ${late} late of ${frames} frames, ${speech} speech, server CPU ${(100 * cpuShare).toFixed(0)}% of a core, rss ${(rss / 1e6).toFixed(0)} MB\n`);
      if (after.connectedCalls < n) break;
      // the answer is the largest N such that it and every smaller step had no late frame
      if (late > 0) clean = false;
      if (clean) best = n;
    }
    clients.stdin!.write('quit\n');
    const costPerCall = percentile(cpuPerCall, 50);
    rows.push({
      issue: '#2',
      metric: 'server CPU per two-way call (one core = 100 %)',
      value: 100 * costPerCall,
      unit: '%',
      note: `=> about ${Math.floor(1 / costPerCall)} calls per core by CPU alone (all threads); main thread alone ${(100 * percentile(mainCpuPerCall, 50)).toFixed(2)} % per call; event loop busy per step ${loopNotes.join(' ')}; machine load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
    });
    // memory: slope between the first and last step (the recogniser's decoder pool is warm by then)
    const first = rssAt[0];
    const last = rssAt[rssAt.length - 1];
    const perCall = first && last && last.n > first.n ? (last.rss - first.rss) / (last.n - first.n) / 1e6 : NaN;
    rows.push(
      { issue: '#2', metric: 'concurrent two-way calls on one core, 0 late frames', value: best, unit: 'calls', target: '>= 20', pass: best >= 20, note: `server on core 0 (taskset); late/frames per step ${notes.join(' ')}; speech share of sent frames ${speechShare.join(' ')}; main thread runnable but not running (other processes on core 0) per ${STEP_SECONDS} s step ${waitNotes.join(' ')}` },
      { issue: '#2', metric: 'resident memory per extra call', value: perCall, unit: 'MB', target: '<= 5 MB', pass: perCall <= 5, note: `RSS ${rssAt.map((r) => `${r.n}:${(r.rss / 1e6).toFixed(0)}MB`).join(' ')} (idle ${(rss0 / 1e6).toFixed(0)} MB)` },
    );
  } finally {
    clients?.kill();
    server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

export async function run(): Promise<BenchRow[]> {
  return [...(await latencyAndRtf()), ...(await concurrency())];
}

if (process.env.RT_BENCH_ROLE === 'server') await serverRole();
else if (process.env.RT_BENCH_ROLE === 'clients') await clientsRole();
