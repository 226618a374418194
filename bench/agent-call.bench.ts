// Issue #5 targets for one call on loopback: a real agent PROCESS (test/support/agentProcessMain.ts: PortAudio
// on the virtual sound card, amixer, werift) against the test peer in its own process (real HTTP + werift).
//   - process start to call connected (spawn -> "call connected" log line), p50 of 3 spawns
//   - server back to call re-established, p50 over several peer restarts
//   - CPU % of one core of the agent process during a steady two-way call (the last 60 s of a 3-minute call)
//   - agent RSS, and RSS growth over a long call (3 min; 10 min with BENCH_LONG=1)
// The agent runs as an installed build does: bundled by scripts/build.mjs (as `npm run build`) into
// .test-runtime/bench-agent/, started with the systemd unit's node flags and environment.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sineWave } from '../src/common/audio/signal.js';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { BENCH_KEY as KEY, CLK_TCK, buildAgent, cpuTicks, pagedOut, privateNode, rssMb, spawnAgent, startVirtualAudio, stealTicks, stopAgent, stopVirtualAudio, type AgentProc } from './agentProcess.js';
import { percentile, slope, type BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  startVirtualAudio();
  const agentMain = await buildAgent();
  const peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json') });
  await peer.start();
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'bench-state-'));
  let agent: AgentProc | undefined;
  const mic: ChildProcess[] = [];
  try {
    // 1. process start -> call connected
    const starts: number[] = [];
    const node = privateNode(); // measured as the only node process on the board (agentProcess.ts, privateNode)
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const a = spawnAgent(agentMain, peer.url, stateDir, undefined, node);
      starts.push((await a.next(/^call connected$/, 20_000)) - t0);
      if (i < 2) await stopAgent(a);
      else agent = a;
    }
    const startP50 = percentile(starts, 50);
    rows.push({ issue: '#5', metric: 'agent process start -> call connected (p50 of 3)', value: startP50, unit: 'ms', target: '<= 1000 ms', pass: startP50 <= 1000, note: `runs ${starts.map((s) => s.toFixed(0)).join('/')} ms` });

    // 2. steady two-way call: the peer plays a tone, a tone plays into the virtual mic
    const a = agent!;
    const pid = a.child.pid!;
    // 3 minutes: the CPU of a call keeps falling for two minutes or more while V8 optimises its 50 Hz code (session 9)
    const longMs = process.env.BENCH_LONG === '1' ? 600_000 : 180_000;
    const toneSec = 10;
    const peerTone = sineWave(440, 48_000, toneSec, 0.3);
    const feedPeer = setInterval(() => void peer.playTone(peerTone).catch(() => undefined), toneSec * 1000);
    void peer.playTone(peerTone);
    const micTone = Buffer.from(sineWave(700, 48_000, Math.ceil(longMs / 1000) + 5, 0.3).buffer);
    const pacat = spawn('pacat', ['--playback', '--device=mic_in', '--format=s16le', '--rate=48000', '--channels=1', '--raw'], { env: process.env, stdio: ['pipe', 'ignore', 'ignore'] });
    pacat.stdin!.on('error', () => undefined);
    pacat.stdin!.end(micTone);
    mic.push(pacat);
    await sleep(5_000); // warm-up: JIT, jitter buffer, first GCs
    const cpu0 = cpuTicks(pid);
    const c0 = performance.now();
    const samples: Array<{ t: number; rss: number }> = [];
    const tStart = performance.now();
    let cpuEarly = NaN;
    const ticks: Array<{ at: number; ticks: number; steal: number }> = [];
    while (performance.now() - tStart < longMs) {
      await sleep(5_000);
      samples.push({ t: (performance.now() - tStart) / 60_000, rss: rssMb(pid) });
      ticks.push({ at: performance.now(), ticks: cpuTicks(pid), steal: stealTicks() });
      if (Number.isNaN(cpuEarly) && performance.now() - c0 >= 30_000) {
        cpuEarly = (((cpuTicks(pid) - cpu0) / CLK_TCK) * 1000 * 100) / (performance.now() - c0);
      }
    }
    // A speaker's call lasts hours: the figure is the last 60 s of the call, once V8 has optimised most of the hot
    // paths (for functions that run 50 times a second that takes two minutes or more). The first minute is in the
    // note: 5-35 s and 35-65 s after connecting (the latter was this row's window up to session 8).
    const last = ticks.at(-1)!;
    const from = ticks.find((x) => last.at - x.at <= 60_000 + 100) ?? ticks[0];
    const cpuPct = (((last.ticks - from.ticks) / CLK_TCK) * 1000 * 100) / Math.max(1, last.at - from.at);
    const at = (ms: number) => ticks.find((x) => x.at - c0 >= ms - 100) ?? last;
    const [m30, m60] = [at(30_000), at(60_000)];
    const cpuSecondHalfMinute = (((m60.ticks - m30.ticks) / CLK_TCK) * 1000 * 100) / Math.max(1, m60.at - m30.at);
    // On a VM, time stolen by the host inflates every figure here (cold caches, late wake-ups): shown beside them.
    const stealPct = (((last.steal - from.steal) / CLK_TCK) * 1000 * 100) / Math.max(1, last.at - from.at) / os.cpus().length;
    clearInterval(feedPeer);
    const stats = await peer.stats();
    rows.push({ issue: '#5', metric: `agent CPU, steady two-way call (last 60 s of a ${Math.round(longMs / 60_000)}-min call)`, value: cpuPct, unit: '% core', target: '<= 5 %', pass: cpuPct <= 5, note: `first minute: ${cpuEarly.toFixed(1)} % (5-35 s), ${cpuSecondHalfMinute.toFixed(1)} % (35-65 s); host steal ${stealPct.toFixed(1)} % of the machine in the window; peer got ${stats.packetsIn} packets, sent ${stats.packetsOut}` });
    const rssNow = samples.at(-1)!.rss;
    const paged = a.lines.find((l) => l.includes('start-up code paged out'));
    rows.push({ issue: '#5', metric: 'agent resident memory during a call', value: rssNow, unit: 'MB', target: '<= 80 MB', pass: rssNow <= 80, note: paged ? `start-up code paged out at 60 s (RSS ${/"rssBeforeMb":([\d.]+)/.exec(paged)?.[1]} -> ${/"rssAfterMb":([\d.]+)/.exec(paged)?.[1]} MB then)` : 'start-up code NOT paged out' });
    const growth = slope(samples.map((s) => s.t), samples.map((s) => s.rss));
    rows.push({
      issue: '#5',
      metric: `agent RSS growth over a ${Math.round(longMs / 60_000)}-min call`,
      value: growth,
      unit: 'MB/min',
      target: 'no growth (10-min call)',
      pass: growth <= 0.5,
      note: `RSS ${samples[0].rss.toFixed(1)} -> ${rssNow.toFixed(1)} MB${process.env.BENCH_LONG === '1' ? '' : '; BENCH_LONG=1 for 10 min'}`,
    });

    // 3. server back -> call re-established
    // Each restart follows a stable call (the policy resets its backoff after reconnect.stableAfterMs = 10 s),
    // as a server restart does in real life.
    const backs: number[] = [];
    for (let i = 0; i < 5; i++) {
      await sleep(11_000);
      const ended = a.next(/^call ended/, 10_000);
      await peer.kill();
      await ended; // the agent noticed (liveness watchdog: the peer died without a word)
      await sleep(500 + Math.random() * 1500); // the server is down a while: the agent retries meanwhile
      const connected = a.next(/^call connected$/, 20_000);
      await peer.start();
      const tBack = performance.now();
      backs.push((await connected) - tBack);
    }
    const backP50 = percentile(backs, 50);
    rows.push({ issue: '#5', metric: 'server back -> call re-established (p50 of 5)', value: backP50, unit: 'ms', target: '<= 1000 ms p50', pass: backP50 <= 1000, note: `max ${Math.max(...backs).toFixed(0)} ms` });
    await stopAgent(a);
    agent = undefined;

    // 4. the same steady two-way call with the echo canceller on (#15: audio.duplex auto, the default) and the
    // microphone open (listening.mode always): CPU over 60 s and RSS, after the page-out of start-up code
    {
      const b = spawnAgent(agentMain, peer.url, stateDir, { listening: { mode: 'always' } }, node, { SPEAKER_AGENT_DUPLEX: 'auto' });
      agent = b;
      await b.next(/^call connected$/, 20_000);
      const feed = setInterval(() => void peer.playTone(peerTone).catch(() => undefined), toneSec * 1000);
      void peer.playTone(peerTone);
      try {
        const paged = await pagedOut(b);
        await sleep(5_000);
        const bpid = b.child.pid!;
        const t0 = performance.now();
        const c0 = cpuTicks(bpid);
        await sleep(60_000);
        const pct = (((cpuTicks(bpid) - c0) / CLK_TCK) * 1000 * 100) / (performance.now() - t0);
        const rss = rssMb(bpid);
        const canceller = b.lines.some((l) => l.includes('echo canceller unavailable')) ? 'canceller NOT loaded' : 'canceller on';
        rows.push({ issue: '#15', metric: 'agent CPU, steady two-way call, echo canceller on (60 s)', value: pct, unit: '% core', target: '<= 5 %', pass: pct <= 5, note: `${canceller}; the peer's tone plays (the virtual card has no echo path: see agent-echo for the canceller's work); load ${os.loadavg()[0].toFixed(1)}` });
        rows.push({ issue: '#15', metric: 'agent RSS in that call', value: rss, unit: 'MB', target: '<= 80 MB', pass: rss <= 80, note: paged ? 'after the page-out of start-up code' : 'start-up code NOT paged out' });
      } finally {
        clearInterval(feed);
      }
    }
  } finally {
    for (const m of mic) m.kill();
    if (agent) await stopAgent(agent);
    await peer.kill();
    stopVirtualAudio();
  }
  return rows;
}
