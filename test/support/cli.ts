// Runs the real `speaker-agent` CLI (the esbuild bundle of src/cli/main.ts that `npm run build` makes, built for
// each test run by test/support/globalSetup.ts, so the tests run what users run) in a child process
// with its own config and state directories, and starts real companion servers for it to talk to.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { seedDefaults } from '../../src/companion/admin.js';
import { startCompanionServer, type CompanionServer } from '../../src/companion/server.js';
import { loadCompanionSettings } from '../../src/companion/settings.js';
import { createLogger } from '../../src/common/logger.js';
import { deviceHeaders } from '../../src/protocol/headers.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = process.env.SPEAKER_AGENT_TEST_CLI ?? path.join(ROOT, 'dist/speaker-agent.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A throwaway home for one device: config dir, state dir. */
export interface DeviceDirs {
  root: string;
  configDir: string;
  stateDir: string;
  env: NodeJS.ProcessEnv;
  remove(): void;
}

export function deviceDirs(extraEnv: NodeJS.ProcessEnv = {}): DeviceDirs {
  const root = mkdtempSync(path.join(os.tmpdir(), 'sa-cli-'));
  const configDir = path.join(root, 'config');
  const stateDir = path.join(root, 'state');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SPEAKER_AGENT_CONFIG_DIR: configDir,
    SPEAKER_AGENT_STATE_DIR: stateDir,
    SPEAKER_AGENT_STATUS_SOCKET: path.join(root, 'status.sock'),
    SPEAKER_AGENT_LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  for (const k of ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'SPEAKER_AGENT_WORKSPACE_KEY', 'SPEAKER_AGENT_SERVER_URL']) {
    if (!(k in extraEnv)) delete env[k];
  }
  return { root, configDir, stateDir, env, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/** How to start the CLI besides its arguments: as another user (root only: a maker without sudo on an installed
 *  speaker), or through a wrapper command (e.g. `unshare -m ...` to give it a full disk) that execs the rest. */
export interface CliSpawnOptions {
  uid?: number;
  gid?: number;
  wrap?: string[];
}

/** A `wrap` that gives the CLI `dir` on a full filesystem: a tmpfs of 16 KiB filled up, in a mount namespace of
 *  its own (gone with the process, nothing left mounted if the test dies). Root only. */
export const onFullDisk = (dir: string): string[] => [
  'unshare',
  '--mount',
  '--propagation',
  'private',
  'sh',
  '-c',
  `mount -t tmpfs -o size=16k tmpfs '${dir}' && head -c 16384 /dev/zero > '${dir}/.fill' 2>/dev/null; exec "$@"`,
  'sh',
];

export function spawnCli(args: string[], env: NodeJS.ProcessEnv, o: CliSpawnOptions = {}): ChildProcess {
  const argv = [...(o.wrap ?? []), process.execPath, CLI, ...args];
  return spawn(argv[0], argv.slice(1), { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], uid: o.uid, gid: o.gid });
}

export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 25_000, o: CliSpawnOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, o);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`speaker-agent ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(t);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Parses a command's --json output (stdout must be exactly one JSON document). */
export function json<T = Record<string, unknown>>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}

export interface TestCompanion {
  server: CompanionServer;
  url: string;
  dataDir: string;
  workspaceKey: string;
  /** the server's log lines (JSON objects) */
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The real companion server with the default workspace (sample voices and stories), on an ephemeral port. */
export async function startTestCompanion(): Promise<TestCompanion> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sa-companion-'));
  const seed = seedDefaults(dataDir);
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const settings = loadCompanionSettings({ host: '127.0.0.1', port: 0, dataDir }, {});
  const server = await startCompanionServer(settings, { logger: createLogger({ level: 'info', destination: sink }) });
  return {
    server,
    url: server.url,
    dataDir,
    workspaceKey: seed.key,
    logs,
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Enrolls a device (its dirs) against a companion: config written, identity created, secret enrolled. */
export async function enrollDevice(dev: DeviceDirs, c: TestCompanion): Promise<CliResult> {
  const r = await runCli(['enroll', '--server-url', c.url, '--json'], { ...dev.env, SPEAKER_AGENT_WORKSPACE_KEY: c.workspaceKey });
  if (r.code !== 0) throw new Error(`enroll failed (${r.code}): ${r.stdout}\n${r.stderr}`);
  return r;
}

export interface CliCompanion {
  child: ChildProcess;
  port: number;
  url: string;
  workspaceKey: string;
  /** headers of a new device (fresh client id and secret) */
  newDevice(): Record<string, string>;
  close(): void;
}

/** The companion as users run it: `speaker-agent companion serve` in its own process, one workspace, a free
 *  loopback port; resolves once it answers. `cli` defaults to the test bundle (the bench passes dist/); its log
 *  (stdout) goes to `logFile` when given, else nowhere. */
export async function startCliCompanion(env: NodeJS.ProcessEnv = process.env, cli = CLI, logFile?: string): Promise<CliCompanion> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cli-companion-'));
  const created = await new Promise<string>((resolve, reject) => {
    const c = spawn(process.execPath, [cli, 'companion', 'workspace', 'create', 'test', '--data-dir', dataDir, '--json'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout!.on('data', (d) => (out += String(d)));
    c.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`workspace create exited ${code}`))));
  });
  const workspaceKey = (JSON.parse(created) as { key: string }).key;
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
  const log = logFile === undefined ? 'ignore' : openSync(logFile, 'a', 0o600);
  const child = spawn(process.execPath, [cli, 'companion', 'serve', '--data-dir', dataDir, '--port', String(port)], { env, stdio: ['ignore', log, 'ignore'] });
  if (typeof log === 'number') closeSync(log); // the child holds its own copy
  const url = `http://127.0.0.1:${port}`;
  const newDevice = () => deviceHeaders({ workspaceKey, clientId: randomUUID(), clientSecret: randomBytes(24).toString('hex') });
  for (let i = 0; i < 120; i++) {
    if (await fetch(`${url}/v1/app/voices`, { headers: newDevice() }).then((r) => r.status === 200, () => false)) {
      return { child, port, url, workspaceKey, newDevice, close: () => void child.kill('SIGTERM') };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGKILL');
  throw new Error('the companion did not answer within 30 s');
}
