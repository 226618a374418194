// The client-side functions of spec section 6: names, argument validation, tool definitions, results.
// The agent validates what it is asked to run; the companion's brain uses the tool definitions.

export const VOLUME_STEP_PERCENT = 10;

export type DeviceFunctionCall =
  | { name: 'adjust_device_volume'; action: 'increase' | 'decrease' }
  | { name: 'set_device_volume'; volumeLevel: number }
  | { name: 'quiet_device' };

export type DeviceFunctionName = DeviceFunctionCall['name'];

export const DEVICE_FUNCTION_NAMES: readonly DeviceFunctionName[] = [
  'adjust_device_volume',
  'set_device_volume',
  'quiet_device',
];

export function isDeviceFunction(name: string): name is DeviceFunctionName {
  return (DEVICE_FUNCTION_NAMES as readonly string[]).includes(name);
}

/** The output JSON the device returns in function_call_output (spec: an object with success plus result). */
export type FunctionOutput =
  | { success: true; result: { volume_level: number; muted: boolean; message: string } }
  | { success: false; error: string };

export type ValidationResult = { ok: true; call: DeviceFunctionCall } | { ok: false; error: string };

/**
 * Validates a function call's arguments (a JSON-encoded string, as on the wire).
 * Never throws: a bad call gets a clear error the device sends back as {success:false, error}.
 */
export function validateDeviceFunction(name: string, argumentsJson: unknown): ValidationResult {
  if (!isDeviceFunction(name)) return { ok: false, error: `unknown device function "${name}"` };
  let args: unknown = {};
  if (argumentsJson !== undefined && argumentsJson !== null && argumentsJson !== '') {
    if (typeof argumentsJson !== 'string') return { ok: false, error: 'arguments must be a JSON-encoded string' };
    try {
      args = JSON.parse(argumentsJson);
    } catch {
      return { ok: false, error: 'arguments are not valid JSON' };
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return { ok: false, error: 'arguments must be a JSON object' };
  }
  const a = args as Record<string, unknown>;
  switch (name) {
    case 'adjust_device_volume': {
      if (a.action === undefined) return { ok: false, error: 'missing "action": expected "increase" or "decrease"' };
      if (a.action !== 'increase' && a.action !== 'decrease') {
        return { ok: false, error: `invalid "action" ${JSON.stringify(a.action)}: expected "increase" or "decrease"` };
      }
      return { ok: true, call: { name, action: a.action } };
    }
    case 'set_device_volume': {
      const v = a.volume_level;
      if (v === undefined) return { ok: false, error: 'missing "volume_level": expected a number from 0 to 100' };
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        return { ok: false, error: `invalid "volume_level" ${JSON.stringify(v)}: expected a number from 0 to 100` };
      }
      if (v < 0 || v > 100) return { ok: false, error: `"volume_level" ${v} is out of range: expected 0 to 100` };
      return { ok: true, call: { name, volumeLevel: Math.round(v) } };
    }
    case 'quiet_device':
      return { ok: true, call: { name } };
  }
}

/** Tool definitions in the OpenAI function-calling format, for a brain backed by an LLM. */
export const DEVICE_FUNCTION_TOOLS = [
  {
    type: 'function',
    name: 'adjust_device_volume',
    description: 'Turn the speaker volume up or down by 10 percent.',
    parameters: {
      type: 'object',
      properties: { action: { type: 'string', enum: ['increase', 'decrease'] } },
      required: ['action'],
      additionalProperties: false,
    },
  },
  {
    type: 'function',
    name: 'set_device_volume',
    description: 'Set the speaker volume to a level in percent.',
    parameters: {
      type: 'object',
      properties: { volume_level: { type: 'number', minimum: 0, maximum: 100 } },
      required: ['volume_level'],
      additionalProperties: false,
    },
  },
  {
    type: 'function',
    name: 'quiet_device',
    description: 'Mute the speaker (volume 0 percent).',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
] as const;
