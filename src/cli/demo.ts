// `run --demo`: a scripted user speaks into the virtual microphone once the call is up ("set the volume to
// forty percent", synthesised offline with flite or espeak-ng and played into the mic sink with paplay),
// then the demo waits for the function call and the assistant's reply, and reports success.
// Listening (issue #16): with the wake word engine ready the user says the wake word first, then the command after
// a breath ("hey jarvis. set the volume..."); without one (mode manual, or the engine did not load) the demo presses the
// push-to-talk button (agent.listen(), what `speaker-agent listen` does) just before speaking.
// A reply without the function call (the recogniser misheard: on a board short of CPU the virtual card underruns
// and "set the volume" came out "said the valiant") makes the user say it again once the speaker is idle, up to
// DEMO_ATTEMPTS times, as a person would; before, the demo waited out its timeout and failed.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SpeakerAgent, TranscriptEntry } from '../agent/agent.js';
import type { FunctionRecord } from '../agent/call.js';
import { AgentError } from '../agent/errors.js';

const run = promisify(execFile);

export const DEMO_PHRASE = 'set the volume to forty percent';
/** how many times the scripted user says the command before the demo gives up */
export const DEMO_ATTEMPTS = 3;
/** the PulseAudio sink that feeds the virtual microphone (scripts/virtual-audio.sh) */
export const MIC_SINK = 'mic_in';

/** Speech for the scripted user: flite's natural-sounding "slt" voice is recognised far better than espeak's
 *  robotic one (platform notes: WER 9-15 % vs ~75 %). */
async function synthesizeUtterance(text: string, file: string): Promise<string> {
  try {
    await run('flite', ['-voice', 'slt', '-t', text, '-o', file]);
    return 'flite slt';
  } catch {
    await run('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', file, text]);
    return 'espeak-ng';
  }
}

/** The listening status once the wake word engine has settled (loaded or failed; at most 10 s). */
async function listeningReady(agent: SpeakerAgent) {
  for (let i = 0; i < 100 && agent.listeningStatus().wakeWord.engine === 'loading'; i++) await new Promise((r) => setTimeout(r, 100));
  return agent.listeningStatus();
}

export interface DemoResult {
  function: FunctionRecord;
  reply: string;
}

/** Speaks the phrase once the call is connected; resolves when the function ran and the assistant replied. */
export async function runDemo(agent: SpeakerAgent, opts: { print: (s: string) => void; timeoutMs?: number; phrase?: string }): Promise<DemoResult> {
  const command = opts.phrase ?? DEMO_PHRASE;
  const l = await listeningReady(agent);
  const useWake = l.mode === 'wake' && l.wakeWord.engine === 'ready';
  // A breath after the wake word, as people leave one: flite runs "hey jarvis, set..." together so closely that the
  // pre-roll (from where the engine placed the wake word's end) can carry the end of "jarvis" into the command, and
  // the companion's recogniser then heard "forty" as "fourteen" in about 1 run in 6.
  const phrase = useWake ? `${l.wakeWord.phrase}. ${command}` : command;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'speaker-agent-demo-'));
  const wav = path.join(dir, 'user.wav');
  try {
    const engine = await synthesizeUtterance(phrase, wav);
    return await new Promise<DemoResult>((resolve, reject) => {
      let fn: FunctionRecord | undefined;
      let spoken = false;
      let attempts = 0;
      /** a reply came without the function call: say it again once the speaker is idle */
      let sayAgain = false;
      const timer = setTimeout(
        () => finish(new AgentError('call_failed', `demo: no ${fn ? 'assistant reply' : spoken ? 'function call' : 'connected call'} within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
      const speak = () => {
        if (spoken) return;
        spoken = true;
        attempts++;
        opts.print(`demo      the scripted user says "${phrase}" into the microphone (${engine})${attempts > 1 ? `, attempt ${attempts} of ${DEMO_ATTEMPTS}` : ''}`);
        // a short pause so the call's audio path is settled before the user talks
        setTimeout(() => {
          if (!useWake && l.mode !== 'always') {
            opts.print('demo      the scripted user presses the listen button (speaker-agent listen)');
            agent.listen();
          }
          run('paplay', ['-d', MIC_SINK, wav], { env: process.env }).catch((err: Error) =>
            finish(new AgentError('audio', `demo: cannot play into the virtual microphone: ${err.message}`, { cause: err })),
          );
        }, 700);
      };
      const onState = (s: string) => s === 'connected' && speak();
      const onFunction = (f: FunctionRecord) => {
        fn ??= f;
      };
      const onTranscript = (t: TranscriptEntry) => {
        if (t.role !== 'assistant') return;
        if (fn) return finish(undefined, { function: fn, reply: t.text });
        if (spoken && attempts < DEMO_ATTEMPTS && !sayAgain) {
          sayAgain = true;
          opts.print('demo      the assistant did not catch it: the scripted user will say it again');
        }
      };
      // the speaker at rest again: idle, or in `always` mode (never idle with a call up) listening after the answer
      const atRest = (e: { state: string; previous?: string }) => (l.mode === 'always' ? e.state === 'listening' && e.previous === 'speaking' : e.state === 'idle');
      const onListening = (e: { state: string; previous?: string }) => {
        if (!sayAgain || fn || !atRest(e)) return;
        sayAgain = false;
        spoken = false;
        speak();
      };
      const finish = (err?: Error, result?: DemoResult) => {
        clearTimeout(timer);
        agent.off('state', onState);
        agent.off('function', onFunction);
        agent.off('transcript', onTranscript);
        agent.off('listening', onListening);
        if (err) reject(err);
        else resolve(result!);
      };
      agent.on('state', onState);
      agent.on('function', onFunction);
      agent.on('transcript', onTranscript);
      agent.on('listening', onListening);
      if (agent.snapshot().state === 'connected') speak();
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
