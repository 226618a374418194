// Issue #18: the same agent build in a steady two-way call on two Node binaries, side by side in one run: the
// Node running the bench (the machine's) and the newest LTS (.ci/run's download in .test-runtime/node-lts, or
// BENCH_NODE_B=/path/to/node). Rounds alternate A, B, A, B... so drift of the machine's load hits both alike.
// Per round: a fresh agent process (a private copy of each binary: the agent as the only node process), a call,
// 30 s warm-up and the page-out of start-up code (src/common/memoryKeeper.ts), then CPU over 60 s and RSS at the end.
// The native addons are the checkout's: Opus, PortAudio and speaker-sys are Node-API and load in both; speaker-sys's
// V8 part may not load in the other Node's ABI (the memory keeper then uses gc(); the note says which).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sineWave } from '../src/common/audio/signal.js';
import { TestAssistantPeerProcess } from '../test/support/testAssistantPeer.js';
import { BENCH_KEY as KEY, CLK_TCK, ROOT, buildAgent, cpuTicks, pagedOut, privateNode, rssMb, spawnAgent, startVirtualAudio, stopAgent, stopVirtualAudio } from './agentProcess.js';
import { percentile, type BenchRow } from './table.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function otherNode(): string | undefined {
  if (process.env.BENCH_NODE_B) return process.env.BENCH_NODE_B;
  const dir = path.join(ROOT, '.test-runtime/node-lts/node_modules');
  if (!existsSync(dir)) return undefined;
  const pkg = readdirSync(dir).find((d) => d.startsWith('node-linux-'));
  const bin = pkg && path.join(dir, pkg, 'bin/node');
  return bin && existsSync(bin) ? bin : undefined;
}

const version = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
const v8PartLoads = (node: string) =>
  spawnSync(node, ['-e', 'process.exit(require("speaker-sys").memoryPressure ? 0 : 1)'], { cwd: ROOT }).status === 0;

export async function run(): Promise<BenchRow[]> {
  const b = otherNode();
  if (!b) {
    return [{ issue: '#18', metric: 'agent CPU on two Nodes', value: NaN, unit: '', note: 'no second Node: run .ci/run once (it downloads the newest LTS) or set BENCH_NODE_B' }];
  }
  const nodes = [process.execPath, b];
  const privates = nodes.map((n) => privateNode(n));
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  startVirtualAudio();
  const agentMain = await buildAgent();
  const peer = new TestAssistantPeerProcess({ workspaceKey: KEY, enrollmentFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'bench-peer-')), 'enrolled.json') });
  await peer.start();
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'bench-state-'));
  const cpu: number[][] = [[], []];
  const rss: number[][] = [[], []];
  const peerTone = sineWave(440, 48_000, 10, 0.3);
  try {
    for (let r = 0; r < rounds; r++) {
      for (const i of [0, 1]) {
        // a private copy of each binary: the agent as the only node process on the board (agentProcess.ts, privateNode)
        const agent = spawnAgent(agentMain, peer.url, stateDir, undefined, privates[i]);
        let pacat: ChildProcess | undefined;
        const feedPeer = setInterval(() => void peer.playTone(peerTone).catch(() => undefined), 10_000);
        try {
          await agent.next(/^call connected$/, 30_000);
          void peer.playTone(peerTone).catch(() => undefined);
          pacat = spawn('pacat', ['--playback', '--device=mic_in', '--format=s16le', '--rate=48000', '--channels=1', '--raw'], { env: process.env, stdio: ['pipe', 'ignore', 'ignore'] });
          pacat.stdin!.on('error', () => undefined);
          pacat.stdin!.end(Buffer.from(sineWave(700, 48_000, 100, 0.3).buffer));
          await sleep(30_000); // JIT and first GCs
          await pagedOut(agent); // the steady state: after the one page-out of start-up code (about 60 s)
          await sleep(5_000);
          const pid = agent.child.pid!;
          const t0 = performance.now();
          const c0 = cpuTicks(pid);
          await sleep(60_000);
          cpu[i].push((((cpuTicks(pid) - c0) / CLK_TCK) * 1000 * 100) / (performance.now() - t0));
          rss[i].push(rssMb(pid));
        } finally {
          clearInterval(feedPeer);
          pacat?.kill();
          await stopAgent(agent);
        }
      }
    }
  } finally {
    await peer.kill();
    stopVirtualAudio();
  }
  const [va, vb] = nodes.map(version);
  const fmt = (xs: number[], d = 2) => xs.map((x) => x.toFixed(d)).join('/');
  const note = (i: number) => `${rounds} alternating rounds (${fmt(cpu[i])} %), V8 memory-pressure part ${v8PartLoads(nodes[i]) ? 'loaded' : 'absent (gc() fallback)'}; load ${os.loadavg()[0].toFixed(1)}`;
  const [ca, cb] = cpu.map((xs) => percentile(xs, 50));
  const [ra, rb] = rss.map((xs) => percentile(xs, 50));
  return [
    { issue: '#18', metric: `agent CPU, steady two-way call, Node ${va} (median)`, value: ca, unit: '% core', note: note(0) },
    { issue: '#18', metric: `agent CPU, steady two-way call, Node ${vb} (median)`, value: cb, unit: '% core', target: `<= Node ${va}`, pass: cb <= ca * 1.05, note: `${note(1)}; ratio ${(cb / ca).toFixed(2)}` },
    { issue: '#18', metric: `agent RSS in that call, Node ${va} (median)`, value: ra, unit: 'MB', note: `rounds ${fmt(rss[0], 1)} MB` },
    { issue: '#18', metric: `agent RSS in that call, Node ${vb} (median)`, value: rb, unit: 'MB', target: `<= Node ${va}`, pass: rb <= ra * 1.05, note: `rounds ${fmt(rss[1], 1)} MB; ratio ${(rb / ra).toFixed(2)}` },
  ];
}
