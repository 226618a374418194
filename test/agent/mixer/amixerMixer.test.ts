// The amixer mixer against real amixer on the virtual card (control Master, via the PulseAudio ALSA plugin),
// and its parser against the output shapes of a Pi (PCM, mono, dB) and a USB card (Speaker, no switch).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmixerMixer, chooseControl, parseScontents } from '../../../src/agent/mixer/amixerMixer.js';
import { MixerError } from '../../../src/agent/mixer/mixer.js';
import { VIRTUAL } from '../../support/virtualAudio.js';

const fixture = (name: string) => readFileSync(path.join(import.meta.dirname, '../../fixtures/amixer', name), 'utf8');

async function expectMixerError(p: Promise<unknown>, code: MixerError['code'], message?: RegExp): Promise<MixerError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MixerError);
  expect((err as MixerError).code).toBe(code);
  if (message) expect((err as MixerError).message).toMatch(message);
  return err as MixerError;
}

describe('AmixerMixer on the virtual card', () => {
  let restore: number;
  beforeAll(async () => {
    restore = (await new AmixerMixer({ control: VIRTUAL.mixerControl }).get()).volumePercent;
  });
  afterAll(async () => {
    const m = new AmixerMixer({ control: VIRTUAL.mixerControl });
    await m.setMuted(false);
    await m.setVolume(restore);
  });

  it('sets 40 % and reads back 40 %, and other levels too', async () => {
    const m = new AmixerMixer({ control: 'Master' });
    expect(await m.setVolume(40)).toEqual({ volumePercent: 40, muted: false });
    expect((await m.get()).volumePercent).toBe(40);
    expect((await m.setVolume(73)).volumePercent).toBe(73);
    expect((await m.setVolume(0)).volumePercent).toBe(0);
    expect((await m.setVolume(100)).volumePercent).toBe(100);
  });

  it('clamps to 0..100 and rejects non-numbers', async () => {
    const m = new AmixerMixer({ control: 'Master' });
    expect((await m.setVolume(140)).volumePercent).toBe(100);
    expect((await m.setVolume(-5)).volumePercent).toBe(0);
    await expectMixerError(m.setVolume(Number.NaN), 'mixer_failed', /between 0 and 100/);
  });

  it('mutes and unmutes with the switch, keeping the level', async () => {
    const m = new AmixerMixer({ control: 'Master' });
    await m.setVolume(55);
    expect(await m.setMuted(true)).toEqual({ volumePercent: 55, muted: true });
    expect((await m.get()).muted).toBe(true);
    expect(await m.setMuted(false)).toEqual({ volumePercent: 55, muted: false });
  });

  it('serializes concurrent calls: the last set wins and every result is a level that was set', async () => {
    const m = new AmixerMixer({ control: 'Master' });
    const results = await Promise.all([m.setVolume(10), m.setVolume(20), m.setVolume(30)]);
    expect(results.map((r) => r.volumePercent)).toEqual([10, 20, 30]);
    expect((await m.get()).volumePercent).toBe(30);
  });

  it('chooses Master automatically and describes itself', async () => {
    const m = new AmixerMixer();
    expect(m.description).toBe('card default, control (automatic)');
    await m.setVolume(45);
    expect(m.description).toBe('card default, control Master');
    expect((await new AmixerMixer({ control: 'Master' }).get()).volumePercent).toBe(45);
  });

  it('an unknown control gives control_not_found listing the available controls', async () => {
    const m = new AmixerMixer({ control: 'Speaker' });
    await expectMixerError(m.get(), 'control_not_found', /"Speaker" not found.*available|"Speaker" not found.*playback volume: Master/);
    await expectMixerError(m.setVolume(40), 'control_not_found', /Master/);
  });

  it('an unknown card gives mixer_not_found', async () => {
    await expectMixerError(new AmixerMixer({ card: 7, control: 'PCM' }).get(), 'mixer_not_found', /card 7/);
    await expectMixerError(new AmixerMixer({ card: 'NoSuchCard' }).get(), 'mixer_not_found');
    expect(() => new AmixerMixer({ card: -1 })).toThrow(MixerError);
  });

  it('a missing amixer binary gives mixer_failed naming alsa-utils', async () => {
    await expectMixerError(new AmixerMixer({ amixerPath: '/nonexistent/amixer', control: 'Master' }).get(), 'mixer_failed', /alsa-utils/);
  });
});

describe("AmixerMixer when ALSA's default is a sound server this user cannot reach (the Pi OS desktop image's pipewire-alsa, seen by a system service)", () => {
  // alsa-lib's configuration as a board with pipewire-alsa has it: `default` a sound server's plugin whose server
  // runs in another user's session (PulseAudio's plugin at a socket nobody listens on: PipeWire's own plugin is
  // not installed here), `sysdefault`, the first card's own device, the virtual card. A file of its own, not
  // alsa.conf with additions: alsa.conf's hooks (/etc/alsa/conf.d, ~/.asoundrc) would override `default` after it.
  let dir: string;
  const saved = { ALSA_CONFIG_PATH: process.env.ALSA_CONFIG_PATH, PULSE_SERVER: process.env.PULSE_SERVER };
  const card = saved.PULSE_SERVER!; // the virtual card's server (PULSE_SERVER would override a plugin's own server)
  const writeConfig = (servers: { default: string; sysdefault: string }) => {
    const file = path.join(dir, `alsa-${Math.random().toString(36).slice(2)}.conf`);
    writeFileSync(
      file,
      Object.entries(servers)
        .flatMap(([name, server]) => [`pcm.${name} { type pulse server "${server}" }`, `ctl.${name} { type pulse server "${server}" }`])
        .join('\n') + '\n',
    );
    return file;
  };
  const nobody = () => `unix:${path.join(dir, 'nobody-listens', 'native')}`;
  const level = (device: string) =>
    parseScontents(execFileSync('amixer', ['-D', device, '-M', 'sget', VIRTUAL.mixerControl], { env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' }))[0].channels.map((c) => c.percent);
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'alsa-conf-'));
    delete process.env.PULSE_SERVER;
  });
  afterAll(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('regression: every volume call failed ("Connection refused"); now the first card\'s own mixer (sysdefault) is used', async () => {
    process.env.ALSA_CONFIG_PATH = writeConfig({ default: nobody(), sysdefault: card });
    expect(() => execFileSync('amixer', ['-D', 'default', 'sget', VIRTUAL.mixerControl], { env: process.env, stdio: 'pipe' })).toThrow(); // as on the board
    const m = new AmixerMixer({ control: VIRTUAL.mixerControl });
    expect(await m.setVolume(37)).toEqual({ volumePercent: 37, muted: false });
    expect((await m.get()).volumePercent).toBe(37);
    expect(m.description).toMatch(/^card sysdefault \(ALSA's default sound server does not answer this user\)/);
    expect(level('sysdefault')).toEqual([37, 37]); // the card's own level
    expect(await m.setVolume(64)).toEqual({ volumePercent: 64, muted: false });
  });

  it("PipeWire's failure (no server socket: amixer's \"Host is down\") is one too; when the server answers again the volume is its again, not card 0's for the rest of the run", async () => {
    // FakePipeWireDown: PipeWire's ALSA plugin is not installed here, so `-D default` answers with what amixer prints
    // there when the plugin finds no server (EHOSTDOWN); every other call is the real amixer
    const fake = path.join(dir, 'amixer-pipewire-down');
    const up = path.join(dir, 'server-up');
    writeFileSync(fake, `#!/bin/sh\nif [ "$1" = "-D" ] && [ "$2" = "default" ] && [ ! -e ${up} ]; then\n  echo "amixer: Mixer attach default error: Host is down" >&2; exit 1\nfi\nexec amixer "$@"\n`);
    chmodSync(fake, 0o755);
    // behind both names the virtual card: which one the mixer reached is told by its description
    process.env.ALSA_CONFIG_PATH = writeConfig({ default: card, sysdefault: card });
    const m = new AmixerMixer({ control: VIRTUAL.mixerControl, amixerPath: fake });
    expect(await m.setVolume(41)).toEqual({ volumePercent: 41, muted: false });
    expect(m.description).toMatch(/^card sysdefault/);
    writeFileSync(up, ''); // the desktop's server is up again (or this speaker's own, late at boot)
    expect(await m.setVolume(58)).toEqual({ volumePercent: 58, muted: false });
    expect(m.description).toMatch(/^card default, control/);
  });

  it('with no card behind sysdefault either, the error names both: the sound server that does not answer and the card', async () => {
    process.env.ALSA_CONFIG_PATH = writeConfig({ default: nobody(), sysdefault: `unix:${path.join(dir, 'no-card-either', 'native')}` });
    const m = new AmixerMixer({ control: VIRTUAL.mixerControl });
    const err = await expectMixerError(m.get(), 'mixer_not_found', /ALSA's default control is a sound server's that does not answer this user \(.*Connection refused\).*sysdefault\) failed too: .*Connection refused/);
    expect(err.message).not.toMatch(/\n/);
    expect(m.description).toMatch(/^card default,/); // nothing reached: named as configured
  });
});

describe('AmixerMixer on a USB card without a mute switch (FakeAmixerUsb, see test/support/fakeAmixerUsb.mjs)', () => {
  const fake = path.join(import.meta.dirname, '../../support/fakeAmixerUsb.mjs');
  const state = path.join(mkdtempSync(path.join(tmpdir(), 'fake-amixer-')), 'level');
  beforeAll(() => {
    process.env.FAKE_AMIXER_STATE = state;
  });
  afterAll(() => {
    delete process.env.FAKE_AMIXER_STATE;
  });

  it('picks Speaker automatically, reports the level the coarse steps allow, and emulates mute with volume 0', async () => {
    const m = new AmixerMixer({ card: 1, amixerPath: fake });
    // 60 % is between steps 22 and 23 of 37: the level in force, read back, is 59 %.
    expect(await m.setVolume(60)).toEqual({ volumePercent: 59, muted: false });
    expect(m.description).toBe('card 1, control Speaker');
    expect(await m.setMuted(true)).toEqual({ volumePercent: 0, muted: true });
    expect(readFileSync(state, 'utf8')).toBe('0');
    expect(await m.setMuted(false)).toEqual({ volumePercent: 59, muted: false });
    // A level set while muted ends the emulated mute.
    await m.setMuted(true);
    expect(await m.setVolume(30)).toEqual({ volumePercent: 30, muted: false });
    expect(await m.setMuted(false)).toEqual({ volumePercent: 30, muted: false });
  });

  it('names the available controls when the configured one is missing', async () => {
    const m = new AmixerMixer({ card: 1, control: 'PCM', amixerPath: fake });
    await expectMixerError(m.setVolume(40), 'control_not_found', /"PCM" not found on card 1; controls with a playback volume: Speaker$/);
  });
});

describe('AmixerMixer when another card takes the place of mixer.card', () => {
  // Fake amixer: card 1 is the virtual card (real amixer, control Master) until the file "swapped" exists, then a
  // USB speaker (FakeAmixerUsb: control Speaker only). What cannot exist here is the swap itself (another USB
  // speaker plugged in while the agent runs, taking the card's index or name).
  const dir = mkdtempSync(path.join(tmpdir(), 'swapping-amixer-'));
  const amixerPath = path.join(dir, 'amixer');
  writeFileSync(
    amixerPath,
    `#!/bin/sh
if [ -e '${dir}/swapped' ]; then FAKE_AMIXER_STATE='${dir}/level' exec '${path.join(import.meta.dirname, '../../support/fakeAmixerUsb.mjs')}' "$@"; fi
shift 2 # "-c 1": the virtual card is ALSA's default
exec amixer -D default "$@"
`,
  );
  chmodSync(amixerPath, 0o755);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Regression: the automatic choice was kept for the whole run, so after the swap every volume call failed
  // ("Master" not found) until the agent restarted.
  it('chooses the control again after control_not_found: the volume works on the new card', async () => {
    const m = new AmixerMixer({ card: 1, amixerPath });
    await m.get();
    expect(m.description).toBe('card 1, control Master');
    writeFileSync(path.join(dir, 'swapped'), '');
    await expectMixerError(m.setVolume(60), 'control_not_found', /"Master" not found/); // the call that finds out
    expect(await m.setVolume(60)).toEqual({ volumePercent: 59, muted: false });
    expect(m.description).toBe('card 1, control Speaker');
  });

  it('a configured control is not replaced: it keeps failing, naming the controls there are', async () => {
    writeFileSync(path.join(dir, 'swapped'), '');
    const m = new AmixerMixer({ card: 1, control: 'Master', amixerPath });
    for (let i = 0; i < 2; i++) {
      await expectMixerError(m.setVolume(60), 'control_not_found', /"Master" not found on card 1; controls with a playback volume: Speaker$/);
    }
    expect(m.description).toBe('card 1, control Master');
  });
});

describe('AmixerMixer when amixer does not answer (FakeAmixerStuck: a card wedged in its driver cannot exist here)', () => {
  // Until the file "unstuck" exists, amixer ignores SIGTERM and sleeps (exec: the ignored signal stays ignored);
  // then it is the real amixer on the virtual card. Not tested: a process stuck in a driver, which not even
  // SIGKILL ends (the mixer's own timer and its refusal to start more while one is stuck).
  const dir = mkdtempSync(path.join(tmpdir(), 'stuck-amixer-'));
  const amixerPath = path.join(dir, 'amixer');
  const unstuck = path.join(dir, 'unstuck');
  writeFileSync(amixerPath, `#!/bin/sh\nif [ -e ${unstuck} ]; then exec amixer "$@"; fi\ntrap '' TERM\nexec sleep 30\n`);
  chmodSync(amixerPath, 0o755);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('regression: an amixer that ignored the timeout\'s SIGTERM held the call and every volume command queued behind it; now it is killed at its timeout and the next one works', async () => {
    const m = new AmixerMixer({ control: VIRTUAL.mixerControl, amixerPath, timeoutMs: 300 });
    const t0 = Date.now();
    const first = m.get();
    const queued = m.setVolume(45);
    // killed by the timeout itself (execFile's error), not let go by the mixer's later timer
    await expectMixerError(first, 'mixer_failed', /^amixer did not answer within 300 ms/);
    await expectMixerError(queued, 'mixer_failed', /^amixer did not answer within 300 ms/);
    expect(Date.now() - t0).toBeLessThan(5000);
    writeFileSync(unstuck, '');
    expect(await m.setVolume(46)).toEqual({ volumePercent: 46, muted: false });
  });
});

describe('amixer output parser', () => {
  it('parses a Pi PCM control: mono, dB, switch', () => {
    const [pcm] = parseScontents(fixture('pi-headphones-pcm.txt'));
    expect(pcm).toMatchObject({ name: 'PCM', index: 0, hasPlaybackVolume: true, hasPlaybackSwitch: true });
    expect(pcm.channels).toEqual([{ name: 'Mono', percent: 77, db: -20, on: true }]);
  });

  it('parses a USB Speaker control without a switch, stereo with different levels', () => {
    const [spk] = parseScontents(fixture('usb-speaker-noswitch.txt'));
    expect(spk).toMatchObject({ name: 'Speaker', hasPlaybackVolume: true, hasPlaybackSwitch: false });
    expect(spk.channels).toEqual([
      { name: 'Front Left', percent: 81, db: -7, on: undefined },
      { name: 'Front Right', percent: 76, db: -9, on: undefined },
    ]);
  });

  it('parses the virtual card (stereo Master, no dB) and ignores capture lines', () => {
    const controls = parseScontents(
      "Simple mixer control 'Master',0\n  Capabilities: pvolume pswitch pswitch-joined\n  Playback channels: Front Left - Front Right\n  Limits: Playback 0 - 65536\n  Mono:\n  Front Left: Playback 26214 [40%] [on]\n  Front Right: Playback 26214 [40%] [on]\nSimple mixer control 'Capture',0\n  Capabilities: cvolume cswitch cswitch-joined\n  Capture channels: Front Left - Front Right\n  Limits: Capture 0 - 65536\n  Front Left: Capture 65536 [100%] [on]\n  Front Right: Capture 65536 [100%] [on]\n",
    );
    expect(controls.map((c) => [c.name, c.hasPlaybackVolume, c.channels.length])).toEqual([
      ['Master', true, 2],
      ['Capture', false, 0],
    ]);
    expect(controls[0].channels.every((c) => c.percent === 40 && c.on === true)).toBe(true);
  });

  it('chooses PCM on a Pi and Speaker on a USB card (skipping switch-only and capture controls)', () => {
    expect(chooseControl(parseScontents(fixture('pi-headphones-scontents.txt')))).toBe('PCM');
    expect(chooseControl(parseScontents(fixture('usb-scontents.txt')))).toBe('Speaker');
    const odd = parseScontents("Simple mixer control 'Line Out',0\n  Capabilities: pvolume\n  Playback channels: Mono\n  Mono: Playback 3 [10%]\n");
    expect(chooseControl(odd)).toBe('Line Out');
    expect(chooseControl(parseScontents(''))).toBeUndefined();
  });
});
