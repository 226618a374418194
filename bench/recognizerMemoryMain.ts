// Child of bench/recognizer-memory.bench.ts: makes one decoder pair and prints what it cost (JSON on stdout).
//   full:    two bare decoders on Debian's full dictionary, as the companion made them before 2 Dec (the anchor)
//   shipped: the companion's PocketsphinxRecognizer (a grammar decoder given the grammar's words, a language-model
//            decoder on the model's words), with its dictionary cache in argv[3]
import { readFileSync } from 'node:fs';
import { EXTRA_PRONUNCIATIONS } from '../src/companion/speech/commandGrammar.js';
import { DEFAULT_LM_TUNING, PocketsphinxRecognizer } from '../src/companion/speech/pocketsphinxRecognizer.js';
import { FULL_DICT, RawDecoder } from '../test/support/sphinxDecoder.js';

const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const [variant, cacheDir] = process.argv.slice(2);
const rec = new PocketsphinxRecognizer({ maxConcurrent: 1, cacheDir }); // loads the libraries, builds the grammar
RawDecoder.create({ dict: '/dev/null' }).close(); // both kinds of binding loaded before the baseline
const before = { rss: kb('VmRSS'), anon: kb('RssAnon') };
const t0 = performance.now();
if (variant === 'full') {
  const grammar = RawDecoder.create({ dict: FULL_DICT });
  for (const [w, phones] of Object.entries(EXTRA_PRONUNCIATIONS)) grammar.addWord(w, phones);
  grammar.setGrammar(rec.grammarText);
  RawDecoder.create({ dict: FULL_DICT, lm: DEFAULT_LM_TUNING });
} else {
  await rec.warmUp();
}
const ms = performance.now() - t0;
process.stdout.write(JSON.stringify({ rssMb: (kb('VmRSS') - before.rss) / 1024, anonMb: (kb('RssAnon') - before.anon) / 1024, ms }) + '\n');
process.exit(0);
