// The CLI commands that need no server, run as real processes against the virtual sound card: help and
// usage errors, devices, volume (real amixer on the PulseAudio card), test-speaker (recorded from the
// speaker's monitor), test-mic (a tone played into the virtual microphone). Each with and without --json.
// Each test spawns several real processes (~1-3 s each on a loaded machine): hence the longer timeouts.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { playIntoSink, startRecording, tone, toneFraction, rms } from '../support/audioCapture.js';
import { deviceDirs, json, runCli, type DeviceDirs } from '../support/cli.js';
import { pactl, VIRTUAL } from '../support/virtualAudio.js';

let dev: DeviceDirs;
beforeAll(() => {
  dev = deviceDirs();
});
afterAll(() => dev.remove());

/** Runs `fn` with a fresh device whose config.json holds `text`, removed afterwards. */
async function withConfigFile(text: string, fn: (d: DeviceDirs) => Promise<void>): Promise<void> {
  const d = deviceDirs();
  try {
    mkdirSync(d.configDir, { recursive: true });
    writeFileSync(path.join(d.configDir, 'config.json'), text);
    await fn(d);
  } finally {
    d.remove();
  }
}

describe('speaker-agent: help, usage and exit codes', () => {
  it('--help lists every command and the exit codes', async () => {
    const r = await runCli(['--help'], dev.env);
    expect(r.code).toBe(0);
    for (const c of ['run', 'enroll', 'status', 'doctor', 'devices', 'volume', 'test-speaker', 'test-mic', 'say', 'voices', 'stories', 'companion']) {
      expect(r.stdout).toMatch(new RegExp(`^  ${c}\\b`, 'm'));
    }
    expect(r.stdout).toContain('4  authentication');
  }, 120_000);

  it('every command has --help with examples and the exit codes', async () => {
    for (const c of ['run', 'enroll', 'status', 'doctor', 'devices', 'volume', 'test-speaker', 'test-mic', 'say', 'voices', 'stories', 'companion']) {
      const r = await runCli([c, '--help'], dev.env);
      expect(r.code, c).toBe(0);
      expect(r.stdout, c).toContain('Examples:');
      expect(r.stdout, c).toContain('6  audio');
    }
  }, 120_000);

  it('an unknown command or option exits 2', async () => {
    expect((await runCli(['no-such-command'], dev.env)).code).toBe(2);
    expect((await runCli(['volume', '--no-such-option'], dev.env)).code).toBe(2);
  }, 120_000);

  it('regression: number and choice options took any text (`run --demo-timeout abc`: a 1 ms timer, a failed demo); now exit 2', async () => {
    for (const [args, expected] of [
      [['run', '--demo-timeout', 'abc'], /'--demo-timeout <s>' argument 'abc' is invalid\. expected a number from 1 to 3600/],
      [['run', '--demo-timeout', '-5'], /expected a number from 1 to 3600/],
      [['run', '--virtual-audio', 'bogus'], /Allowed choices are auto, always, never/],
      [['say', '--speed', 'fast', 'hello'], /'--speed <n>' argument 'fast' is invalid\. expected a number above 0/],
      [['companion', 'serve', '--port', '70000'], /expected a whole number from 0 to 65535/],
    ] as const) {
      const r = await runCli([...args], dev.env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(expected);
    }
  }, 120_000);

  it('regression: `status [--follow] --socket` at some other server crashed (an uncaught TypeError); now it says what the socket is not', async () => {
    const socketPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'other-')), 'other.sock');
    const other = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}\n');
    });
    await new Promise<void>((r) => other.listen(socketPath, r));
    try {
      for (const args of [['status', '--socket', socketPath], ['status', '--follow', '--socket', socketPath]]) {
        const r = await runCli(args, dev.env);
        expect(r.code, args.join(' ')).toBe(1);
        expect(r.stderr, args.join(' ')).toBe(`speaker-agent: ${socketPath} is not a speaker-agent status socket: ${args[1] === '--follow' ? 'GET /events sent a line that is not a listening event' : "GET /status answered JSON that is not an agent's status"}\n`);
      }
    } finally {
      other.close();
    }
  }, 120_000);

  it('doctor names settings of config.json the agent does not know (a misspelt key vanished before), as a warning', async () => {
    await withConfigFile(JSON.stringify({ server: { url: 'http://127.0.0.1:9', workspaceKey: 'k', appsource: 'x' }, colour: 'red' }), async (typo) => {
      const r = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], typo.env, 60_000);
      const config = json<{ checks: { name: string; status: string; detail: string }[] }>(r).checks.find((c) => c.name === 'config');
      expect(config).toMatchObject({ status: 'warn', detail: expect.stringMatching(/settings it does not know, ignored: server\.appsource, colour$/) });
    });
    // the README's own example: the key misspelt, so none is set, and the failure names why
    await withConfigFile(JSON.stringify({ server: { url: 'http://127.0.0.1:9', workspacekey: 'k' } }), async (typo) => {
      const r = await runCli(['doctor', '--json', '--skip-call', '--skip-echo'], typo.env, 60_000);
      const config = json<{ checks: { name: string; status: string; detail: string }[] }>(r).checks.find((c) => c.name === 'config');
      expect(config).toMatchObject({ status: 'fail', detail: expect.stringMatching(/no workspace key .*; settings it does not know, ignored: server\.workspacekey$/) });
    });
  }, 120_000);

  it('a corrupt config.json exits 3 with the file named, as JSON on stderr with --json', async () => {
    await withConfigFile('{ not json', async (bad) => {
      const r = await runCli(['volume', '--json'], bad.env);
      expect(r.code).toBe(3);
      expect(r.stdout).toBe('');
      const err = JSON.parse(r.stderr.trim().split('\n').pop()!) as { error: { code: string; message: string } };
      expect(err.error.code).toBe('config_invalid');
      expect(err.error.message).toContain('config.json');
    });
  }, 120_000);
});

describe('speaker-agent devices', () => {
  it('lists the virtual card and the configured picks', async () => {
    const r = await runCli(['devices'], dev.env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/pulse/);
    expect(r.stdout).toMatch(/configured capture:\s+default -> default/);
    const j = json<{ devices: { name: string; maxInputChannels: number }[]; configured: { capture: { resolved: { label: string } } } }>(
      await runCli(['devices', '--json'], dev.env),
    );
    expect(j.devices.some((d) => d.name === 'pulse' && d.maxInputChannels > 0)).toBe(true);
    expect(j.configured.capture.resolved.label).toBe('default');
  }, 120_000);

  it('a configured device that does not exist is shown as not found', async () => {
    const r = await runCli(['devices', '--json'], { ...dev.env, SPEAKER_AGENT_PLAYBACK_DEVICE: 'no-such-card' });
    const j = json<{ configured: { playback: { resolved: { error?: string } } } }>(r);
    expect(j.configured.playback.resolved.error).toMatch(/no output audio device matches "no-such-card"/);
  }, 120_000);
});

describe('speaker-agent volume', () => {
  it('set, get, up, down, mute, unmute through the real mixer', async () => {
    const set = json<{ volumePercent: number; muted: boolean; mixer: string }>(await runCli(['volume', 'set', '40', '--json'], dev.env));
    expect(set.volumePercent).toBe(40);
    expect(set.mixer).toContain(VIRTUAL.mixerControl);
    expect(json<{ volumePercent: number }>(await runCli(['volume', 'up', '--json'], dev.env)).volumePercent).toBe(50);
    expect(json<{ volumePercent: number }>(await runCli(['volume', 'down', '--json'], dev.env)).volumePercent).toBe(40);
    expect(json<{ muted: boolean }>(await runCli(['volume', 'mute', '--json'], dev.env)).muted).toBe(true);
    const get = await runCli(['volume'], dev.env);
    expect(get.stdout).toMatch(/^volume 40% \(muted\)/);
    expect(json<{ muted: boolean }>(await runCli(['volume', 'unmute', '--json'], dev.env)).muted).toBe(false);
    // the level really is in the mixer: amixer (another client) reads it back
    const { execFileSync } = await import('node:child_process');
    expect(execFileSync('amixer', ['-M', 'sget', VIRTUAL.mixerControl], { env: dev.env, encoding: 'utf8' })).toMatch(/\[40%\]/);
  }, 120_000);

  it('bad levels and actions exit 2; a missing mixer control exits 6 with a clear message', async () => {
    const r = await runCli(['volume', 'set', '140'], dev.env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/0 to 100/);
    expect((await runCli(['volume', 'loud'], dev.env)).code).toBe(2);
    const m = await runCli(['volume', 'get'], { ...dev.env, SPEAKER_AGENT_MIXER_CONTROL: 'NoSuchControl' });
    expect(m.code).toBe(6);
    expect(m.stderr).toMatch(/NoSuchControl/);
  }, 120_000);
});

describe('speaker-agent test-speaker and test-mic', () => {
  // what the monitor records is after the sink volume, which other tests change
  beforeAll(async () => {
    await pactl('set-sink-mute', VIRTUAL.speakerSink, '0');
    await pactl('set-sink-volume', VIRTUAL.speakerSink, '100%');
  });
  it('test-speaker plays the tone on the speaker (recorded from its monitor)', async () => {
    const rec = startRecording(VIRTUAL.speakerMonitor);
    const r = await runCli(['test-speaker', '--freq', '660', '--seconds', '1', '--json'], dev.env);
    const samples = await rec.stop();
    expect(r.code, r.stderr).toBe(0);
    expect(json<{ kind: string; playedMs: number }>(r)).toMatchObject({ kind: 'tone', playedMs: 1000 });
    expect(rms(samples)).toBeGreaterThan(1000);
    expect(toneFraction(samples, 660)).toBeGreaterThan(0.5);
  }, 120_000);

  it('test-speaker --phrase speaks (human output)', async () => {
    const rec = startRecording(VIRTUAL.speakerMonitor);
    const r = await runCli(['test-speaker', '--phrase', 'testing'], dev.env);
    const samples = await rec.stop();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^played "testing" on default/);
    expect(rms(samples)).toBeGreaterThan(300);
  }, 120_000);

  it('test-mic hears a tone played into the microphone, and reports silence as no signal', async () => {
    // Plays for longer than the CLI can take to start and listen on a loaded machine; stopped once it is done.
    const t = playIntoSink(tone(440, 15_000, 8000), VIRTUAL.micSink);
    const r = await runCli(['test-mic', '--seconds', '1.5', '--json'], dev.env);
    await t.stop();
    expect(r.code, r.stderr).toBe(0);
    const j = json<{ frames: number; rmsDbfs: number; heardSignal: boolean }>(r);
    expect(j.heardSignal).toBe(true);
    expect(j.frames).toBeGreaterThan(30);
    expect(j.rmsDbfs).toBeGreaterThan(-30);

    const quiet = await runCli(['test-mic', '--seconds', '1'], dev.env);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toMatch(/no signal above -60 dBFS/);
  }, 120_000);
});
