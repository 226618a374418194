// The CLI commands that need no server, run as real processes against the virtual sound card: help and
// usage errors, devices, volume (real amixer on the PulseAudio card), test-speaker (recorded from the
// speaker's monitor), test-mic (a tone played into the virtual microphone). Each with and without --json.
// Each test spawns several real processes (~1-3 s each on a loaded machine): hence the longer timeouts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { playIntoSink, startRecording, tone, toneFraction, rms } from '../support/audioCapture.js';
import { deviceDirs, json, runCli, type DeviceDirs } from '../support/cli.js';
import { pactl, VIRTUAL } from '../support/virtualAudio.js';

let dev: DeviceDirs;
beforeAll(() => {
  dev = deviceDirs();
});
afterAll(() => dev.remove());

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

  it('a corrupt config.json exits 3 with the file named, as JSON on stderr with --json', async () => {
    const bad = deviceDirs();
    try {
      const { mkdirSync, writeFileSync } = await import('node:fs');
      mkdirSync(bad.configDir, { recursive: true });
      writeFileSync(`${bad.configDir}/config.json`, '{ not json');
      const r = await runCli(['volume', '--json'], bad.env);
      expect(r.code).toBe(3);
      expect(r.stdout).toBe('');
      const err = JSON.parse(r.stderr.trim().split('\n').pop()!) as { error: { code: string; message: string } };
      expect(err.error.code).toBe('config_invalid');
      expect(err.error.message).toContain('config.json');
    } finally {
      bad.remove();
    }
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
