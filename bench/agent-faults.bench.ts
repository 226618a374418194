// Issue #17 figures: a real agent PROCESS (bench/agentProcess.ts) against the test peer in its own process.
//   - kill -9 of the server -> a new call, with the server back 0.5-1 s after the kill (p50/max over 20 kills;
//     50 with BENCH_LONG=1). The agent notices through a consent check when the peer's audio stops.
//   - descriptors and resident memory of the agent before and after many re-created calls (100; 1,000 with
//     BENCH_LONG=1): the peer is killed or stopped cleanly, in turn, each call living 1.5 s.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { openDescriptors as descriptorsOf } from '../test/support/processResources.js';
import { BENCH_KEY, buildAgent, rssMb, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio, type AgentProc } from './agentProcess.js';
import { percentile, type BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LONG = process.env.BENCH_LONG === '1';

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  startVirtualAudio();
  const agentMain = await buildAgent();
  const peer = new TestAssistantPeerProcess({ workspaceKey: BENCH_KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json') });
  await peer.start();
  let agent: AgentProc | undefined;
  try {
    // A call counts as stable after 1 s (default 10 s), so each fault starts a fresh, fast reconnect streak.
    agent = spawnAgent(agentMain, peer.url, mkdtempSync(path.join(os.tmpdir(), 'bench-state-')), { reconnect: { stableAfterMs: 1_000 } });
    const a = agent;
    await a.next(/^call connected$/, 20_000);
    const pid = a.child.pid!;

    // 1. kill -9 -> new call
    const kills = LONG ? 50 : 20;
    const rejoin: number[] = [];
    for (let i = 0; i < kills; i++) {
      await sleep(1_500);
      const connected = a.next(/^call connected$/, 30_000);
      const t0 = performance.now();
      await peer.kill();
      await sleep(500 + Math.random() * 500); // the server is back within a second
      await peer.start();
      rejoin.push((await connected) - t0);
    }
    const p50 = percentile(rejoin, 50);
    rows.push({ issue: '#17', metric: `kill -9 of the server -> new call, server back in 0.5-1 s (p50 of ${kills})`, value: p50, unit: 'ms', target: '<= 3000 ms', pass: p50 <= 3000, note: `max ${Math.max(...rejoin).toFixed(0)} ms (was 5,510 / 5,820 ms)` });

    // 2. many re-created calls: descriptors and memory
    const cycles = LONG ? 1_000 : 100;
    await sleep(1_500);
    const fd0 = descriptorsOf(pid);
    const rss0 = rssMb(pid);
    for (let i = 0; i < cycles; i++) {
      const connected = a.next(/^call connected$/, 30_000);
      if (i % 2 === 0) await peer.kill();
      else await peer.stop();
      await peer.start();
      await connected;
      await sleep(1_500);
    }
    await sleep(2_000);
    const fd1 = descriptorsOf(pid);
    const rss1 = rssMb(pid);
    rows.push({ issue: '#17', metric: `agent descriptors after ${cycles} re-created calls (killed / stopped peer)`, value: fd1.total - fd0.total, unit: 'fds', target: 'no growth', pass: fd1.total - fd0.total <= 1, note: `${fd0.total} -> ${fd1.total} (sockets ${fd0.sockets} -> ${fd1.sockets}); was +3 UDP sockets per call` });
    rows.push({ issue: '#17', metric: `agent RSS after ${cycles} re-created calls`, value: rss1, unit: 'MB', target: 'flat', pass: rss1 - rss0 <= 5, note: `${rss0.toFixed(1)} -> ${rss1.toFixed(1)} MB` });
  } finally {
    if (agent) await stopAgent(agent);
    await peer.kill();
    stopVirtualAudio();
  }
  return rows;
}
