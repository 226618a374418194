// What the assistant says and which functions it calls, behind one small interface so a deployment can swap the
// offline rules (ruleBrain.ts, the default) for an LLM with tools (openAiBrain.ts) or anything else.
import { DEVICE_FUNCTION_TOOLS } from '../../protocol/functions.js';
import { CodedError } from '../../common/errors.js';

export interface Turn {
  role: 'user' | 'assistant' | 'function';
  text: string;
  /** for role 'function': which function produced the output */
  name?: string;
  /** the conversation item it came from (conversation.item.delete removes the turn too) */
  itemId?: string;
}

export interface ToolDefinition {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface FunctionRequest {
  name: string;
  arguments: Record<string, unknown>;
}

export interface BrainInput {
  transcript: string;
  /** earlier turns of this call, oldest first */
  history: readonly Turn[];
  tools: readonly ToolDefinition[];
  /** the caller's workspace (stories are per workspace) */
  workspaceId: string;
  signal?: AbortSignal;
}

export interface BrainReply {
  say?: string;
  functionCall?: FunctionRequest;
}

export interface FunctionResultInput {
  call: FunctionRequest;
  /** the device's output string (JSON {success, result} or {success:false, error}) */
  output: string;
  history: readonly Turn[];
  workspaceId: string;
  signal?: AbortSignal;
}

export interface Brain {
  respond(input: BrainInput): Promise<BrainReply>;
  afterFunction(input: FunctionResultInput): Promise<{ say: string }>;
}

/** stop_audio runs on the server (spec section 6): it cuts the assistant's speech; the device takes no action. */
export const STOP_AUDIO_TOOL: ToolDefinition = {
  type: 'function',
  name: 'stop_audio',
  description: 'Stop speaking at once (the user said stop or asked for silence from the assistant).',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
};

/** Every tool the assistant may call: the device's functions plus the server's own. */
export const ASSISTANT_TOOLS: readonly ToolDefinition[] = [
  ...(DEVICE_FUNCTION_TOOLS as unknown as ToolDefinition[]),
  STOP_AUDIO_TOOL,
];

export class BrainError extends CodedError<'BRAIN_UNAVAILABLE' | 'BRAIN_BAD_RESPONSE'> {
  override name = 'BrainError';
}
