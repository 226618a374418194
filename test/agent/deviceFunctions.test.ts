// The client-side functions against the REAL mixer (amixer, control Master on the virtual sound card).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeEach, describe, expect, it } from 'vitest';
import { runDeviceFunction } from '../../src/agent/deviceFunctions.js';
import { AmixerMixer } from '../../src/agent/mixer/amixerMixer.js';
import { VIRTUAL } from '../support/virtualAudio.js';

const run = promisify(execFile);
const mixer = new AmixerMixer({ card: 'default', control: VIRTUAL.mixerControl });

async function amixer(): Promise<{ percent: number; on: boolean }> {
  const { stdout } = await run('amixer', ['-D', 'default', 'sget', VIRTUAL.mixerControl], { env: process.env });
  return { percent: Number(/\[(\d+)%\]/.exec(stdout)![1]), on: /\[on\]/.test(stdout) };
}

beforeEach(async () => {
  await mixer.setMuted(false);
  await mixer.setVolume(50);
});

describe('runDeviceFunction', () => {
  it('set_device_volume sets the level and reports what the mixer reads back', async () => {
    expect(await runDeviceFunction(mixer, 'set_device_volume', '{"volume_level": 73}')).toEqual({
      success: true,
      result: { volume_level: 73, muted: false, message: 'Volume is now 73%.' },
    });
    expect(await amixer()).toEqual({ percent: 73, on: true });
    // fractional levels are rounded to what a mixer can hold
    expect((await runDeviceFunction(mixer, 'set_device_volume', '{"volume_level": 40.4}')).success).toBe(true);
    expect((await amixer()).percent).toBe(40);
  });

  it('adjust_device_volume: +10 / -10, clamped; from muted, "increase" starts at 0 and unmutes', async () => {
    const up = await runDeviceFunction(mixer, 'adjust_device_volume', '{"action":"increase"}');
    expect(up.success && up.result.volume_level).toBe(60);
    const down = await runDeviceFunction(mixer, 'adjust_device_volume', '{"action":"decrease"}');
    expect(down.success && down.result.volume_level).toBe(50);
    await runDeviceFunction(mixer, 'quiet_device', '{}');
    const fromMuted = await runDeviceFunction(mixer, 'adjust_device_volume', '{"action":"increase"}');
    expect(fromMuted).toMatchObject({ success: true, result: { volume_level: 10, muted: false } });
    expect(await amixer()).toEqual({ percent: 10, on: true });
  });

  it('quiet_device: 0 % and muted, with or without arguments', async () => {
    for (const args of ['{}', '', undefined]) {
      await mixer.setMuted(false);
      await mixer.setVolume(50);
      const r = await runDeviceFunction(mixer, 'quiet_device', args);
      expect(r).toEqual({ success: true, result: { volume_level: 0, muted: true, message: 'Device muted (volume 0%).' } });
      expect(await amixer()).toEqual({ percent: 0, on: false });
    }
  });

  it.each([
    ['set_device_volume', '{"volume_level": 150}', /out of range/],
    ['set_device_volume', '{"volume_level": -5}', /out of range/],
    ['set_device_volume', '{"volume_level": "loud"}', /invalid "volume_level"/],
    ['set_device_volume', '{"volume_level": null}', /invalid "volume_level"/],
    ['adjust_device_volume', '{}', /missing "action"/],
    ['adjust_device_volume', '{"action": 1}', /invalid "action"/],
    ['quiet_device', '[]', /JSON object/],
    ['quiet_device', '{oops', /not valid JSON/],
    ['stop_audio', '{}', /unknown device function/],
  ])('%s %s -> success:false, mixer untouched', async (name, args, why) => {
    const r = await runDeviceFunction(mixer, name, args);
    expect(r.success).toBe(false);
    expect(!r.success && r.error).toMatch(why);
    expect(await amixer()).toEqual({ percent: 50, on: true });
  });

  it('a mixer that fails gives success:false with the reason, not a crash', async () => {
    const broken = new AmixerMixer({ card: 'default', control: 'NoSuchControl' });
    const r = await runDeviceFunction(broken, 'set_device_volume', '{"volume_level": 30}');
    expect(r.success).toBe(false);
    expect(!r.success && r.error).toMatch(/the volume could not be changed: .*NoSuchControl/);
  });
});
