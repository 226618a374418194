import { describe, expect, it } from 'vitest';
import { validateDeviceFunction } from '../../src/protocol/functions.js';

describe('validateDeviceFunction', () => {
  it('accepts the three client-side functions with valid arguments', () => {
    expect(validateDeviceFunction('adjust_device_volume', '{"action":"increase"}')).toEqual({ ok: true, call: { name: 'adjust_device_volume', action: 'increase' } });
    expect(validateDeviceFunction('adjust_device_volume', '{"action":"decrease"}')).toEqual({ ok: true, call: { name: 'adjust_device_volume', action: 'decrease' } });
    expect(validateDeviceFunction('set_device_volume', '{"volume_level":40}')).toEqual({ ok: true, call: { name: 'set_device_volume', volumeLevel: 40 } });
    expect(validateDeviceFunction('set_device_volume', '{"volume_level":0}')).toEqual({ ok: true, call: { name: 'set_device_volume', volumeLevel: 0 } });
    expect(validateDeviceFunction('set_device_volume', '{"volume_level":100}')).toEqual({ ok: true, call: { name: 'set_device_volume', volumeLevel: 100 } });
    expect(validateDeviceFunction('quiet_device', '{}')).toEqual({ ok: true, call: { name: 'quiet_device' } });
    expect(validateDeviceFunction('quiet_device', '')).toEqual({ ok: true, call: { name: 'quiet_device' } });
  });

  it.each([
    ['set_device_volume', '{"volume_level":150}', 'out of range'],
    ['set_device_volume', '{"volume_level":-5}', 'out of range'],
    ['set_device_volume', '{"volume_level":"loud"}', 'invalid "volume_level"'],
    ['set_device_volume', '{"volume_level":null}', 'invalid "volume_level"'],
    ['set_device_volume', '{}', 'missing "volume_level"'],
    ['adjust_device_volume', '{}', 'missing "action"'],
    ['adjust_device_volume', '{"action":"louder"}', 'invalid "action"'],
    ['adjust_device_volume', '{"action":', 'not valid JSON'],
    ['quiet_device', '[]', 'must be a JSON object'],
    ['stop_audio', '{}', 'unknown device function'],
  ])('%s %s is refused with a clear error', (name, args, message) => {
    const r = validateDeviceFunction(name, args);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain(message);
  });

  it('refuses arguments that are not a string (the wire carries JSON-encoded strings)', () => {
    const r = validateDeviceFunction('set_device_volume', { volume_level: 40 });
    expect(r).toEqual({ ok: false, error: 'arguments must be a JSON-encoded string' });
  });

  it('rounds fractional levels to a whole percent', () => {
    expect(validateDeviceFunction('set_device_volume', '{"volume_level":39.6}')).toEqual({ ok: true, call: { name: 'set_device_volume', volumeLevel: 40 } });
  });
});
