// The offline Recognizer: CMU pocketsphinx 5prealpha (Debian libpocketsphinx3) called in-process through koffi.
//
// Off the event loop: every decoder call (model loading, ps_process_raw, ps_end_utt) is a koffi async call,
// so it runs on the libuv thread pool; calls to one decoder are chained, never concurrent. With `sync: true`
// the calls run on the calling thread instead: for a dedicated worker thread (recognizerThreads.ts), which
// runs at a lower CPU priority than the event loop that paces live calls.
// Command mode runs two decoders over the same audio: one restricted to the JSGF command grammar
// (commandGrammar.ts), one with the general en-us language model. A grammar search forces *some* command onto
// out-of-grammar speech, so the free LM transcript is the referee (chooseResult): the grammar result is used
// when the two agree or the grammar path is far more probable; otherwise the LM transcript is returned
// (grammarMatch false), so anything still gets a transcript. Dictation mode uses the LM decoder only.
// Streaming: the LM decoder (the costly one) decodes ~100 ms batches while the user speaks, so end() only
// decodes its tail. The grammar decoder gets the whole utterance at end() in one call (full_utt), so its
// cepstral mean normalisation uses this utterance's own mean. Streamed, libpocketsphinx 5prealpha normalises
// with a mean fixed for the whole utterance: the model's default for a decoder's first utterance, the previous
// utterances' after that. The same command then decoded differently with what the decoder had heard before:
// "fifty" as "sixty" after a quiet speaker (test), "forty percent" as "fourteen percent" in
// test/cli/listen.test.ts, in its one-breath wake test and its `listen` test (of the audio the companion got in 5
// such failures, 4 decode right now; the 5th needed the microphone's Opus band cap, opusCodec.ts). The grammar
// search is cheap: end() took 46 instead of 24 ms (median) for the speech bench's 5.9 s streamed utterance.
// Decoders come in pairs from a small pool (default 2 pairs, created on first use); more concurrent streams
// wait for a free pair while their audio is buffered.
// Dictionaries: pocketsphinx keeps every entry of its dictionary in memory. The grammar decoder starts with none
// and is given the entries of the grammar's words (ps_add_word), the language-model decoder the entries of its
// model's words (lmDictionary.ts); with Debian's full dictionary a pair took 109.6 MB of anonymous memory, now
// 79.6 MB (bench recognizer-memory), with the same transcripts and path scores.
import koffi from 'koffi';
import path from 'node:path';
import type { Recognition, RecognitionMode, Recognizer, RecognizerStream, RecognizerStreamOptions } from './recognizer.js';
import { SpeechError } from './speechError.js';
import { buildCommandGrammar, EXTRA_PRONUNCIATIONS, grammarVocabulary } from './commandGrammar.js';
import { FULL_DICTIONARY, languageModelDictionary } from './lmDictionary.js';
import { concatPcm } from '../../common/audio/signal.js';
import { type DictionaryEntry, readDictionaryEntries } from '../../common/cmuDictionary.js';

export interface PocketsphinxOptions {
  /** directory holding en-us/, cmudict-en-us.dict, en-us.lm.bin (default Debian's) */
  modelDir?: string;
  /** story names for "read the story <name>" */
  storyNames?: string[];
  /** decoder pairs, i.e. utterances decoded at the same time (default 2) */
  maxConcurrent?: number;
  /** extra pocketsphinx options for the language-model decoder (default DEFAULT_LM_TUNING) */
  tuning?: Record<string, string>;
  /** decode on the calling thread (a worker thread) instead of the libuv pool (default false) */
  sync?: boolean;
  /** where the language model's dictionary is kept between starts (default: made again at each start) */
  cacheDir?: string;
}

const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const BATCH_SAMPLES = 1600; // 100 ms at 16 kHz
const GRAMMAR_SEARCH = 'commands';
/** the grammar decoder's dictionary at ps_init: no words (the fillers come from the model's noisedict) */
const NO_WORDS = '/dev/null';
/** Speed settings of the language-model decoder: skip the second (flat-lexicon) pass, cap active HMMs per
 *  frame, and look ahead 5 frames in phone-loop pruning. Measured on flite speech: CPU per audio second 0.36 ->
 *  0.21, transcripts unchanged but for one function word in 30. */
export const DEFAULT_LM_TUNING: Record<string, string> = { '-fwdflat': 'no', '-maxhmmpf': '3000', '-pl_window': '5' };

type AsyncFn = { async: (...args: unknown[]) => void } & ((...args: unknown[]) => unknown);

interface SphinxApi {
  cmdLnInit: AsyncFn;
  /** releases the caller's reference to a configuration: ps_init keeps its own (leaked ~23 KB a decoder before) */
  cmdLnFree: (config: unknown) => number;
  psArgs: () => unknown;
  psInit: AsyncFn;
  psFree: AsyncFn;
  setJsgf: AsyncFn;
  setSearch: AsyncFn;
  addWord: AsyncFn;
  startUtt: AsyncFn;
  processRaw: AsyncFn;
  endUtt: AsyncFn;
  getHyp: AsyncFn;
  lookupWord: (ps: unknown, word: string) => unknown;
  ckdFree: (p: unknown) => void;
}

let api: SphinxApi | null = null;
function sphinx(): SphinxApi {
  if (api) return api;
  try {
    koffi.load('libsphinxbase.so.3');
    const lib = koffi.load('libpocketsphinx.so.3');
    const base = koffi.load('libsphinxbase.so.3');
    // Logging off, once, process-wide. Not '-logfn /dev/null': every ps_init would then swap and fclose
    // sphinxbase's global log FILE, and two decoders created on two pool threads double-free it.
    base.func('void err_set_logfp(void *fp)')(null);
    api = {
      cmdLnInit: base.func('void *cmd_ln_init(void *inout, void *defn, int strict, ...)') as AsyncFn,
      cmdLnFree: base.func('int cmd_ln_free_r(void *cmdln)') as (config: unknown) => number,
      psArgs: lib.func('void *ps_args()') as () => unknown,
      psInit: lib.func('void *ps_init(void *config)') as AsyncFn,
      psFree: lib.func('int ps_free(void *ps)') as AsyncFn,
      setJsgf: lib.func('int ps_set_jsgf_string(void *ps, const char *name, const char *jsgf)') as AsyncFn,
      setSearch: lib.func('int ps_set_search(void *ps, const char *name)') as AsyncFn,
      addWord: lib.func('int ps_add_word(void *ps, const char *word, const char *phones, int update)') as AsyncFn,
      startUtt: lib.func('int ps_start_utt(void *ps)') as AsyncFn,
      processRaw: lib.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)') as AsyncFn,
      endUtt: lib.func('int ps_end_utt(void *ps)') as AsyncFn,
      getHyp: lib.func('const char *ps_get_hyp(void *ps, _Out_ int *score)') as AsyncFn,
      // the pronunciation, allocated for the caller (freed with ckd_free), or NULL for a word not in the dictionary
      lookupWord: lib.func('void *ps_lookup_word(void *ps, const char *word)') as SphinxApi['lookupWord'],
      ckdFree: base.func('void ckd_free(void *ptr)') as SphinxApi['ckdFree'],
    };
    return api;
  } catch (cause) {
    throw new SpeechError('RECOGNIZER_FAILED', 'cannot load libpocketsphinx.so.3 (apt: libpocketsphinx3)', { cause });
  }
}

/** set for a recogniser created with sync: true (one per worker thread) */
let syncCalls = false;

function call<T>(fn: AsyncFn, ...args: unknown[]): Promise<T> {
  if (syncCalls) {
    try {
      return Promise.resolve(fn(...args) as T);
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return new Promise((resolve, reject) => {
    fn.async(...args, (err: unknown, res: T) => (err ? reject(err) : resolve(res)));
  });
}

let creation: Promise<unknown> = Promise.resolve();

/** One pocketsphinx decoder; every call goes through a promise chain so calls never overlap. */
class Decoder {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(readonly ps: unknown) {}
  run<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => {});
    return p;
  }
  static async create(modelDir: string, dict: string, withLm: boolean, tuning: Record<string, string> = {}): Promise<Decoder> {
    const a = sphinx();
    const s = 'const char *';
    const args: unknown[] = [null, a.psArgs(), 1,
      s, '-hmm', s, path.join(modelDir, 'en-us'),
      s, '-dict', s, dict];
    if (withLm) args.push(s, '-lm', s, path.join(modelDir, 'en-us.lm.bin'));
    for (const [k, v] of Object.entries(tuning)) args.push(s, k, s, v);
    args.push(s, null);
    // cmd_ln_init only parses arguments (fast), and koffi has no async form for variadic functions
    const config = (a.cmdLnInit as unknown as (...x: unknown[]) => unknown)(...args);
    if (!config) throw new SpeechError('RECOGNIZER_FAILED', 'pocketsphinx rejected its configuration');
    // one ps_init at a time: model loading touches sphinxbase globals (debug level, logging)
    const ps = await (creation = creation.catch(() => {}).then(() => call<unknown>(a.psInit, config)).finally(() => a.cmdLnFree(config)));
    if (!ps) throw new SpeechError('RECOGNIZER_FAILED', `pocketsphinx could not load its models from ${modelDir}`);
    return new Decoder(ps);
  }
  /** Whether its dictionary holds every one of these words. */
  knows(words: readonly string[]): boolean {
    const a = sphinx();
    return words.every((w) => {
      const p = a.lookupWord(this.ps, w);
      if (p) a.ckdFree(p);
      return !!p;
    });
  }
  async free(): Promise<void> {
    await this.run(() => call(sphinx().psFree, this.ps));
  }
}

/** Words every English language model has, from the start, the middle and the end of the dictionary: a restricted
 *  dictionary without them is damaged (pocketsphinx starts on any file, garbage included). */
const SENTINEL_WORDS = ['about', 'the', 'zero'];

interface Pair {
  grammar: Decoder;
  lm: Decoder;
  grammarVersion: number;
  /** dictionary entries (heads) the grammar decoder has been given */
  grammarHeads: Set<string>;
  busy: boolean;
}

export class PocketsphinxRecognizer implements Recognizer {
  readonly sampleRate = 16000 as const;
  private readonly modelDir: string;
  private readonly maxPairs: number;
  private readonly pairs: Pair[] = [];
  private creating = 0;
  private readonly waiters: ((p: Pair) => void)[] = [];
  private grammar = '';
  /** the dictionary entries of the grammar's words */
  private grammarEntries: DictionaryEntry[] = [];
  private grammarVersion = 1;
  private closed = false;
  private readonly tuning: Record<string, string>;
  private readonly cacheDir: string | undefined;

  constructor(opts: PocketsphinxOptions = {}) {
    this.modelDir = opts.modelDir ?? DEFAULT_MODEL_DIR;
    this.maxPairs = Math.max(1, opts.maxConcurrent ?? 2);
    this.tuning = opts.tuning ?? DEFAULT_LM_TUNING;
    this.cacheDir = opts.cacheDir;
    if (opts.sync) syncCalls = true;
    sphinx(); // fail fast when the library is missing
    this.buildGrammar(opts.storyNames ?? []);
  }

  /** The grammar text in use (for diagnostics). */
  get grammarText(): string {
    return this.grammar;
  }

  /** The dictionary entries the grammar decoder is given for it (for diagnostics). */
  get grammarDictionary(): readonly DictionaryEntry[] {
    return this.grammarEntries;
  }

  /** Replaces the story names of "read the story <name>"; applied to each decoder before its next utterance. */
  setStoryNames(names: string[]): void {
    this.buildGrammar(names);
    this.grammarVersion++;
  }

  /** Loads the first decoder pair now instead of on first use (a couple of seconds of background work). */
  async warmUp(): Promise<void> {
    const p = await this.acquire();
    this.release(p);
  }

  createStream(opts?: RecognizerStreamOptions): RecognizerStream {
    if (this.closed) throw new SpeechError('RECOGNIZER_FAILED', 'recognizer is closed');
    return new SphinxStream(this, opts?.mode ?? 'command');
  }

  async recognize(pcm16k: Int16Array, opts?: RecognizerStreamOptions): Promise<Recognition> {
    const s = this.createStream(opts);
    s.write(pcm16k);
    return s.end();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.creating > 0 || this.pairs.some((p) => p.busy)) await new Promise((r) => setTimeout(r, 20));
    const a = sphinx();
    for (const p of this.pairs.splice(0)) {
      await p.grammar.run(() => call(a.psFree, p.grammar.ps));
      await p.lm.run(() => call(a.psFree, p.lm.ps));
    }
  }

  /** @internal a free decoder pair with the current grammar */
  async acquire(): Promise<Pair> {
    if (this.closed) throw new SpeechError('RECOGNIZER_FAILED', 'recognizer is closed');
    let pair = this.pairs.find((p) => !p.busy);
    if (!pair && this.pairs.length + this.creating < this.maxPairs) {
      this.creating++;
      try {
        const [grammar, lm] = await Promise.all([Decoder.create(this.modelDir, NO_WORDS, false), this.createLmDecoder()]);
        pair = { grammar, lm, grammarVersion: 0, grammarHeads: new Set(), busy: false };
        this.pairs.push(pair);
      } finally {
        this.creating--;
      }
    }
    if (!pair || pair.busy) pair = await new Promise<Pair>((resolve) => this.waiters.push(resolve));
    pair.busy = true;
    if (pair.grammarVersion !== this.grammarVersion) {
      const version = this.grammarVersion;
      const text = this.grammar;
      const entries = this.grammarEntries;
      const a = sphinx();
      const g = pair.grammar;
      const heads = pair.grammarHeads;
      try {
        await g.run(async () => {
          // update 0: ps_set_jsgf_string below builds the search from the dictionary as it is then
          for (const e of entries) {
            if (heads.has(e.head)) continue;
            if ((await call<number>(a.addWord, g.ps, e.head, e.phones, 0)) < 0) throw new SpeechError('RECOGNIZER_FAILED', `pocketsphinx rejected the pronunciation of "${e.head}"`);
            heads.add(e.head);
          }
          if ((await call<number>(a.setJsgf, g.ps, GRAMMAR_SEARCH, text)) < 0) throw new SpeechError('RECOGNIZER_FAILED', 'pocketsphinx rejected the command grammar');
          if ((await call<number>(a.setSearch, g.ps, GRAMMAR_SEARCH)) < 0) throw new SpeechError('RECOGNIZER_FAILED', 'cannot select the command grammar');
        });
      } catch (err) {
        // this utterance fails; the pair goes back (held, it would stop every later one) and tries again next time
        this.release(pair);
        throw err;
      }
      pair.grammarVersion = version;
    }
    return pair;
  }

  /** @internal */
  release(pair: Pair): void {
    const next = this.waiters.shift();
    if (next) next(pair); // stays busy, handed over
    else pair.busy = false;
  }

  /** The language-model decoder, on a dictionary of its model's words (the full one when that cannot be had). */
  private async createLmDecoder(): Promise<Decoder> {
    const dict = await languageModelDictionary(this.modelDir, { cacheDir: this.cacheDir, sync: syncCalls });
    try {
      if (dict.fallback !== undefined) return await Decoder.create(this.modelDir, dict.path, true, this.tuning);
      const decoder = await Decoder.create(this.modelDir, dict.path, true, this.tuning).catch(() => undefined);
      if (decoder?.knows(SENTINEL_WORDS)) return decoder;
      // gone since it was found, or damaged: removed (the next start makes it again), and the full dictionary now
      await decoder?.free();
      dict.refused();
      return await Decoder.create(this.modelDir, path.join(this.modelDir, FULL_DICTIONARY), true, this.tuning);
    } finally {
      try {
        dict.release();
      } catch {
        /* a temporary file left in /tmp: not worth a decoder */
      }
    }
  }

  /** Sets the grammar for these story names, and the dictionary entries of its words. Names with a word the
   *  dictionary lacks are left out (JSGF cannot use them); without a dictionary, every story name. */
  private buildGrammar(storyNames: string[]): void {
    const candidates = new Set(grammarVocabulary(buildCommandGrammar(storyNames)));
    let entries: DictionaryEntry[];
    try {
      entries = readDictionaryEntries(path.join(this.modelDir, FULL_DICTIONARY), (w) => candidates.has(w));
    } catch {
      // unreadable now: the story names are dropped, the command words keep what was read before (at the start,
      // nothing: ps_init of the language-model decoder then fails with a clear error)
      entries = this.grammarEntries.filter((e) => candidates.has(e.word));
    }
    for (const [word, phones] of Object.entries(EXTRA_PRONUNCIATIONS)) {
      if (candidates.has(word) && !entries.some((e) => e.word === word)) entries.push({ word, head: word, phones });
    }
    const known = new Set(entries.map((e) => e.word));
    this.grammar = buildCommandGrammar(storyNames, (w) => known.has(w));
    const used = new Set(grammarVocabulary(this.grammar));
    this.grammarEntries = entries.filter((e) => used.has(e.word));
  }
}

class SphinxStream implements RecognizerStream {
  private pair: Pair | null = null;
  private readonly ready: Promise<Pair>;
  private batch: Int16Array = new Int16Array(BATCH_SAMPLES);
  private batched = 0;
  /** command mode: the utterance so far, for the grammar decoder's one call at end() */
  private readonly whole: Int16Array[] = [];
  private ops: Promise<unknown>[] = [];
  private failure: Error | null = null;
  private ended = false;
  private aborted = false;

  constructor(
    private readonly owner: PocketsphinxRecognizer,
    private readonly mode: RecognitionMode,
  ) {
    this.ready = owner.acquire().then(async (pair) => {
      this.pair = pair;
      if (this.aborted) {
        owner.release(pair);
        throw new SpeechError('ABORTED', 'recognition aborted');
      }
      const a = sphinx();
      await Promise.all(this.decoders(pair).map((d) => d.run(async () => {
        if ((await call<number>(a.startUtt, d.ps)) < 0) throw new SpeechError('RECOGNIZER_FAILED', 'ps_start_utt failed');
      })));
      return pair;
    });
    this.ready.catch((err: Error) => {
      this.failure ??= err;
    });
  }

  private decoders(pair: Pair): Decoder[] {
    return this.mode === 'command' ? [pair.grammar, pair.lm] : [pair.lm];
  }

  write(pcm16k: Int16Array): void {
    if (this.ended || this.aborted) return;
    let i = 0;
    while (i < pcm16k.length) {
      const n = Math.min(pcm16k.length - i, BATCH_SAMPLES - this.batched);
      this.batch.set(pcm16k.subarray(i, i + n), this.batched);
      this.batched += n;
      i += n;
      if (this.batched === BATCH_SAMPLES) this.flush();
    }
  }

  private flush(): void {
    if (this.batched === 0) return;
    const data = this.batch.subarray(0, this.batched);
    this.batch = new Int16Array(BATCH_SAMPLES); // the submitted one stays untouched until decoded
    this.batched = 0;
    if (this.mode === 'command') this.whole.push(data);
    const a = sphinx();
    const op = this.ready.then((pair) =>
      pair.lm.run(async () => {
        if (this.aborted) return;
        if ((await call<number>(a.processRaw, pair.lm.ps, data, data.length, 0, 0)) < 0) throw new SpeechError('RECOGNIZER_FAILED', 'ps_process_raw failed');
      }),
    );
    op.catch((err: Error) => {
      this.failure ??= err;
    });
    this.ops.push(op);
    if (this.ops.length > 64) this.ops = this.ops.slice(-1); // chained per decoder: the last one implies the rest
  }

  async end(): Promise<Recognition> {
    if (this.aborted) throw new SpeechError('ABORTED', 'recognition aborted');
    if (this.ended) throw new SpeechError('INVALID_ARGUMENT', 'end() called twice');
    this.ended = true;
    this.flush();
    let pair: Pair;
    try {
      pair = await this.ready;
      await Promise.allSettled(this.ops);
    } catch (err) {
      throw this.aborted ? new SpeechError('ABORTED', 'recognition aborted') : wrap(err);
    }
    const a = sphinx();
    const whole = this.mode === 'command' ? concatPcm(this.whole.splice(0)) : undefined;
    try {
      const hyps = await Promise.all(
        this.decoders(pair).map((d) =>
          d.run(async () => {
            if (d === pair.grammar && whole && whole.length > 0 && !this.aborted) {
              if ((await call<number>(a.processRaw, d.ps, whole, whole.length, 0, 1)) < 0) throw new SpeechError('RECOGNIZER_FAILED', 'ps_process_raw failed');
            }
            await call(a.endUtt, d.ps);
            const score = [0];
            const hyp = await call<string | null>(a.getHyp, d.ps, score);
            return { text: (hyp ?? '').trim(), score: score[0] };
          }),
        ),
      );
      if (this.aborted) throw new SpeechError('ABORTED', 'recognition aborted');
      if (this.failure) throw this.failure;
      return this.mode === 'command' ? chooseResult(hyps[0], hyps[1]) : { text: hyps[0].text, grammarMatch: false };
    } catch (err) {
      throw wrap(err);
    } finally {
      this.owner.release(pair);
    }
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.whole.length = 0;
    if (this.ended) return; // end() settles and releases
    this.ended = true;
    // close the utterance so the pair is clean for the next user, then release it
    this.ready
      .then(async (pair) => {
        await Promise.allSettled(this.ops);
        const a = sphinx();
        await Promise.allSettled(this.decoders(pair).map((d) => d.run(() => call(a.endUtt, d.ps))));
        this.owner.release(pair);
      })
      .catch(() => {});
  }
}

function wrap(err: unknown): SpeechError {
  return err instanceof SpeechError ? err : new SpeechError('RECOGNIZER_FAILED', 'pocketsphinx failed', { cause: err });
}

export interface Hypothesis {
  text: string;
  /** ps_get_hyp's path score (log domain, <= 0); 0 when there is no hypothesis */
  score: number;
}

/** Decides between the grammar decoder's and the language-model decoder's hypotheses for one utterance.
 *  The grammar result is taken when
 *   (a) the free transcript agrees with it (at least 60 % of its words found there, fuzzily), or
 *   (b) the grammar path scores far better than the free path (at most half its log-score magnitude) and the
 *       free transcript does not hear many more words than the command has (a long out-of-grammar sentence
 *       forced onto a one-word command like "hello" fails this).
 *  Otherwise the free transcript is returned with grammarMatch false. Tuned on flite and espeak voices. */
export function chooseResult(grammar: Hypothesis | string, lm: Hypothesis | string): Recognition {
  const g = typeof grammar === 'string' ? { text: grammar, score: 0 } : grammar;
  const l = typeof lm === 'string' ? { text: lm, score: 0 } : lm;
  if (!g.text) return { text: l.text, grammarMatch: false };
  const gWords = g.text.split(/\s+/);
  const lWords = l.text.split(/\s+/).filter(Boolean);
  const agreement = gWords.filter((w) => lWords.some((x) => similarWord(w, x))).length / gWords.length;
  if (agreement >= 0.6) return { text: g.text, grammarMatch: true, confidence: agreement };
  const ratio = l.score < 0 && g.score < 0 ? g.score / l.score : Infinity;
  if (ratio <= 0.5 && lWords.length <= 2 * gWords.length + 1) {
    return { text: g.text, grammarMatch: true, confidence: Math.max(agreement, 1 - ratio) * 0.9 };
  }
  return { text: l.text, grammarMatch: false };
}

function similarWord(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length < 4 || b.length < 4) return false;
  return editDistance(a, b) <= 1 + (Math.min(a.length, b.length) >= 7 ? 1 : 0);
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length];
}
