// The agent as a process for the benches: a real agent PROCESS (test/support/agentProcessMain.ts: PortAudio on the
// virtual sound card, amixer, werift), bundled as `npm run build` bundles the CLI and started with the systemd
// unit's node flags and environment; its log lines, CPU ticks, resident memory and open descriptors.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { unitEnvironment, unitNodeFlags } from './unitFlags.js';
// @ts-expect-error plain JavaScript build script, no type declarations
import { bundle } from '../scripts/build.mjs';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const BENCH_KEY = 'bench-workspace-key';
export const CLK_TCK = 100; // Linux USER_HZ
const PAGE = 4096;

export interface AgentProc {
  child: ChildProcess;
  /** resolves at the next log line whose msg matches */
  next(msg: RegExp, timeoutMs: number): Promise<number>;
  lines: string[];
}

export function startVirtualAudio(): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-pulse-'));
  const out = execFileSync(path.join(ROOT, 'scripts/virtual-audio.sh'), ['start'], { env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: dir }, encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]] = m[2];
  }
}

export function stopVirtualAudio(): void {
  try {
    execFileSync(path.join(ROOT, 'scripts/virtual-audio.sh'), ['stop'], { env: process.env });
  } catch {
    /* gone */
  }
}

/** Bundles test/support/agentProcessMain.ts exactly as `npm run build` bundles the CLI (scripts/build.mjs), and
 *  bench/nodeFloorMain.ts beside it (node-versions.bench.ts's anchor: a node running only the memory keeper). */
export async function buildAgent(): Promise<string> {
  const outdir = path.join(ROOT, '.test-runtime', 'bench-agent');
  await (bundle as (o: object) => Promise<unknown>)({ outdir, quiet: true, extraEntryPoints: { 'agent-main': 'test/support/agentProcessMain.ts', 'node-floor': 'bench/nodeFloorMain.ts' } });
  return path.join(outdir, 'agent-main.js');
}


/** A private copy of a Node binary (default: the one running the bench), for an agent process that should be
 *  measured as the only node process on a board: the kernel pages out (and RSS stops counting) only code pages no
 *  other process maps, and the bench's own node maps its binary (src/common/memoryKeeper.ts, page-out). */
export function privateNode(node: string = process.execPath): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-node-'));
  const copy = path.join(dir, 'node');
  copyFileSync(node, copy);
  chmodSync(copy, 0o755);
  return copy;
}

/** The newest LTS beside the machine's Node, for the benches that compare the two: BENCH_NODE_B, or .ci/run's
 *  download in .test-runtime/node-lts; undefined when there is none. */
export function otherNode(): string | undefined {
  if (process.env.BENCH_NODE_B) return process.env.BENCH_NODE_B;
  const dir = path.join(ROOT, '.test-runtime/node-lts/node_modules');
  if (!existsSync(dir)) return undefined;
  const pkg = readdirSync(dir).find((d) => d.startsWith('node-linux-'));
  const bin = pkg && path.join(dir, pkg, 'bin/node');
  return bin && existsSync(bin) ? bin : undefined;
}

/** Waits (at most timeoutMs) for the agent's one page-out of its start-up code (about a minute after start). */
export async function pagedOut(a: AgentProc, timeoutMs = 120_000): Promise<boolean> {
  if (a.lines.some((l) => l.includes('start-up code paged out'))) return true;
  return a.next(/^memory keeper: start-up code paged out$/, timeoutMs).then(() => true, () => false);
}

/** Starts the agent against url; `config` is written as its config.json (settings the variables do not cover);
 *  `node` is the Node binary (default: the one running the bench); `env` adds or overrides variables. */
export function spawnAgent(agentMain: string, url: string, stateDir: string, config?: object, node: string = process.execPath, env: Record<string, string> = {}, extraFlags: string[] = []): AgentProc {
  const configDir = mkdtempSync(path.join(os.tmpdir(), 'bench-conf-'));
  if (config) writeFileSync(path.join(configDir, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  const child = spawn(node, [...unitNodeFlags('speaker-agent.service', 'run'), ...extraFlags, agentMain], {
    cwd: ROOT,
    env: {
      ...serviceLikeEnv(),
      ...unitEnvironment('speaker-agent.service'),
      SPEAKER_AGENT_SERVER_URL: url,
      SPEAKER_AGENT_WORKSPACE_KEY: BENCH_KEY,
      SPEAKER_AGENT_CONFIG_DIR: configDir,
      SPEAKER_AGENT_STATE_DIR: stateDir,
      SPEAKER_AGENT_MIXER_CONTROL: 'Master',
      SPEAKER_AGENT_DUPLEX: 'full', // two-way: the mic is not gated while the peer's tone plays
      // and not held for a wake word, unless the bench's config asks for a mode (listening.bench.ts)
      SPEAKER_AGENT_LISTENING_MODE: (config as { listening?: { mode?: string } } | undefined)?.listening?.mode ?? 'always',
      SPEAKER_AGENT_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const lines: string[] = [];
  const waiters: Array<{ re: RegExp; resolve: (t: number) => void }> = [];
  createInterface({ input: child.stdout! }).on('line', (l) => {
    const t = performance.now();
    lines.push(l);
    if (lines.length > 2000) lines.splice(0, 1000);
    let msg = '';
    try {
      msg = String((JSON.parse(l) as { msg?: unknown }).msg ?? '');
    } catch {
      return;
    }
    for (const w of [...waiters]) {
      if (w.re.test(msg)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(t);
      }
    }
  });
  return {
    child,
    lines,
    next: (re, timeoutMs) =>
      new Promise((resolve, reject) => {
        const w = { re, resolve: (t: number) => (clearTimeout(timer), resolve(t)) };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`agent: no "${re.source}" within ${timeoutMs} ms; last lines: ${lines.slice(-3).join(' | ')}`));
        }, timeoutMs);
        waiters.push(w);
      }),
  };
}

/** The bench's environment without what a developer's shell adds and the service never gets: NODE_EXTRA_CA_CERTS
 *  makes node read and parse that bundle and its own root certificates at start-up (issue #18, heaptrack: 0.85 MB of
 *  malloc on Node 20, 1.3 MB on Node 26, in an agent that never opens a TLS connection in the benches). */
export function serviceLikeEnv(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _certs, NODE_OPTIONS: _options, ...env } = process.env;
  return env;
}

export async function stopAgent(a: AgentProc): Promise<void> {
  if (a.child.exitCode !== null) return;
  const exited = new Promise((r) => a.child.once('exit', r));
  a.child.kill('SIGTERM');
  const t = setTimeout(() => a.child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(t);
}

export function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime
}

/** CPU time the hypervisor gave to others while this VM wanted it (/proc/stat "steal"), in ticks, all CPUs. */
export function stealTicks(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  return Number(cpu[8] ?? 0);
}

export function rssMb(pid: number): number {
  const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
  return (pages * PAGE) / 1024 / 1024;
}


