// The client-side functions of spec section 6: names, argument validation, tool definitions, results.
// The agent validates what it is asked to run; the companion's brain uses the tool definitions.

export const VOLUME_STEP_PERCENT = 10;

/** A parameter of a device function: what the tool definition advertises and what validation enforces. */
type Param =
  | { type: 'string'; enum: readonly string[] }
  | { type: 'number'; minimum: number; maximum: number };

/** Each device function declared once: its description and parameters (from which the tool definition and the
 *  argument validation are derived) and the typed call that validated arguments become. */
const DECLARATIONS = {
  adjust_device_volume: {
    description: `Turn the speaker volume up or down by ${VOLUME_STEP_PERCENT} percent.`,
    params: { action: { type: 'string', enum: ['increase', 'decrease'] } },
    call: (a: Record<string, unknown>) => ({ name: 'adjust_device_volume' as const, action: a.action as 'increase' | 'decrease' }),
  },
  set_device_volume: {
    description: 'Set the speaker volume to a level in percent.',
    params: { volume_level: { type: 'number', minimum: 0, maximum: 100 } },
    call: (a: Record<string, unknown>) => ({ name: 'set_device_volume' as const, volumeLevel: Math.round(a.volume_level as number) }),
  },
  quiet_device: {
    description: 'Mute the speaker (volume 0 percent).',
    params: {},
    call: () => ({ name: 'quiet_device' as const }),
  },
} satisfies Record<string, { description: string; params: Record<string, Param>; call: (a: Record<string, unknown>) => { name: string } }>;

export type DeviceFunctionName = keyof typeof DECLARATIONS;
export type DeviceFunctionCall = ReturnType<(typeof DECLARATIONS)[DeviceFunctionName]['call']>;

export const DEVICE_FUNCTION_NAMES = Object.keys(DECLARATIONS) as readonly DeviceFunctionName[];

export function isDeviceFunction(name: string): name is DeviceFunctionName {
  return Object.hasOwn(DECLARATIONS, name);
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
  const decl = DECLARATIONS[name];
  for (const [key, p] of Object.entries(decl.params) as Array<[string, Param]>) {
    const expected = p.type === 'string' ? p.enum.map((v) => JSON.stringify(v)).join(' or ') : `a number from ${p.minimum} to ${p.maximum}`;
    const v = a[key];
    if (v === undefined) return { ok: false, error: `missing "${key}": expected ${expected}` };
    if (p.type === 'string' ? !p.enum.includes(v as string) : typeof v !== 'number' || !Number.isFinite(v)) {
      return { ok: false, error: `invalid "${key}" ${JSON.stringify(v)}: expected ${expected}` };
    }
    if (p.type === 'number' && ((v as number) < p.minimum || (v as number) > p.maximum)) {
      return { ok: false, error: `"${key}" ${v as number} is out of range: expected ${p.minimum} to ${p.maximum}` };
    }
  }
  return { ok: true, call: decl.call(a) };
}

/** Tool definitions in the OpenAI function-calling format, for a brain backed by an LLM. */
export const DEVICE_FUNCTION_TOOLS = DEVICE_FUNCTION_NAMES.map((name) => {
  const { description, params } = DECLARATIONS[name];
  const required = Object.keys(params);
  return {
    type: 'function' as const,
    name,
    description,
    parameters: { type: 'object' as const, properties: params as Record<string, Param>, ...(required.length ? { required } : {}), additionalProperties: false as const },
  };
});
