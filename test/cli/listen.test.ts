// Listening through the CLI against a real daemon (`speaker-agent run` as a process, the real companion server,
// the virtual sound card): `status --follow --json` streams the state, the scripted user's command said while
// idle changes nothing, `listen` + the command sets the real mixer, and `mic off` survives a daemon restart.
// Mode manual (push-to-talk) until the real wake word engine is merged.
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep } from '../support/audioCapture.js';
import { deviceDirs, enrollDevice, json, runCli, spawnCli, startTestCompanion, type DeviceDirs, type TestCompanion } from '../support/cli.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const run = promisify(execFile);
let companion: TestCompanion;
let dev: DeviceDirs;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sa-listen-'));
let command: string;

interface Line {
  state: string;
  previous: string;
  reason: string;
  micOnWire: boolean;
  micMuted: boolean;
  mode: string;
}

beforeAll(async () => {
  companion = await startTestCompanion();
  dev = deviceDirs({ SPEAKER_AGENT_LISTENING_MODE: 'manual', SPEAKER_AGENT_FOLLOW_UP_MS: '3000' });
  await enrollDevice(dev, companion);
  command = path.join(tmp, 'command.wav');
  await run('flite', ['-voice', 'slt', '-t', 'set the volume to forty percent', '-o', command]);
}, 90_000);
afterAll(async () => {
  dev.remove();
  await companion.close();
  rmSync(tmp, { recursive: true, force: true });
});

function startDaemon(): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawnCli(['run'], dev.env);
  return { child, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

async function status(): Promise<{ state: string; listening: Line } | undefined> {
  const r = await runCli(['status', '--json'], dev.env);
  return r.code === 0 ? json(r) : undefined;
}

async function waitStatus(pred: (s: { state: string; listening: Line }) => boolean, what: string): Promise<{ state: string; listening: Line }> {
  for (let i = 0; i < 60; i++) {
    const s = await status();
    if (s && pred(s)) return s;
    await sleep(500);
  }
  throw new Error(`timed out waiting for ${what}: ${JSON.stringify(await status())}`);
}

async function volume(): Promise<number> {
  return json<{ volumePercent: number }>(await runCli(['volume', '--json'], dev.env)).volumePercent;
}

describe('speaker-agent listen / mic / status --follow (real daemon, real companion)', () => {
  it('a command said while idle reaches nobody; after `listen` it sets the mixer; the state stream shows the turn', async () => {
    await runCli(['volume', 'set', '75'], dev.env);
    const d = startDaemon();
    try {
      await waitStatus((s) => s.state === 'connected' && s.listening.state === 'idle', 'the call, idle');
      const lines: Line[] = [];
      const follow = spawnCli(['status', '--follow', '--json'], dev.env);
      let buf = '';
      follow.stdout!.on('data', (c) => {
        buf += c;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          lines.push(JSON.parse(buf.slice(0, nl)) as Line);
          buf = buf.slice(nl + 1);
        }
      });
      for (let i = 0; i < 50 && lines.length === 0; i++) await sleep(100);
      expect(lines[0]).toMatchObject({ state: 'idle', reason: 'current', micOnWire: false, mode: 'manual' });

      // idle: the companion hears nothing (its VAD and recogniser get digital silence): no transcript, no turn
      await run('paplay', ['-d', VIRTUAL.micSink, command], { env: process.env });
      await sleep(3_000);
      expect(await volume()).toBe(75);
      expect(((await status()) as unknown as { lastTranscripts: unknown[] }).lastTranscripts).toEqual([]);
      expect(lines.map((l) => l.state)).toEqual(['idle']);

      const listen = await runCli(['listen', '--json'], dev.env);
      expect(listen.code, listen.stderr).toBe(0);
      expect(json<{ ok: boolean; listening: Line }>(listen)).toMatchObject({ ok: true, listening: { state: 'listening', micOnWire: true } });
      await run('paplay', ['-d', VIRTUAL.micSink, command], { env: process.env });
      for (let i = 0; i < 60 && (await volume()) !== 40; i++) await sleep(250);
      expect(await volume()).toBe(40);
      for (let i = 0; i < 80 && !lines.some((l) => l.reason === 'follow_up'); i++) await sleep(250);
      const states = lines.map((l) => l.state);
      expect(states.slice(0, 2)).toEqual(['idle', 'listening']);
      expect(states).toEqual(expect.arrayContaining(['thinking', 'speaking']));
      expect(lines.some((l) => l.reason === 'follow_up' && l.micOnWire)).toBe(true);
      for (let i = 0; i < 40 && lines.at(-1)?.state !== 'idle'; i++) await sleep(250);
      expect(lines.at(-1)).toMatchObject({ state: 'idle', reason: 'follow_up_expired', micOnWire: false });

      // the human form: one line per change
      const human = await runCli(['status'], dev.env);
      expect(human.stdout).toMatch(/^listening:\s+idle\s+mode manual/m);
      // PortAudio's xrun count (portAudioBackend.test.ts makes real ones), read from the real daemon
      expect(human.stdout).toMatch(/^xruns:\s+\d+ speaker underruns, \d+ microphone overruns since start$/m);
      expect(json<{ xruns: unknown }>(await runCli(['status', '--json'], dev.env)).xruns).toEqual({ underruns: expect.any(Number), overruns: expect.any(Number) });
      const followHuman = spawnCli(['status', '--follow'], dev.env);
      let text = '';
      followHuman.stdout!.on('data', (c) => (text += c));
      for (let i = 0; i < 50 && !text.includes('\n'); i++) await sleep(100);
      expect(text).toMatch(/^\d\d:\d\d:\d\d\.\d{3} idle\s+mic-off\s+current\n/);

      // `listen stop` closes listening at once
      expect((await runCli(['listen'], dev.env)).stdout).toMatch(/^listening$/m);
      const stopped = await runCli(['listen', 'stop'], dev.env);
      expect(stopped.stdout).toMatch(/listening closed \(idle\)/);
      for (let i = 0; i < 20 && lines.at(-1)?.reason !== 'stop'; i++) await sleep(100);
      expect(lines.at(-1)).toMatchObject({ state: 'idle', reason: 'stop', micOnWire: false });
      expect(text).toMatch(/listening\s+mic-on-wire\s+manual\n.*idle\s+mic-off\s+stop\n/s);
      followHuman.kill('SIGINT');
      follow.kill('SIGINT');
    } finally {
      d.child.kill('SIGTERM');
      expect(await d.exited).toBe(0);
    }
  }, 120_000);

  it('`mic off` closes the microphone and survives a restart; `mic on` opens it; without a daemon the file is set', async () => {
    let d = startDaemon();
    try {
      await waitStatus((s) => s.state === 'connected', 'the call');
      const off = await runCli(['mic', 'off', '--json'], dev.env);
      expect(json(off)).toMatchObject({ micMuted: true, running: true, state: 'muted' });
      const st = await status();
      expect(st!.listening).toMatchObject({ state: 'muted', micMuted: true, micOnWire: false });
      expect((st as unknown as { audioDevices: { microphone: string } }).audioDevices.microphone).toBe('closed');
      const refused = await runCli(['listen'], dev.env);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(/the microphone is muted/);
      d.child.kill('SIGTERM');
      expect(await d.exited).toBe(0);

      d = startDaemon();
      const again = await waitStatus((s) => s.state === 'connected', 'the call after the restart');
      expect(again.listening).toMatchObject({ state: 'muted', micMuted: true });
      expect((again as unknown as { audioDevices: { microphone: string } }).audioDevices.microphone).toBe('closed');
      expect((await runCli(['status'], dev.env)).stdout).toMatch(/^listening:\s+muted \(microphone MUTED/m);

      expect(json(await runCli(['mic', 'on', '--json'], dev.env))).toMatchObject({ micMuted: false, running: true, state: 'idle' });
      await waitStatus((s) => (s as unknown as { audioDevices: { microphone: string } }).audioDevices.microphone === 'open', 'the microphone to reopen');
    } finally {
      d.child.kill('SIGTERM');
      await d.exited;
    }
    // no daemon: the file is written; the next start is muted
    const offline = await runCli(['mic', 'off', '--json'], dev.env);
    expect(json(offline)).toMatchObject({ micMuted: true, running: false });
    const file = path.join(dev.stateDir, 'mic.json');
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ muted: true });
    expect(json(await runCli(['mic', '--json'], dev.env))).toMatchObject({ micMuted: true, running: false });
    expect((await runCli(['mic', 'sideways'], dev.env)).code).toBe(2);
    expect((await runCli(['listen'], dev.env)).code).toBe(5); // no daemon
  }, 120_000);
});

describe('the wake word (real engine) in one breath with the command', () => {
  it('"hey jarvis, set the volume to forty percent" said at once sets the mixer; the command alone does not', async () => {
    const wakeDev = deviceDirs({ SPEAKER_AGENT_FOLLOW_UP_MS: '0' }); // mode wake: the default
    try {
      await enrollDevice(wakeDev, companion);
      const oneBreath = path.join(tmp, 'one-breath.wav');
      await run('flite', ['-voice', 'slt', '-t', 'hey jarvis, set the volume to forty percent', '-o', oneBreath]);
      await runCli(['volume', 'set', '75'], wakeDev.env);
      const d = spawnCli(['run'], { ...wakeDev.env, SPEAKER_AGENT_LOG_LEVEL: 'debug' });
      const exited = new Promise((r) => d.on('exit', r));
      let log = '';
      d.stdout!.on('data', (c) => (log += c));
      try {
        let st: { state: string; listening: Line & { wakeWord: { engine: string } } } | undefined;
        for (let i = 0; i < 60; i++) {
          const r = await runCli(['status', '--json'], wakeDev.env);
          st = r.code === 0 ? json(r) : undefined;
          if (st?.state === 'connected' && st.listening.wakeWord.engine !== 'loading') break;
          await sleep(500);
        }
        expect(st?.listening).toMatchObject({ mode: 'wake', state: 'idle', wakeWord: { engine: 'ready' } });
        await run('paplay', ['-d', VIRTUAL.micSink, command], { env: process.env }); // no wake word: nothing
        await sleep(2_500);
        expect(await volumeOf(wakeDev.env)).toBe(75);
        await run('paplay', ['-d', VIRTUAL.micSink, oneBreath], { env: process.env });
        for (let i = 0; i < 60 && (await volumeOf(wakeDev.env)) !== 40; i++) await sleep(250);
        const said = json<{ lastTranscripts: { role: string; text: string }[] }>(await runCli(['status', '--json'], wakeDev.env)).lastTranscripts;
        const msgs = log.split('\n').filter((l) => /wake|listening|earcon/.test(l)).map((l) => l.replace(/^.*"name":"speaker-agent",/, ''));
        expect(await volumeOf(wakeDev.env), JSON.stringify({ said, msgs })).toBe(40);
      } finally {
        d.kill('SIGTERM');
        await exited;
      }
    } finally {
      wakeDev.remove();
    }
  }, 120_000);
});

async function volumeOf(env: NodeJS.ProcessEnv): Promise<number> {
  return json<{ volumePercent: number }>(await runCli(['volume', '--json'], env)).volumePercent;
}
