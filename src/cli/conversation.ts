// The conversation in human-readable form on the terminal (`run --demo`, `run --conversation`): call state,
// what the user said, the function calls with the volume change, and the assistant's reply.
import type { ListeningEvent, SpeakerAgent, TranscriptEntry } from '../agent/agent.js';
import type { FunctionRecord } from '../agent/call.js';

export type Print = (line: string) => void;

export function describeFunction(rec: FunctionRecord): string {
  const args = rec.arguments && rec.arguments !== '{}' ? ` ${rec.arguments}` : '';
  if (!rec.output) return `function  ${rec.name}${args} (handled by the server)`;
  if (!rec.output.success) return `function  ${rec.name}${args} -> failed: ${rec.output.error}`;
  const r = rec.output.result;
  return `function  ${rec.name}${args} -> volume now ${r.volume_level}%${r.muted ? ' (muted)' : ''}`;
}

export function attachConversationPrinter(agent: SpeakerAgent, print: Print): () => void {
  const time = () => new Date().toISOString().slice(11, 19);
  const onState = (s: string) => print(`${time()}  [call ${s}]`);
  const onTranscript = (t: TranscriptEntry) => print(`${time()}  ${t.role === 'user' ? 'you      ' : 'assistant'}  ${t.text}`);
  const onFunction = (f: FunctionRecord) => print(`${time()}  ${describeFunction(f)}`);
  const onListening = (e: ListeningEvent) => e.state !== e.previous && print(`${time()}  [${e.state}${e.micOnWire ? ', microphone on the call' : ''}]`);
  agent.on('state', onState);
  agent.on('transcript', onTranscript);
  agent.on('function', onFunction);
  agent.on('listening', onListening);
  return () => {
    agent.off('listening', onListening);
    agent.off('state', onState);
    agent.off('transcript', onTranscript);
    agent.off('function', onFunction);
  };
}
