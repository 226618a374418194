// Child of bench/recognizer-memory.bench.ts: the companion's ThreadedRecognizer with `keepThreads` = argv[2] (1 as
// shipped, 2 as before 2 Dec) and its dictionary cache in argv[3]. A user speaks, and speaks again 0.3 s later
// while the first utterance is still being decoded (both fed in real time, 100 ms at a time); prints JSON: RSS at
// rest, with both utterances decoded, and once the idle thread is stopped; each utterance's wait from its end to
// its transcript. Then the worst case: a short second utterance given whole (a thread started for it has no
// speech time to load in), its wait from the end to the transcript.
import { readFileSync } from 'node:fs';
import { ThreadedRecognizer } from '../src/companion/speech/recognizerThreads.js';
import { concatPcm, fliteSpeech } from '../test/companion/speech/speechFixtures.js';

const IDLE_STOP_MS = 3000;
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const [keep, cacheDir] = process.argv.slice(2);

const speech = (text: string) => concatPcm(new Int16Array(4000), fliteSpeech(text, 16000, 'slt'), new Int16Array(4000));
const rec = new ThreadedRecognizer({ threads: 2, keepThreads: Number(keep), idleStopMs: IDLE_STOP_MS, cacheDir });

/** Streams pcm in real time, then returns how long the transcript took after the end of the audio (ms). */
async function utterance(pcm: Int16Array, expected: string): Promise<number> {
  const s = rec.createStream({ mode: 'command' });
  for (let i = 0; i < pcm.length; i += 1600) {
    s.write(pcm.subarray(i, i + 1600));
    await sleep(100);
  }
  const t0 = performance.now();
  const r = await s.end();
  if (r.text !== expected) throw new Error(`heard "${r.text}", said "${expected}"`);
  return performance.now() - t0;
}

await rec.warmUp();
await sleep(2000);
const restMb = rssMb();
const first = utterance(speech('set the volume to forty percent'), 'set the volume to forty percent');
await sleep(300);
const [firstMs, secondMs] = await Promise.all([first, utterance(speech('what time is it'), 'what time is it')]);
const busyMb = rssMb();
await sleep(IDLE_STOP_MS + 3000);
const afterMb = rssMb();
const threads = rec.threadIds().length;
const busy = utterance(speech('set the volume to forty percent'), 'set the volume to forty percent');
await sleep(500);
const whole = rec.createStream({ mode: 'command' });
whole.write(speech('stop'));
const t0 = performance.now();
if ((await whole.end()).text !== 'stop') throw new Error('the whole utterance was not heard');
const wholeMs = performance.now() - t0;
await busy;
await rec.close();
process.stdout.write(JSON.stringify({ restMb, busyMb, afterMb, threads, firstMs, secondMs, wholeMs }) + '\n');
process.exit(0);
