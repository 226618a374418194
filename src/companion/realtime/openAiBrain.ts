// A brain backed by an LLM with tools through an OpenAI-compatible chat endpoint (POST {baseUrl}/chat/completions,
// e.g. llama.cpp's server, vLLM, Ollama, or a hosted API). The device functions are offered as tools; the
// model's tool call becomes the function_call the device runs, and the device's output is handed back as a tool
// message for the spoken confirmation. Not the default: nothing here runs offline without such a server.
import type { Brain, BrainInput, BrainReply, FunctionResultInput, ToolDefinition, Turn } from './brain.js';
import { BrainError } from './brain.js';
import { certificateClockProblem } from '../../common/certificateClock.js';
import { certificateTrustProblem } from '../../common/certificateTrust.js';

export interface OpenAiBrainOptions {
  /** base URL including the API version, e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs?: number;
  systemPrompt?: string;
}

const DEFAULT_SYSTEM_PROMPT =
  'You are the voice assistant of a smart speaker. Answer in one or two short spoken sentences, no lists or markup. ' +
  'Use the tools to change the speaker volume or to stop talking. If you cannot do something, say so briefly.';

type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }
  | { role: 'tool'; tool_call_id: string; content: string };

interface ChatResponse {
  choices?: { message?: { content?: string | null; tool_calls?: { function?: { name?: string; arguments?: string } }[] } }[];
}

export class OpenAiBrain implements Brain {
  private readonly url: string;

  constructor(private readonly opts: OpenAiBrainOptions) {
    if (!/^https?:\/\//.test(opts.baseUrl)) throw new BrainError('BRAIN_UNAVAILABLE', `brain baseUrl must be an http(s) URL, got "${opts.baseUrl}"`);
    if (!opts.model) throw new BrainError('BRAIN_UNAVAILABLE', 'brain model is not set');
    this.url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  }

  async respond(input: BrainInput): Promise<BrainReply> {
    const messages: ChatMessage[] = [this.system(), ...historyMessages(input.history)];
    // the current transcript is the last user turn of history when the conversation recorded it already
    const last = input.history[input.history.length - 1];
    if (!(last?.role === 'user' && last.text === input.transcript)) messages.push({ role: 'user', content: input.transcript });
    const res = await this.chat(messages, input.tools, input.signal);
    const msg = res.choices?.[0]?.message;
    const call = msg?.tool_calls?.[0]?.function;
    if (call?.name) {
      let args: Record<string, unknown> = {};
      if (call.arguments) {
        try {
          const v = JSON.parse(call.arguments) as unknown;
          if (v && typeof v === 'object' && !Array.isArray(v)) args = v as Record<string, unknown>;
        } catch (err) {
          throw new BrainError('BRAIN_BAD_RESPONSE', `the model's tool arguments are not JSON: ${call.arguments.slice(0, 80)}`, { cause: err });
        }
      }
      return { functionCall: { name: call.name, arguments: args } };
    }
    const say = msg?.content?.trim();
    if (!say) throw new BrainError('BRAIN_BAD_RESPONSE', 'the model returned neither text nor a tool call');
    return { say };
  }

  async afterFunction(input: FunctionResultInput): Promise<{ say: string }> {
    const history = input.history.filter((t) => t.role !== 'function');
    const messages: ChatMessage[] = [
      this.system(),
      ...historyMessages(history),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: input.call.name, arguments: JSON.stringify(input.call.arguments) } }] },
      { role: 'tool', tool_call_id: 'call_0', content: input.output },
    ];
    const res = await this.chat(messages, [], input.signal);
    const say = res.choices?.[0]?.message?.content?.trim();
    if (!say) throw new BrainError('BRAIN_BAD_RESPONSE', 'the model returned no text after the function result');
    return { say };
  }

  private system(): ChatMessage {
    return { role: 'system', content: this.opts.systemPrompt ?? DEFAULT_SYSTEM_PROMPT };
  }

  private async chat(messages: ChatMessage[], tools: readonly ToolDefinition[], signal?: AbortSignal): Promise<ChatResponse> {
    const timeout = AbortSignal.timeout(this.opts.timeoutMs ?? 15_000);
    const body: Record<string, unknown> = { model: this.opts.model, messages, stream: false };
    if (tools.length) {
      body.tools = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
      body.tool_choice = 'auto';
    }
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      // fetch says only "fetch failed": the reason (a refused connection, a certificate, the clock) is its cause's
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = certificateClockProblem(err) ?? certificateTrustProblem(err, { whose: "the endpoint's", environmentFile: '/etc/speaker-agent/companion.env', service: 'speaker-agent-companion' }) ?? [(err as Error).message, cause?.code ?? cause?.message].filter(Boolean).join(': ');
      throw new BrainError('BRAIN_UNAVAILABLE', `the chat endpoint ${this.url} is unreachable: ${why}`, { cause: err });
    }
    if (!res.ok) {
      // logged: without our key, should the endpoint echo it
      const raw = await res.text().catch(() => '');
      const text = (this.opts.apiKey ? raw.split(this.opts.apiKey).join('[key]') : raw).slice(0, 200);
      throw new BrainError('BRAIN_UNAVAILABLE', `the chat endpoint answered HTTP ${res.status}: ${text}`);
    }
    try {
      return (await res.json()) as ChatResponse;
    } catch (err) {
      throw new BrainError('BRAIN_BAD_RESPONSE', 'the chat endpoint answered with something other than JSON', { cause: err });
    }
  }
}

function historyMessages(history: readonly Turn[]): ChatMessage[] {
  return history.map((t): ChatMessage =>
    t.role === 'user' ? { role: 'user', content: t.text } : { role: 'assistant', content: t.role === 'function' ? `(${t.name} returned ${t.text})` : t.text },
  );
}
