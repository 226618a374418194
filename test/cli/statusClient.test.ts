// The CLI's daemon-facing commands (status [--follow], mic, listen: src/cli/statusClient.ts) against a real daemon
// (`speaker-agent run` as a process, the real companion server, the virtual sound card) that crashes, restarts,
// hangs, sits behind permissions the caller lacks, or runs without its microphone.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/audioCapture.js';
import { startStatusServer } from '../../src/agent/statusServer.js';
import { DaemonUnreachable } from '../../src/cli/statusClient.js';
import { CLI, deviceDirs, enrollDevice, json, onFullDisk, ROOT, runCli, spawnCli, startTestCompanion, type CliResult, type DeviceDirs, type TestCompanion } from '../support/cli.js';

let companion: TestCompanion;
let dev: DeviceDirs;

interface Line {
  state: string;
  reason: string;
  micOnWire: boolean;
  micMuted?: boolean;
}

beforeAll(async () => {
  companion = await startTestCompanion();
  dev = deviceDirs({ SPEAKER_AGENT_LISTENING_MODE: 'manual' });
  await enrollDevice(dev, companion);
}, 90_000);
afterAll(async () => {
  dev.remove();
  await companion.close();
});

function startDaemon(env: NodeJS.ProcessEnv = dev.env): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawnCli(['run'], env);
  return { child, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

async function stopDaemon(d: { child: ChildProcess; exited: Promise<number | null> }): Promise<void> {
  if (d.child.exitCode === null && d.child.signalCode === null) d.child.kill('SIGTERM');
  await d.exited;
}

async function waitFor<T>(get: () => Promise<T | undefined> | T | undefined, what: string, tries = 60, everyMs = 250): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await get();
    if (v !== undefined) return v;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function statusJson(env: NodeJS.ProcessEnv = dev.env): Promise<{ state: string; listening: Line; audioDevices: { microphone: string; speaker: string } | null } | undefined> {
  const r = await runCli(['status', '--json'], env);
  return r.code === 0 ? json(r) : undefined;
}

/** `status --follow --json` as a process, its lines parsed as they come */
function follow(env: NodeJS.ProcessEnv = dev.env): { child: ChildProcess; lines: Line[]; exited: Promise<number | null>; stderr: () => string } {
  const child = spawnCli(['status', '--follow', '--json'], env);
  const lines: Line[] = [];
  let buf = '';
  let err = '';
  child.stdout!.on('data', (c) => {
    buf += c;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      lines.push(JSON.parse(buf.slice(0, nl)) as Line);
      buf = buf.slice(nl + 1);
    }
  });
  child.stderr!.on('data', (c) => (err += c));
  return { child, lines, exited: new Promise((r) => child.on('exit', (code) => r(code))), stderr: () => err };
}

describe('status --follow across a daemon crash and restart', () => {
  it('regression: `status --follow` ended (exit 0) when the daemon went away, so the README\'s LED froze on the last micOnWire; it now says "not running" with micOnWire false and resumes when the daemon is back', async () => {
    let d = startDaemon();
    await waitFor(async () => ((await statusJson())?.state === 'connected' ? true : undefined), 'the call', 120, 500);
    const f = follow();
    let late: ReturnType<typeof follow> | undefined;
    try {
      await waitFor(() => (f.lines.some((l) => l.reason === 'current') ? true : undefined), 'the first line');
      expect((await runCli(['listen'], dev.env)).code).toBe(0);
      await waitFor(() => (f.lines.at(-1)?.micOnWire ? true : undefined), 'micOnWire');

      // a crash (or a watchdog kill): the LED must go dark, and the follower must stay
      d.child.kill('SIGKILL');
      await d.exited;
      const down = await waitFor(() => (f.lines.at(-1)?.micOnWire === false ? f.lines.at(-1) : undefined), 'a line with micOnWire false', 40);
      expect(down).toMatchObject({ state: 'not_running', micOnWire: false, micMuted: false });
      const count = f.lines.length;
      await sleep(2_500); // a second and more of retries: still following, and no line per retry
      expect(f.child.exitCode, f.stderr()).toBeNull();
      expect(f.lines.length).toBe(count);
      // started while no daemon runs (an LED service ordered before it at boot): the same line, and it waits
      late = follow();
      const absent = await waitFor(() => late!.lines[0], 'the line of a follower started without a daemon', 40);
      expect(absent).toMatchObject({ state: 'not_running', micOnWire: false });

      // muted while it is down (the file), then it starts again: the follower shows the daemon's own state
      expect(json(await runCli(['mic', 'off', '--json'], dev.env))).toMatchObject({ micMuted: true, running: false });
      d = startDaemon();
      const back = await waitFor(() => f.lines.slice(count).find((l) => l.reason === 'current'), 'the restarted daemon\'s current state', 120);
      expect(back).toMatchObject({ state: 'muted', micMuted: true, micOnWire: false });
      expect(await waitFor(() => late!.lines.find((l) => l.reason === 'current'), 'the late follower to find the daemon', 40)).toMatchObject({ state: 'muted' });

      // a clean stop (an upgrade) too; the mute, read from mic.json, rides along
      await stopDaemon(d);
      const stopped = await waitFor(() => (f.lines.at(-1)?.state === 'not_running' ? f.lines.at(-1) : undefined), 'the line after a clean stop', 40);
      expect(stopped).toMatchObject({ micOnWire: false, micMuted: true });

      f.child.kill('SIGINT');
      expect(await f.exited).toBe(0);
      late.child.kill('SIGTERM');
      expect(await late.exited).toBe(0);
    } finally {
      f.child.kill('SIGKILL');
      late?.child.kill('SIGKILL');
      await stopDaemon(d);
      rmSync(path.join(dev.stateDir, 'mic.json'), { force: true });
    }
  }, 180_000);

  it('a follower whose reader went away (the LED script\'s loop ended) exits at its next line, not following on for nobody', async () => {
    const f = follow();
    await waitFor(() => f.lines[0], 'the not_running line', 40);
    f.child.stdout!.destroy(); // the pipe's reading end closes
    const d = startDaemon();
    try {
      expect(await Promise.race([f.exited, sleep(30_000).then(() => 'still running')])).toBe(0);
    } finally {
      f.child.kill('SIGKILL');
      await stopDaemon(d);
    }
  }, 60_000);
});

describe('DaemonUnreachable: which failure it is', () => {
  it('regression (from a review): a socket-group user, whose first candidate is in the 0700 state directory, was told "permission denied" while the agent was simply down; a missing socket anywhere means down', () => {
    const down = new DaemonUnreachable([
      { socketPath: '/var/lib/speaker-agent/status.sock', code: 'EACCES', why: 'permission denied' },
      { socketPath: '/run/speaker-agent/status.sock', code: 'ENOENT', why: 'no such file' },
    ]);
    expect({ denied: down.denied, absent: down.absent, code: down.code }).toEqual({ denied: false, absent: false, code: 'network' });
    const denied = new DaemonUnreachable([{ socketPath: '/run/speaker-agent/status.sock', code: 'EACCES', why: 'permission denied' }]);
    expect({ denied: denied.denied, absent: denied.absent, code: denied.code }).toEqual({ denied: true, absent: false, code: 'config_invalid' });
    const gone = new DaemonUnreachable([{ socketPath: '/run/speaker-agent/status.sock', code: 'ECONNREFUSED', why: 'refused' }]);
    expect({ denied: gone.denied, absent: gone.absent }).toEqual({ denied: false, absent: true });
  });

  it("regression (from a review): a socket missing from the caller's own state directory (no install wrapper) hid the service's permission denied; only the service's socket missing means down", () => {
    const e = new DaemonUnreachable([
      { socketPath: '/home/maker/.local/state/speaker-agent/status.sock', code: 'ENOENT', why: 'no such file' },
      { socketPath: '/run/speaker-agent/status.sock', code: 'EACCES', why: 'permission denied' },
    ]);
    expect({ denied: e.denied, code: e.code }).toEqual({ denied: true, code: 'config_invalid' });
  });
});

describe('mic off while the agent starts', () => {
  it('regression (from a review): a `mic off` that found no socket, while an agent came up and read mic.json before the write landed, printed MUTED though nothing muted the agent; it asks once more after writing', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sa-mic-race-'));
    const socketPath = path.join(dir, 'status.sock');
    const stateDir = path.join(dir, 'state');
    const muted: string[] = [];
    // The agent's socket, listening already under another name; it appears at the CLI's socket path (a link, one
    // syscall) as soon as the CLI starts writing mic.json (its temp file): after its first try, before its retry,
    // which comes only after the write's fsyncs and rename.
    const server = await startStatusServer({
      socketPath: path.join(dir, 'agent.sock'),
      snapshot: () => ({}),
      commands: {
        listen: () => ({ ok: true }),
        stop: () => ({ ok: true }),
        micOff: () => (muted.push('off'), { ok: true, listening: { micMuted: true, state: 'muted' } }),
        micOn: () => ({ ok: true, listening: { micMuted: false, state: 'idle' } }),
      },
    });
    mkdirSync(stateDir, { recursive: true });
    const watcher = watch(stateDir, () => {
      if (!existsSync(socketPath)) symlinkSync(path.join(dir, 'agent.sock'), socketPath);
    });
    try {
      const env: NodeJS.ProcessEnv = { ...dev.env, SPEAKER_AGENT_STATUS_SOCKET: socketPath, SPEAKER_AGENT_STATE_DIR: stateDir };
      const r = await runCli(['mic', 'off', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(json(r)).toMatchObject({ micMuted: true, running: true, state: 'muted' });
      expect(muted).toEqual(['off']);
    } finally {
      watcher.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('mic, status and listen when the daemon cannot be reached or config.json is broken', () => {
  it('regression: `mic off` to a hung daemon (no answer within 5 s) said "MUTED (the agent is not running)" and wrote mic.json while the daemon kept listening; it now fails loudly', async () => {
    const d = startDaemon();
    try {
      await waitFor(async () => ((await statusJson())?.state === 'connected' ? true : undefined), 'the call', 120, 500);
      d.child.kill('SIGSTOP'); // a hung event loop: the socket accepts, nobody answers
      let r: CliResult;
      let written: boolean;
      try {
        r = await runCli(['mic', 'off'], dev.env);
        written = existsSync(path.join(dev.stateDir, 'mic.json')); // before the daemon may act on the request
      } finally {
        d.child.kill('SIGCONT');
      }
      expect(r.code, r.stdout + r.stderr).toBe(5);
      expect(r.stderr).toMatch(/could not reach the running agent:\n {2}\S+status\.sock: no answer within 5000 ms\n`mic off` is not confirmed/);
      expect(r.stdout).toBe('');
      expect(written).toBe(false);
    } finally {
      await stopDaemon(d);
      rmSync(path.join(dev.stateDir, 'mic.json'), { force: true });
    }
  }, 120_000);

  it('regression: a typo in config.json of a running speaker made `mic off` impossible (exit 3); mute, status and listen go through the socket without it', async () => {
    const configFile = path.join(dev.configDir, 'config.json');
    const good = readFileSync(configFile, 'utf8');
    const d = startDaemon();
    try {
      await waitFor(async () => ((await statusJson())?.state === 'connected' ? true : undefined), 'the call', 120, 500);
      writeFileSync(configFile, good.replace(/}\s*$/, ',\n}')); // a trailing comma: not JSON
      const off = await runCli(['mic', 'off', '--json'], dev.env);
      expect(off.code, off.stderr).toBe(0);
      expect(json(off)).toMatchObject({ micMuted: true, running: true, state: 'muted' });
      expect((await runCli(['status'], dev.env)).stdout).toMatch(/^listening:\s+muted/m);
      expect(json(await runCli(['mic', 'on', '--json'], dev.env))).toMatchObject({ micMuted: false, running: true });
      expect((await runCli(['listen', 'stop'], dev.env)).code).toBe(0);
      await stopDaemon(d);

      // no daemon: the state directory is all the fallback needs
      const offline = await runCli(['mic', 'off', '--json'], dev.env);
      expect(offline.code, offline.stderr).toBe(0);
      expect(json(offline)).toMatchObject({ micMuted: true, running: false });
      expect(JSON.parse(readFileSync(path.join(dev.stateDir, 'mic.json'), 'utf8'))).toMatchObject({ muted: true });

      // no daemon and no state directory given: the broken config.json may name another one (paths.stateDir), so
      // nothing is written where the agent might never read it (from a review)
      const home = mkdtempSync(path.join(os.tmpdir(), 'sa-broken-home-'));
      const env: NodeJS.ProcessEnv = { ...dev.env, HOME: home };
      delete env.SPEAKER_AGENT_STATE_DIR;
      const unknown = await runCli(['mic', 'off'], env);
      expect(unknown.code).toBe(3);
      expect(unknown.stderr).toMatch(/cannot be read, so where it keeps its state is unknown: the microphone was not changed/);
      expect(existsSync(path.join(home, '.local/state/speaker-agent/mic.json'))).toBe(false);
      rmSync(home, { recursive: true, force: true });
    } finally {
      writeFileSync(configFile, good);
      await stopDaemon(d);
      rmSync(path.join(dev.stateDir, 'mic.json'), { force: true });
    }
  }, 120_000);
});

// as root only (CI is): mounting the small filesystem
describe.skipIf(process.getuid?.() !== 0)('mic with no agent on a full disk', () => {
  it('regression: `mic off` with no agent on a full card printed a bare "ENOSPC: no space left on device"; it names the file and says nothing changed', async () => {
    const d = deviceDirs();
    try {
      mkdirSync(d.stateDir, { recursive: true });
      const r = await runCli(['mic', 'off'], d.env, 25_000, { wrap: onFullDisk(d.stateDir) });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(path.join(d.stateDir, 'mic.json'));
      expect(r.stderr).toMatch(/no space left on device/);
      expect(r.stderr).toMatch(/the microphone was not changed/);
      expect(r.stderr).not.toMatch(/^ENOSPC/m);
      const j = await runCli(['mic', 'on', '--json'], d.env, 25_000, { wrap: onFullDisk(d.stateDir) });
      expect(j.code).toBe(3);
      expect((JSON.parse(j.stderr) as { error: { code: string } }).error.code).toBe('config_invalid');
    } finally {
      d.remove();
    }
  }, 60_000);
});

// A user without sudo on an installed speaker: the daemon's socket sits in a directory the caller may not enter
// (/run/speaker-agent, 0750) and config.json may be unreadable (/etc/speaker-agent, 0750). Here the daemon runs
// as root in a 0700 directory, and the CLI as nobody.
describe.skipIf(process.getuid?.() !== 0)('as a user without the rights', () => {
  const NOBODY = 65534;
  let home: string;
  let readableConfig: string;
  beforeAll(() => {
    home = mkdtempSync(path.join(os.tmpdir(), 'sa-nobody-'));
    chownSync(home, NOBODY, NOBODY);
    readableConfig = mkdtempSync(path.join(os.tmpdir(), 'sa-nobody-config-'));
    chmodSync(readableConfig, 0o755);
    copyFileSync(path.join(dev.configDir, 'config.json'), path.join(readableConfig, 'config.json'));
    chmodSync(path.join(readableConfig, 'config.json'), 0o644);
  });
  afterAll(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(readableConfig, { recursive: true, force: true });
  });

  /** the CLI as nobody, its own home (no state directory given: the default under $HOME) */
  function runAsNobody(args: string[], configDir: string): Promise<CliResult> {
    const env: NodeJS.ProcessEnv = { ...dev.env, HOME: home, SPEAKER_AGENT_CONFIG_DIR: configDir };
    delete env.SPEAKER_AGENT_STATE_DIR;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], { env, cwd: ROOT, uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c) => (stdout += c));
      child.stderr.on('data', (c) => (stderr += c));
      const t = setTimeout(() => child.kill('SIGKILL'), 25_000);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(t);
        resolve({ code, signal, stdout, stderr });
      });
    });
  }

  it('regression: without sudo, `status` led with "the agent is not running" and `mic off` printed "MUTED (the agent is not running)" and wrote mic.json into the caller\'s home while the daemon kept listening; both now say "permission denied: run it with sudo"', async () => {
    const d = startDaemon();
    try {
      await waitFor(async () => ((await statusJson())?.state === 'connected' ? true : undefined), 'the call', 120, 500);
      const status = await runAsNobody(['status'], readableConfig);
      expect(status.code, status.stderr).toBe(3);
      expect(status.stderr).toMatch(/^speaker-agent: permission denied: run it with sudo \(the service's files are root's and speaker-agent's\)/);
      expect(status.stderr).not.toMatch(/not running/);

      const off = await runAsNobody(['mic', 'off'], readableConfig);
      expect(off.code, off.stdout).toBe(3);
      expect(off.stderr).toMatch(/permission denied: run it with sudo/);
      expect(off.stderr).toMatch(/the microphone was not changed/);
      expect(off.stdout).toBe('');
      expect(existsSync(path.join(home, '.local/state/speaker-agent/mic.json'))).toBe(false);
      expect((await statusJson())?.listening.micMuted).toBe(false);

      const listen = await runAsNobody(['listen'], readableConfig);
      expect(listen.code).toBe(3);
      expect(listen.stderr).toMatch(/permission denied: run it with sudo/);

      // an LED script as the wrong user: told at once, not fed "not running" lines
      const f = await runAsNobody(['status', '--follow', '--json'], readableConfig);
      expect(f.code).toBe(3);
      expect(f.stderr).toMatch(/permission denied: run it with sudo/);
      expect(f.stdout).toBe('');
    } finally {
      await stopDaemon(d);
    }
  }, 120_000);

  it('regression: without sudo, an unreadable config.json (/etc/speaker-agent is 0750) failed status, mic and listen with "cannot read the configuration …: EACCES"; they say "permission denied: run it with sudo"', async () => {
    const d = startDaemon();
    try {
      await waitFor(async () => ((await statusJson())?.state === 'connected' ? true : undefined), 'the call', 120, 500);
      for (const args of [['status'], ['mic', 'off'], ['mic'], ['listen']]) {
        const r = await runAsNobody(args, dev.configDir);
        expect(r.code, args.join(' ')).toBe(3);
        expect(r.stderr, args.join(' ')).toMatch(/^speaker-agent: permission denied: run it with sudo/);
        expect(r.stderr, args.join(' ')).not.toMatch(/cannot read the configuration|not running/);
      }
      expect((await statusJson())?.listening.micMuted).toBe(false);
    } finally {
      await stopDaemon(d);
    }
    // no daemon either: nothing to reach, and the state directory the file belongs in is not known to this user
    const offline = await runAsNobody(['mic', 'off'], dev.configDir);
    expect(offline.code).toBe(3);
    expect(offline.stderr).toMatch(/permission denied: run it with sudo/);
    expect(existsSync(path.join(home, '.local/state/speaker-agent/mic.json'))).toBe(false);
  }, 120_000);
});

describe('a daemon without its microphone', () => {
  it('regression: with no sound card `status` showed connected and idle and hid the devices, and `listen` answered "listening" exit 0; status has an audio line, listen warns and exits 6', async () => {
    const noMic = { ...dev.env, SPEAKER_AGENT_CAPTURE_DEVICE: 'no-such-card' };
    const d = startDaemon(noMic);
    try {
      const st = await waitFor(async () => {
        const s = await statusJson();
        return s?.state === 'connected' && s.audioDevices?.microphone === 'retrying' ? s : undefined;
      }, 'the call with the microphone retrying', 120, 500);
      expect(st.audioDevices).toMatchObject({ microphone: 'retrying', speaker: 'open' });
      const human = await runCli(['status'], dev.env);
      expect(human.stdout).toMatch(/^audio:\s+microphone NOT OPEN \(retrying: no such device\?\), speaker open$/m);

      const listen = await runCli(['listen'], dev.env);
      expect(listen.code).toBe(6);
      expect(listen.stderr).toMatch(/the microphone is not open \(retrying\): nothing is heard/);
      const listenJson = await runCli(['listen', '--json'], dev.env);
      expect(listenJson.code).toBe(6);
      expect(json<{ microphone: string }>(listenJson).microphone).toBe('retrying');
    } finally {
      await stopDaemon(d);
    }
  }, 120_000);

  it('with its microphone, status says so and listen exits 0', async () => {
    const d = startDaemon();
    try {
      await waitFor(async () => {
        const s = await statusJson();
        return s?.state === 'connected' && s.audioDevices?.microphone === 'open' ? s : undefined;
      }, 'the call with the microphone open', 120, 500);
      expect((await runCli(['status'], dev.env)).stdout).toMatch(/^audio:\s+microphone open, speaker open$/m);
      const listen = await runCli(['listen'], dev.env);
      expect(listen.code, listen.stderr).toBe(0);
      expect(listen.stderr).toBe('');
      await runCli(['listen', 'stop'], dev.env);
    } finally {
      await stopDaemon(d);
    }
  }, 120_000);
});
