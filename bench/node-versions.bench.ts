// Issue #18: the same agent build in a steady two-way call on two Node binaries, side by side in one run: the
// Node running the bench (the machine's) and the newest LTS (.ci/run's download in .test-runtime/node-lts, or
// BENCH_NODE_B=/path/to/node). Both agents run AT ONCE, each in its own call with its own peer, so the machine's load
// hits both alike; each runs a private copy of its binary (the agent as the only process mapping it: what the
// page-out of start-up code can release, src/common/memoryKeeper.ts). Per round: a call, 30 s warm-up (its CPU is
// reported too: V8 still optimises then, later with the efficiency mode) and the page-out, then CPU over
// BENCH_WINDOW_S (default 300 s) and RSS sampled every 10 s over it (median of the samples).
// The window is minutes long because the agents' memory moves for minutes: V8 flushes bytecode unused over six
// collections (about 7 minutes into a call, Node 26's "trusted space" 2.5 -> 1.3 MB) and Node 26 grew 40 -> 43 MB
// over its first five minutes (27 Nov); a single sample 65 s after the page-out understated the difference.
// BENCH_FLAGS_A / BENCH_FLAGS_B: node or V8 flags for one side beside the unit's, to weigh a flag (with
// BENCH_NODE_A, the first side's Node, both sides may be one Node).
// The anchor, in the same run: each Node's floor, a node that runs only the agent's memory keeper
// (bench/nodeFloorMain.ts) on its own private copy of the binary, sampled with the agents. The agent's RSS less its
// Node's floor is what the agent's own code and data cost on that Node.
// The native addons are the checkout's: Opus, PortAudio and speaker-sys are Node-API and load in both; speaker-sys's
// V8 part may not load in the other Node's ABI (the memory keeper then uses gc(); the note says which).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sineWave } from '../src/common/audio/signal.js';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { BENCH_KEY as KEY, CLK_TCK, ROOT, buildAgent, otherNode, cpuTicks, pagedOut, privateNode, rssMb, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio } from './agentProcess.js';
import { percentile, type BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const version = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
const v8PartLoads = (node: string) =>
  spawnSync(node, ['-e', 'process.exit(require("speaker-sys").memoryPressure ? 0 : 1)'], { cwd: ROOT }).status === 0;

export async function run(): Promise<BenchRow[]> {
  const b = otherNode();
  if (!b) {
    return [{ issue: '#18', metric: 'agent CPU on two Nodes', value: NaN, unit: '', note: 'no second Node: run .ci/run once (it downloads the newest LTS) or set BENCH_NODE_B' }];
  }
  const nodes = [process.env.BENCH_NODE_A ?? process.execPath, b];
  const privates = nodes.map((n) => privateNode(n));
  const floorPrivates = nodes.map((n) => privateNode(n)); // not the agents' copies: a page-out releases only unshared pages
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const windowMs = Number(process.env.BENCH_WINDOW_S ?? 300) * 1000;
  // flags to try on one side, beside the unit's (a maker weighing a flag for their Node)
  const extra = [process.env.BENCH_FLAGS_A, process.env.BENCH_FLAGS_B].map((f) => (f ? f.split(/\s+/).filter(Boolean) : []));
  startVirtualAudio();
  const agentMain = await buildAgent();
  const floorMain = path.join(path.dirname(agentMain), 'node-floor.js');
  const peers = nodes.map(() => new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json') }));
  const cpu: number[][] = [[], []];
  const cpuFirst: number[][] = [[], []]; // per round: CPU over the call's first 30 s (V8 still optimising)
  const rss: number[][] = [[], []]; // per round: the median of its samples
  const samples: number[][] = [[], []]; // every sample of every round
  const floor: number[][] = [[], []]; // per round: the median of the floor process's samples
  const peerTone = sineWave(440, 48_000, 10, 0.3);
  try {
    await Promise.all(peers.map((p) => p.start()));
    for (let r = 0; r < rounds; r++) {
      const agents = [0, 1].map((i) => spawnAgent(agentMain, peers[i].url, mkdtempSync(path.join(os.tmpdir(), 'bench-state-')), undefined, privates[i], {}, extra[i]));
      const floors = [0, 1].map((i) => spawnAgent(floorMain, '', mkdtempSync(path.join(os.tmpdir(), 'bench-state-')), undefined, floorPrivates[i], {}, extra[i]));
      let pacat: ChildProcess | undefined;
      const feedPeers = () => peers.forEach((p) => void p.playTone(peerTone).catch(() => undefined));
      const feeding = setInterval(feedPeers, 10_000);
      try {
        await Promise.all(agents.map((a) => a.next(/^call connected$/, 60_000)));
        const f0 = agents.map((a) => cpuTicks(a.child.pid!));
        const tf0 = performance.now();
        feedPeers();
        // one microphone (the virtual card's) for both: each agent captures it
        pacat = spawn('pacat', ['--playback', '--device=mic_in', '--format=s16le', '--rate=48000', '--channels=1', '--raw'], { env: process.env, stdio: ['pipe', 'ignore', 'ignore'] });
        pacat.stdin!.on('error', () => undefined);
        pacat.stdin!.end(Buffer.from(sineWave(700, 48_000, Math.ceil(windowMs / 1000) + 120, 0.3).buffer));
        await sleep(30_000); // JIT and first GCs
        agents.forEach((a, i) => cpuFirst[i].push((((cpuTicks(a.child.pid!) - f0[i]) / CLK_TCK) * 1000 * 100) / (performance.now() - tf0)));
        await Promise.all([...agents, ...floors].map((a) => pagedOut(a))); // the steady state: after the one page-out of start-up code
        await sleep(5_000);
        const pids = agents.map((a) => a.child.pid!);
        const t0 = performance.now();
        const c0 = pids.map(cpuTicks);
        const own: number[][] = [[], []];
        const floorOwn: number[][] = [[], []];
        while (performance.now() - t0 < windowMs) {
          await sleep(10_000);
          pids.forEach((pid, i) => own[i].push(rssMb(pid)));
          floors.forEach((f, i) => floorOwn[i].push(rssMb(f.child.pid!)));
        }
        floorOwn.forEach((xs, i) => floor[i].push(percentile(xs, 50)));
        pids.forEach((pid, i) => {
          cpu[i].push((((cpuTicks(pid) - c0[i]) / CLK_TCK) * 1000 * 100) / (performance.now() - t0));
          rss[i].push(percentile(own[i], 50));
          samples[i].push(...own[i]);
        });
      } finally {
        clearInterval(feeding);
        pacat?.kill();
        await Promise.all([...agents, ...floors].map((a) => stopAgent(a)));
      }
    }
  } finally {
    await Promise.all(peers.map((p) => p.kill()));
    stopVirtualAudio();
  }
  const [va, vb] = nodes.map(version);
  const fmt = (xs: number[], d = 2) => xs.map((x) => x.toFixed(d)).join('/');
  const note = (i: number) => `${rounds} rounds of ${windowMs / 1000} s, both agents at once (${fmt(cpu[i])} %), V8 memory-pressure part ${v8PartLoads(nodes[i]) ? 'loaded' : 'absent (gc() fallback)'}${extra[i].length ? `; flags beside the unit's: ${extra[i].join(' ')}` : ''}; load ${os.loadavg()[0].toFixed(1)}`;
  const [ca, cb] = cpu.map((xs) => percentile(xs, 50));
  const [ra, rb] = rss.map((xs) => percentile(xs, 50));
  const [fa, fb] = cpuFirst.map((xs) => percentile(xs, 50));
  const [la, lb] = floor.map((xs) => percentile(xs, 50));
  return [
    { issue: '#18', metric: `agent CPU, steady two-way call, Node ${va} (median)`, value: ca, unit: '% core', note: note(0) },
    { issue: '#18', metric: `agent CPU, steady two-way call, Node ${vb} (median)`, value: cb, unit: '% core', target: `<= Node ${va}`, pass: cb <= ca * 1.05, note: `${note(1)}; ratio ${(cb / ca).toFixed(2)}` },
    // the call's first 30 s, while V8 still optimises (efficiency mode delays TurboFan on Node 24+): for the record
    { issue: '#18', metric: `agent CPU, first 30 s of the call, Node ${va} (median)`, value: fa, unit: '% core', note: `rounds ${fmt(cpuFirst[0])} %` },
    { issue: '#18', metric: `agent CPU, first 30 s of the call, Node ${vb} (median)`, value: fb, unit: '% core', note: `rounds ${fmt(cpuFirst[1])} %; ratio ${(fb / fa).toFixed(2)}` },
    { issue: '#18', metric: `agent RSS in that call, Node ${va} (median)`, value: ra, unit: 'MB', note: `rounds ${fmt(rss[0], 1)} MB (medians of 10 s samples; range ${fmt([Math.min(...samples[0]), Math.max(...samples[0])], 1)})` },
    { issue: '#18', metric: `agent RSS in that call, Node ${vb} (median)`, value: rb, unit: 'MB', target: `<= Node ${va}`, pass: rb <= ra * 1.05, note: `rounds ${fmt(rss[1], 1)} MB (medians of 10 s samples; range ${fmt([Math.min(...samples[1]), Math.max(...samples[1])], 1)}); ratio ${(rb / ra).toFixed(2)}` },
    // the anchor: each Node's floor in the same run, and what the agent adds above it
    { issue: '#18', metric: `node floor RSS (memory keeper only), Node ${va} (median)`, value: la, unit: 'MB', note: `rounds ${fmt(floor[0], 1)} MB; the agent above it: ${(ra - la).toFixed(1)} MB` },
    { issue: '#18', metric: `node floor RSS (memory keeper only), Node ${vb} (median)`, value: lb, unit: 'MB', note: `rounds ${fmt(floor[1], 1)} MB; the agent above it: ${(rb - lb).toFixed(1)} MB (ratio to Node ${va}'s ${((rb - lb) / (ra - la)).toFixed(2)}); floors differ by ${(lb - la).toFixed(1)} MB, the agents by ${(rb - ra).toFixed(1)}` },
  ];
}
