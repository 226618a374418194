// Child-process entry of the espeak synthesis pool (see espeakSynthesizer.ts). One espeak engine per process,
// because libespeak-ng's state is process-global and synthesis is CPU work that must stay off the companion's
// event loop. Arguments: espeak's buffer in ms, and when to page out start-up code (ms after start, 0 = never).
// Protocol (IPC, advanced serialization so Int16Array crosses as-is):
//   parent -> worker: { type: 'synth', job, text, voice: EspeakVoiceSettings }
//   worker -> parent: { type: 'ready', sampleRate } once, then per job
//                     { type: 'audio', job, pcm } (several), { type: 'done', job, events, samples } | { type: 'error', job, message }
import { EspeakEngine, type EspeakVoiceSettings } from './espeakEngine.js';
import { processVariable } from '../../common/processEnv.js';
import { concatPcm } from '../../common/audio/signal.js';
import { startMemoryKeeper } from '../../common/memoryKeeper.js';

interface SynthRequest {
  type: 'synth';
  job: number;
  text: string;
  voice: EspeakVoiceSettings;
}

const send = (msg: unknown): void => {
  process.send!(msg);
};

if (!process.send) {
  console.error('espeakWorker must be started with child_process.fork');
  process.exit(2);
}

let engine: EspeakEngine;
try {
  // SPEAKER_AGENT_ESPEAK_LIB: another libespeak-ng build (e.g. a board's own), also used to test a missing library
  engine = new EspeakEngine({ bufferMs: Number(process.argv[2]) || 60, libName: processVariable('espeakLib') || undefined });
} catch (err) {
  send({ type: 'fatal', message: String((err as Error).message ?? err) });
  process.exit(1);
}
send({ type: 'ready', sampleRate: engine.sampleRate });

// A kept worker (the companion's reply worker) lives as long as the companion, beside the agent on a speaker. Once,
// between two syntheses, it hands node's start-up code and the libraries' init code back to the kernel (the memory
// keeper's page-out, as the agent does; the keeper also collects and trims as the heap grows). bench
// recognizer-memory: PSS 16.8 -> 11.3 MB at rest; the next reply faults back what it runs, 15 pages from the disk
// (its first audio 13.3 -> 26.7 ms, once). The page-out itself takes 20-35 ms here, synchronously: synthesis is
// synchronous too, so it runs only between jobs, after 10 s without one, and a reply arriving then waits for it.
let lastJobAt = performance.now();
const pageOutAfterMs = Number(process.argv[3]) || 0;
if (pageOutAfterMs > 0) startMemoryKeeper({ pageOutAfterMs, intervalMs: Math.min(10_000, pageOutAfterMs), pageOutWhen: () => performance.now() - lastJobAt >= Math.min(10_000, pageOutAfterMs) });

let lastVoiceKey = '';
// Audio is batched: the first buffers go out at once (low first-chunk latency), later ones are grouped up to
// ~0.5 s so a 20-minute narration is hundreds of IPC messages, not tens of thousands.
const MAX_BATCH = 11025;

process.on('message', (msg: SynthRequest) => {
  if (!msg || msg.type !== 'synth') return;
  const { job, text, voice } = msg;
  try {
    const key = `${voice.name}|${voice.rate}|${voice.pitch}|${voice.range}`;
    if (key !== lastVoiceKey) {
      lastVoiceKey = '';
      engine.setVoice(voice);
      lastVoiceKey = key;
    }
    const events: [number, number, number][] = [];
    let samples = 0;
    let batch: Int16Array[] = [];
    let batched = 0;
    let batchLimit = 1;
    const flush = () => {
      if (batched === 0) return;
      const pcm = batch.length === 1 ? batch[0] : concatPcm(batch);
      send({ type: 'audio', job, pcm });
      batch = [];
      batched = 0;
      batchLimit = Math.min(MAX_BATCH, batchLimit * 4 + 2048);
    };
    engine.synthesize(text, (pcm, evs) => {
      for (const e of evs) events.push([e.type, e.textPosition, e.sample]);
      if (pcm.length > 0) {
        batch.push(pcm);
        batched += pcm.length;
        samples += pcm.length;
        if (batched >= batchLimit) flush();
      }
      return true;
    });
    flush();
    send({ type: 'done', job, events, samples });
  } catch (err) {
    send({ type: 'error', job, message: String((err as Error).message ?? err) });
  }
  lastJobAt = performance.now();
});

process.on('disconnect', () => process.exit(0));
