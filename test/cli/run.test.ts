// `speaker-agent run` as a real process: sd_notify READY=1 and WATCHDOG=1 arrive on a NOTIFY_SOCKET this test
// binds (a real unix datagram socket), `status` reads the daemon's socket, SIGTERM closes the call so the
// companion server sees the peer go and the process exits 0 after STOPPING=1. And the README's first
// command: `run --demo` with no server configured and a scripted user.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/audioCapture.js';
import { CLI, deviceDirs, enrollDevice, json, runCli, spawnCli, startTestCompanion, type DeviceDirs, type TestCompanion } from '../support/cli.js';
import { journaldAvailable, runUnderJournald } from '../support/journald.js';
import { startNotifyReceiver } from '../support/notifySocket.js';

const ROOT_DIR = path.resolve(import.meta.dirname, '../..');

let companion: TestCompanion;
let dev: DeviceDirs;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-run-'));
beforeAll(async () => {
  companion = await startTestCompanion();
  dev = deviceDirs();
  await enrollDevice(dev, companion);
}, 90_000);
afterAll(async () => {
  dev.remove();
  await companion.close();
  rmSync(tmp, { recursive: true, force: true });
});

interface Status {
  state: string;
  clientId: string;
  secretFingerprint: string;
  server: string;
  pid: number;
  watchdogPings: number;
  route: string | null;
}

async function statusOf(env: NodeJS.ProcessEnv): Promise<Status | undefined> {
  const r = await runCli(['status', '--json'], env);
  return r.code === 0 ? json<Status>(r) : undefined;
}

describe('speaker-agent run (daemon)', () => {
  it('notifies systemd, serves its status, and shuts down cleanly on SIGTERM', async () => {
    const rx = await startNotifyReceiver(path.join(tmp, 'notify.sock'));
    const child = spawnCli(['run'], { ...dev.env, NOTIFY_SOCKET: rx.address, WATCHDOG_USEC: '1000000', SPEAKER_AGENT_LOG_LEVEL: 'info' });
    let stdout = '';
    child.stdout!.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      expect(await rx.waitFor((m) => m.startsWith('READY=1'), 30_000)).toMatch(/^READY=1\nSTATUS=running/);
      await rx.waitFor((m) => m === 'WATCHDOG=1', 10_000);

      // status from the daemon's socket, until the call is up
      let st: Status | undefined;
      for (let i = 0; i < 40 && st?.state !== 'connected'; i++) {
        st = await statusOf(dev.env);
        if (st?.state !== 'connected') await sleep(500);
      }
      expect(st?.state).toBe('connected');
      expect(st!.pid).toBe(child.pid);
      expect(st!.server).toBe(companion.url);
      expect(st!.watchdogPings).toBeGreaterThan(0);
      expect(st!.route).toBe('direct'); // the companion on this machine: no relay
      const enrolled = json<{ clientId: string; secretFingerprint: string }>(await runCli(['enroll', '--check', '--json'], dev.env));
      expect(st!.clientId).toBe(enrolled.clientId);
      expect(st!.secretFingerprint).toBe(enrolled.secretFingerprint);
      const human = await runCli(['status'], dev.env);
      expect(human.stdout).toMatch(/^call:\s+connected/m);
      expect(human.stdout).toContain(`client id:   ${enrolled.clientId}`);
      expect(rx.messages.some((m) => m.startsWith('STATUS=call connected'))).toBe(true);
      // Regression (#4, idle memory): the daemon loaded koffi, a general FFI (~3.4 MB resident), for sd_notify
      // and two dup calls; those are in vendor/speaker-sys. koffi is mapped again for the echo canceller (#15,
      // audio.duplex auto, libspeexdsp), a default: it comes with it. The default wake word engine (#16,
      // listening.mode wake) is openWakeWord on ONNX Runtime in its worker thread; pocketsphinx is not loaded.
      const maps = readFileSync(`/proc/${child.pid}/maps`, 'utf8');
      expect(maps).toMatch(/speaker_sys\.node/);
      expect(maps).toMatch(/libspeexdsp\.so/);
      expect(maps).toMatch(/libonnxruntime\.so/);
      expect(maps).not.toMatch(/libpocketsphinx\.so/);
      // The memory keeper's V8 call loaded (its own addon): the daemon collects incrementally, not with gc().
      expect(maps).toMatch(/speaker_sys_v8\.node/);
      // Regression (#4, idle memory): libportaudio.so loaded libjack and Berkeley DB; PortAudio is now static.
      expect(maps).not.toMatch(/libjack\.so|libdb-[\d.]+\.so|libportaudio\.so/);

      // journald gets JSON lines only (native printf output is kept off stdout)
      for (const line of stdout.trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
      expect(stdout).toMatch(/"route":"direct"[^\n]*"msg":"call connected"/);

      const endedBefore = companion.logs.filter((l) => l.msg === 'call ended').length;
      child.kill('SIGTERM');
      await rx.waitFor((m) => m.startsWith('STOPPING=1'), 5_000);
      expect(await exited).toBe(0);
      // the server saw the peer go (not its 60 s idle timeout)
      for (let i = 0; i < 100 && companion.logs.filter((l) => l.msg === 'call ended').length === endedBefore; i++) await sleep(50);
      const ended = companion.logs.filter((l) => l.msg === 'call ended').slice(endedBefore);
      expect(ended.length, JSON.stringify(companion.logs.slice(-8).map((l) => [l.msg, l.reason, l.detail]))).toBeGreaterThan(0);
      expect(ended[0]).toMatchObject({ reason: 'transport', detail: 'data channel closed' });

      const gone = await runCli(['status'], dev.env);
      expect(gone.code).toBe(5);
      expect(gone.stderr).toMatch(/the agent is not running/);
    } finally {
      child.kill('SIGKILL');
      rx.close();
    }
  }, 120_000);

  it('a second daemon on the same status socket refuses to start', async () => {
    const first = spawnCli(['run'], dev.env);
    try {
      let st: Status | undefined;
      for (let i = 0; i < 40 && !st; i++) {
        st = await statusOf(dev.env);
        if (!st) await sleep(500);
      }
      expect(st).toBeDefined();
      const second = await runCli(['run'], dev.env);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/another speaker-agent is already running/);
    } finally {
      first.kill('SIGTERM');
      await new Promise((r) => first.on('exit', r));
    }
  }, 120_000);

  // The service listens in its RuntimeDirectory (/run/speaker-agent), `sudo speaker-agent run` in the state
  // directory: different sockets, one identity.
  it('regression: a daemon started beside one on another status socket (the service and a manual run) ran a second agent on the same identity; it refuses', async () => {
    const manualEnv = { ...dev.env };
    delete manualEnv.SPEAKER_AGENT_STATUS_SOCKET; // <state dir>/status.sock
    const first = spawnCli(['run'], manualEnv);
    try {
      let st: Status | undefined;
      for (let i = 0; i < 40 && !st; i++) {
        st = await statusOf(manualEnv);
        if (!st) await sleep(500);
      }
      expect(st).toBeDefined();
      const runtime = path.join(dev.root, 'run');
      mkdirSync(runtime, { recursive: true });
      const second = await runCli(['run'], { ...manualEnv, RUNTIME_DIRECTORY: runtime }); // as the service
      expect(second.stderr).toMatch(/another speaker-agent is already running \(it answers on .*\/state\/status\.sock\)/);
      expect(second.code).toBe(1);
    } finally {
      first.kill('SIGTERM');
      await new Promise((r) => first.on('exit', r));
    }
  }, 120_000);
});

describe('the journal a speaker writes (a real systemd-journald, test/support/journald.ts): what wears its SD card', () => {
  it.runIf(journaldAvailable())('a start is a dozen lines, a call idle for 25 s none, and every line is a JSON line stored at its own priority (no library output)', async () => {
    // the default log level; the speaker idle in its call (listening for the wake word) until SIGTERM
    const r = await runUnderJournald('speaker-agent', ['timeout', '-s', 'TERM', '35', process.execPath, CLI, 'run'], { ...dev.env, SPEAKER_AGENT_LOG_LEVEL: 'info' });
    expect(r.status, r.stderr).toBe(124); // timeout's status: the agent ran until it was stopped
    const lines = r.entries.map((e) => ({ priority: e.PRIORITY, at: Number(e.__REALTIME_TIMESTAMP) / 1000, text: e.MESSAGE ?? '' }));
    const parsed = lines.map((l) => {
      expect(() => JSON.parse(l.text), `not a log line of ours: ${l.text}`).not.toThrow(); // e.g. "ALSA lib ...", a native library's warning
      return { ...l, json: JSON.parse(l.text) as { level: number; msg: string } };
    });
    // each stored at its own level's priority (info 6, warn 4, error 3)
    for (const l of parsed) expect(l.priority, l.text).toBe(String({ 30: 6, 40: 4, 50: 3, 60: 2 }[l.json.level]));
    const connected = parsed.findIndex((l) => l.json.msg === 'call connected');
    const stopping = parsed.findIndex((l) => l.json.msg === 'shutting down');
    expect(connected, parsed.map((l) => l.json.msg).join('\n')).toBeGreaterThan(0);
    expect(stopping, parsed.map((l) => l.json.msg).join('\n')).toBeGreaterThan(connected);
    expect(connected + 1, 'lines up to the call').toBeLessThanOrEqual(15);
    // idle in the call: nothing, but what is said once per call on a busy machine (a speaker underrun at the start)
    // and the start's own last lines (the wake word engine, the audio threads) within 5 s of the call
    const idle = parsed.slice(connected + 1, stopping).filter((l) => l.at > parsed[connected].at + 5_000 && !l.json.msg.includes('said once per call'));
    expect(idle.map((l) => l.text)).toEqual([]);
    expect(parsed[stopping].at - parsed[connected].at, 'the idle span measured').toBeGreaterThan(20_000);
  }, 90_000);
});

describe('speaker-agent run --demo (the README\'s first command)', () => {
  it('with no server configured: local companion, enrollment, a scripted user, the volume set to 40 %', async () => {
    const fresh = deviceDirs();
    try {
      await runCli(['volume', 'set', '75'], fresh.env);
      const r = await runCli(['run', '--demo', '--demo-timeout', '60'], fresh.env, 110_000);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/started a local companion server at http:\/\/127\.0\.0\.1:\d+/);
      expect(r.stdout).toMatch(/\[call connected\]/);
      expect(r.stdout).toMatch(/you\s+set the volume to forty percent/);
      expect(r.stdout).toMatch(/function\s+set_device_volume \{"volume_level":40\} -> volume now 40%/);
      expect(r.stdout).toMatch(/assistant\s+\S+/);
      expect(r.stdout).toMatch(/demo\s+done: .*mixer reads 40%/);
      expect(json<{ volumePercent: number }>(await runCli(['volume', '--json'], fresh.env)).volumePercent).toBe(40);
      // the human conversation owns stdout: no JSON log lines in it
      expect(r.stdout).not.toMatch(/^\{/m);
    } finally {
      fresh.remove();
    }
  }, 150_000);
});

describe('NODE_OPTIONS=--jitless (README, "Node.js versions": the lighter choice for a board short of memory)', () => {
  it('the whole conversation runs without V8\'s compilers: the wake word, the call, the function and the reply', async () => {
    const fresh = deviceDirs({ NODE_OPTIONS: '--jitless' });
    try {
      const r = await runCli(['run', '--demo', '--demo-timeout', '90'], fresh.env, 140_000);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      // the wake word engine (ONNX Runtime in its worker thread, which inherits the flag) was ready and used
      expect(r.stdout).toMatch(/the scripted user says "hey jarvis\. set the volume/);
      expect(r.stdout).toMatch(/function\s+set_device_volume \{"volume_level":40\} -> volume now 40%/);
      expect(r.stdout).toMatch(/demo\s+done: .*mixer reads 40%/);
      // node took the flag: V8 without its compilers has no WebAssembly compiler, so a module cannot be compiled
      const probe = await new Promise<string>((resolve) => {
        const c = spawn(process.execPath, ['-e', 'try { new WebAssembly.Module(new Uint8Array([0,97,115,109,1,0,0,0])); console.log("jit") } catch { console.log("jitless") }'], { env: fresh.env });
        let out = '';
        c.stdout!.on('data', (d) => (out += d));
        c.on('close', () => resolve(out.trim()));
      });
      expect(probe).toBe('jitless');
    } finally {
      fresh.remove();
    }
  }, 180_000);
});

describe('npm start on a machine without a sound card (run --conversation)', () => {
  it('starts the virtual sound card and a scripted user speaks, because nobody can talk into a virtual microphone', async () => {
    const fresh = deviceDirs();
    const pulseDir = path.join(fresh.root, 'pulse');
    // No sound server in reach: what a fresh Debian machine without a card looks like to the agent.
    const env: NodeJS.ProcessEnv = { ...fresh.env, SPEAKER_AGENT_PULSE_DIR: pulseDir, XDG_RUNTIME_DIR: path.join(fresh.root, 'xdg') };
    delete env.PULSE_SERVER;
    try {
      const r = await runCli(['run', '--conversation', '--demo-timeout', '60'], env, 110_000);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`using the virtual sound card \\(PulseAudio, unix:${pulseDir}/native\\)`));
      expect(r.stdout).toMatch(/a scripted user will speak into the virtual microphone/);
      expect(r.stdout).toMatch(/function\s+set_device_volume \{"volume_level":40\} -> volume now 40%/);
      expect(r.stdout).toMatch(/demo\s+done: .*mixer reads 40%/);
    } finally {
      execFileSync(path.join(ROOT_DIR, 'scripts/virtual-audio.sh'), ['stop'], { env: { ...process.env, SPEAKER_AGENT_PULSE_DIR: pulseDir } });
      fresh.remove();
    }
  }, 150_000);
});
