// Runs the client-side functions of spec section 6 against the device's mixer. Arguments are validated by
// validateDeviceFunction; the result reports the level now in force, read back from the mixer.
import { validateDeviceFunction, VOLUME_STEP_PERCENT, type DeviceFunctionCall, type FunctionOutput } from '../protocol/functions.js';
import type { Mixer, MixerState } from './mixer/mixer.js';

export async function runDeviceFunction(mixer: Mixer, name: string, argumentsJson: unknown): Promise<FunctionOutput> {
  const v = validateDeviceFunction(name, argumentsJson);
  if (!v.ok) return { success: false, error: v.error };
  try {
    const state = await execute(mixer, v.call);
    return { success: true, result: { volume_level: state.volumePercent, muted: state.muted, message: describe(v.call, state) } };
  } catch (err) {
    return { success: false, error: `the volume could not be changed: ${(err as Error).message}` };
  }
}

async function execute(mixer: Mixer, call: DeviceFunctionCall): Promise<MixerState> {
  switch (call.name) {
    case 'set_device_volume':
      return unmuteAt(mixer, call.volumeLevel);
    case 'adjust_device_volume': {
      const now = await mixer.get();
      const delta = call.action === 'increase' ? VOLUME_STEP_PERCENT : -VOLUME_STEP_PERCENT;
      // Turning up a muted speaker starts from 0, as the user hears it.
      const from = now.muted ? 0 : now.volumePercent;
      return unmuteAt(mixer, Math.min(100, Math.max(0, from + delta)));
    }
    case 'quiet_device': {
      await mixer.setVolume(0);
      return mixer.setMuted(true);
    }
  }
}

/** Sets the level and makes sure it is audible (an earlier quiet_device muted the switch). */
async function unmuteAt(mixer: Mixer, percent: number): Promise<MixerState> {
  const s = await mixer.setVolume(percent);
  return s.muted && percent > 0 ? mixer.setMuted(false) : s;
}

function describe(call: DeviceFunctionCall, s: MixerState): string {
  if (call.name === 'quiet_device') return `Device muted (volume ${s.volumePercent}%).`;
  return `Volume is now ${s.volumePercent}%${s.muted ? ' (muted)' : ''}.`;
}
