// The offline default brain: a handful of intents matched on the recogniser's words (the command grammar makes
// these phrasings reliable), each answered briefly; anything else gets a short honest answer.
import type { FunctionOutput } from '../../protocol/functions.js';
import { spokenNumberToInt } from '../speech/commandGrammar.js';
import { systemWallClock, type WallClock } from './systemClock.js';
import { followSystemTimeZone } from './systemTimeZone.js';
import { ASSISTANT_TOOLS, type Brain, type BrainInput, type BrainReply, type FunctionRequest, type FunctionResultInput } from './brain.js';

export interface StoryInfo {
  name: string;
  slug: string;
  transcript: string;
}

/** The workspace's stories as the assistant sees them (the companion's database in production). */
export interface StoryCatalog {
  list(workspaceId: string): StoryInfo[];
}

export const HELP_TEXT =
  'You can say: volume up, volume down, set the volume to fifty percent, be quiet, stop, list the stories, read a story, or what time is it.';
export const FALLBACK_TEXT = "Sorry, I can't help with that. Say help to hear what I can do.";
export const NOT_HEARD_TEXT = "Sorry, I didn't catch that.";
/** A volume request on a call whose client declared no device functions (a stock GA client). */
export const NO_DEVICE_FUNCTION_TEXT = "Sorry, I can't change the volume from here.";
/** "What time is it" while the machine's clock has not been set from the network (no real-time clock, no NTP yet). */
export const CLOCK_NOT_SET_TEXT = "I don't know the time yet: my clock has not been set from the internet.";

function clockText(now: Date): string {
  const h = now.getHours();
  const m = now.getMinutes();
  const h12 = h % 12 === 0 ? 12 : h % 12;
  const mm = m === 0 ? "o'clock" : m < 10 ? `oh ${m}` : String(m);
  return `It is ${h12} ${mm} ${h < 12 ? 'in the morning' : h < 18 ? 'in the afternoon' : 'in the evening'}.`;
}

function listNames(names: string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

const isAssistantTool = (name: string): boolean => ASSISTANT_TOOLS.some((t) => t.name === name);

/** Words that say nothing about which tool is meant ("get_weather" is named by "weather"). */
const GENERIC_WORDS = new Set(['get', 'set', 'fetch', 'show', 'make', 'list', 'find', 'read', 'tool', 'the', 'for', 'and']);

/** A client-declared tool is called when the user says the words of its name: every word of three letters or
 *  more that is not generic (get_current_weather -> "current" and "weather"). The rule brain has no language
 *  model: this is what "the assistant can call client tools" means offline; an LLM brain gets the tools as such. */
export function namesTool(normalisedTranscript: string, toolName: string): boolean {
  const words = toolName.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length >= 3 && !GENERIC_WORDS.has(w));
  return words.length > 0 && words.every((w) => new RegExp(`\\b${w}s?\\b`).test(normalisedTranscript));
}

/** What to say after a client tool's output: its text, or a JSON string / message / result field of it. */
export function clientToolReply(output: string): string {
  let text = output.trim();
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'string') text = v;
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      const pick = [o.message, o.result, o.text, o.answer].find((x) => typeof x === 'string');
      text = typeof pick === 'string' ? pick : 'Done.';
    }
  } catch {
    /* plain text */
  }
  text = text.replace(/\s+/g, ' ').trim();
  if (text === '') return 'Done.';
  return text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

export class RuleBrain implements Brain {
  constructor(
    private readonly stories: StoryCatalog,
    private readonly clock: WallClock = systemWallClock({ now: () => (followSystemTimeZone(), new Date()) }),
  ) {}

  async respond(input: BrainInput): Promise<BrainReply> {
    const t = ` ${input.transcript.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').replace(/\s+/g, ' ').trim()} `;
    if (t.trim() === '') return { say: NOT_HEARD_TEXT };
    // a device function only where the call offers it: a stock client on a GA call has no volume to change
    const device = (call: FunctionRequest): BrainReply =>
      input.tools.some((tool) => tool.name === call.name) ? { functionCall: call } : { say: NO_DEVICE_FUNCTION_TEXT };

    const setTo = /\b(?:set|change|put|turn)\b.*\bvolume\b.*?\bto ([a-z0-9 ]+?)(?: percent| per cent| %)? $/.exec(t) ??
      /\bvolume (?:to |at )?([a-z0-9 ]+?) percent $/.exec(t);
    if (setTo) {
      const level = spokenNumberToInt(setTo[1]);
      if (level === null) return { say: "Sorry, I didn't catch the volume level." };
      if (level > 100) return { say: 'The volume goes from zero to one hundred percent.' };
      return device({ name: 'set_device_volume', arguments: { volume_level: level } });
    }
    if (/\bunmute\b/.test(t)) return { say: 'To unmute, tell me a volume, for example set the volume to fifty percent.' };
    if (/\b(be quiet|quiet|mute|silence)\b/.test(t)) return device({ name: 'quiet_device', arguments: {} });
    if (/\b(volume up|louder|turn (it |the volume )?up|increase( the)? volume|raise( the)? volume)\b/.test(t)) {
      return device({ name: 'adjust_device_volume', arguments: { action: 'increase' } });
    }
    if (/\b(volume down|quieter|softer|turn (it |the volume )?down|decrease( the)? volume|lower( the)? volume)\b/.test(t)) {
      return device({ name: 'adjust_device_volume', arguments: { action: 'decrease' } });
    }
    if (/^ (please )?(stop|stop it|stop talking|cancel|enough)( please)? $/.test(t)) {
      return { functionCall: { name: 'stop_audio', arguments: {} } };
    }
    if (/\b(list|which|what)\b.*\bstories\b/.test(t)) {
      const names = this.stories.list(input.workspaceId).map((s) => s.name);
      if (names.length === 0) return { say: 'There are no stories yet.' };
      return { say: `I know ${names.length === 1 ? 'one story' : `${names.length} stories`}: ${listNames(names)}.` };
    }
    if (/\b(read|tell)\b.*\bstory\b/.test(t)) {
      const all = this.stories.list(input.workspaceId);
      if (all.length === 0) return { say: 'There are no stories to read yet.' };
      const named = all.find((s) => t.includes(` ${s.name.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').replace(/\s+/g, ' ').trim()} `));
      const story = named ?? all[0];
      return { say: `${story.name}. ${story.transcript}` };
    }
    if (/\b(what time|the time|what's the time)\b/.test(t)) {
      return { say: (await this.clock.isSet()) ? clockText(this.clock.now()) : CLOCK_NOT_SET_TEXT };
    }
    if (/\b(hello|hi|hey|good (morning|afternoon|evening))\b/.test(t)) return { say: 'Hello! How can I help?' };
    if (/\b(help|what can you do)\b/.test(t)) return { say: HELP_TEXT };
    const clientTool = input.tools.find((tool) => !isAssistantTool(tool.name) && namesTool(t, tool.name));
    if (clientTool) return { functionCall: { name: clientTool.name, arguments: {} } };
    return { say: FALLBACK_TEXT };
  }

  async afterFunction(input: FunctionResultInput): Promise<{ say: string }> {
    if (!isAssistantTool(input.call.name)) return { say: clientToolReply(input.output) };
    let out: FunctionOutput | undefined;
    try {
      const v = JSON.parse(input.output) as FunctionOutput;
      if (v && typeof v === 'object' && typeof v.success === 'boolean') out = v;
    } catch {
      /* handled below */
    }
    if (!out) return { say: 'Sorry, the speaker sent an answer I could not read.' };
    if (!out.success) {
      const why = typeof out.error === 'string' && out.error ? `: ${out.error}` : '';
      return { say: `Sorry, I couldn't change the volume${why}.` };
    }
    const r = out.result as Partial<{ volume_level: number; muted: boolean; message: string }> | undefined;
    if (r?.muted || (input.call.name === 'quiet_device' && r?.volume_level === 0)) return { say: 'The speaker is muted.' };
    if (typeof r?.volume_level === 'number') return { say: `The volume is now ${Math.round(r.volume_level)} percent.` };
    return { say: typeof r?.message === 'string' && r.message ? r.message : 'Done.' };
  }
}
