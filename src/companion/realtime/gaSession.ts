// The session configuration of a GA realtime call (POST /v1/realtime/calls, client_secrets, session.update) and
// what of it the offline assistant honours:
//   - tools (type "function"): the assistant may call them and waits for their output, like a device function;
//   - instructions: kept and reported back (the rule brain has no prompt; an LLM brain would use them);
//   - audio.output.voice: kept and reported (the offline voice is espeak-ng's, set in the companion's settings);
//   - audio.input.turn_detection.silence_duration_ms: the end-of-speech hangover of this call's voice detection.
// Everything else is accepted and ignored; a malformed value of a field we use is an error naming the field.
import type { ToolDefinition } from './brain.js';

export interface GaSessionConfig {
  instructions: string;
  voice: string;
  model: string;
  tools: ToolDefinition[];
  /** ms of silence that end the user's turn (server VAD hangover) */
  silenceDurationMs: number;
}

export type GaSessionResult = { ok: true; config: GaSessionConfig } | { ok: false; message: string };

const MAX_TOOLS = 64;
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Applies `update` (a GA session object, all fields optional) on top of `base`. */
export function mergeGaSession(base: GaSessionConfig, update: unknown): GaSessionResult {
  if (!isObject(update)) return { ok: false, message: 'session must be a JSON object' };
  if (update.type !== undefined && update.type !== 'realtime') return { ok: false, message: 'session.type must be "realtime"' };
  const c: GaSessionConfig = { ...base, tools: [...base.tools] };
  if (update.instructions !== undefined) {
    if (typeof update.instructions !== 'string') return { ok: false, message: 'session.instructions must be a string' };
    c.instructions = update.instructions;
  }
  if (update.model !== undefined) {
    if (typeof update.model !== 'string') return { ok: false, message: 'session.model must be a string' };
    c.model = update.model;
  }
  const audio = update.audio;
  if (audio !== undefined && !isObject(audio)) return { ok: false, message: 'session.audio must be an object' };
  const output = audio?.output;
  if (isObject(output) && output.voice !== undefined) {
    if (typeof output.voice !== 'string') return { ok: false, message: 'session.audio.output.voice must be a string' };
    c.voice = output.voice;
  }
  const input = audio?.input;
  if (isObject(input) && isObject(input.turn_detection)) {
    const ms = input.turn_detection.silence_duration_ms;
    if (ms !== undefined) {
      if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 100 || ms > 5000) {
        return { ok: false, message: 'session.audio.input.turn_detection.silence_duration_ms must be an integer from 100 to 5000' };
      }
      c.silenceDurationMs = ms;
    }
  }
  if (update.tools !== undefined) {
    if (!Array.isArray(update.tools) || update.tools.length > MAX_TOOLS) return { ok: false, message: `session.tools must be an array of at most ${MAX_TOOLS} tools` };
    const tools: ToolDefinition[] = [];
    for (const [i, t] of update.tools.entries()) {
      if (!isObject(t) || t.type !== 'function') continue; // other tool kinds (mcp, ...) are not ours to run
      if (typeof t.name !== 'string' || !NAME.test(t.name)) return { ok: false, message: `session.tools[${i}].name must match ${NAME.source}` };
      tools.push({
        type: 'function',
        name: t.name,
        description: typeof t.description === 'string' ? t.description : '',
        parameters: isObject(t.parameters) ? t.parameters : { type: 'object', properties: {} },
      });
    }
    c.tools = tools;
  }
  return { ok: true, config: c };
}

/** The session object as GA clients expect it in session.created / session.updated and client_secrets. */
export function gaSessionObject(c: GaSessionConfig, id: string): Record<string, unknown> {
  return {
    type: 'realtime',
    object: 'realtime.session',
    id,
    model: c.model,
    output_modalities: ['audio'],
    instructions: c.instructions,
    audio: {
      input: {
        format: { type: 'audio/pcm', rate: 24000 },
        turn_detection: { type: 'server_vad', silence_duration_ms: c.silenceDurationMs, create_response: true, interrupt_response: true },
      },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: c.voice },
    },
    tools: c.tools,
    tool_choice: 'auto',
  };
}

export function defaultGaSession(o: { silenceDurationMs: number; voice: string }): GaSessionConfig {
  return { instructions: '', voice: o.voice, model: 'speaker-agent-companion', tools: [], silenceDurationMs: o.silenceDurationMs };
}
