// Keyphrase spotting with CMU pocketsphinx 5prealpha (Debian libpocketsphinx3 + pocketsphinx-en-us) through koffi,
// synchronous: it runs inside the wake worker thread (wakeWorker.ts), or directly in a benchmark that scans hours
// of audio faster than real time.
//
// - Dictionary: only the phrase's words, copied from Debian's cmudict-en-us.dict at start (the full dictionary
//   costs ~20 MB of RSS for 134k words the spotter never uses).
// - Detection time: 5prealpha's kws search has no segment iterator (and ps_get_n_frames lags the audio given), so
//   the end of the phrase is estimated from the audio given when ps_get_hyp first reports it: the search holds a
//   detection back for -kws_delay frames (to keep the best-scoring end); the lag from the real end to the report
//   was measured on the tuning set (REPORT_LAG_FRAMES). Audio is given to the decoder 10 ms at a time and the
//   hypothesis checked after each, so the estimate has a 10 ms step.
// - Memory stays flat: the utterance restarts after every detection and every RESTART_SAMPLES; a restart replays
//   the last OVERLAP_SAMPLES so a phrase spoken across it is still heard whole.
import koffi from 'koffi';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AgentError } from '../errors.js';
import { type DictionaryEntry, formatDictionary, readDictionaryEntries } from '../../common/cmuDictionary.js';

export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const FRAME = 160; // 10 ms at 16 kHz
const KWS_DELAY = 10; // frames, pocketsphinx's default -kws_delay
/** frames between the phrase's real end and the first report of it: p50 over the tuning clips at 10 dB SNR (the
 *  search reports a little before its kws_delay has passed: it counts frames after its own feature lag) */
export const REPORT_LAG_FRAMES = 8;
const RESTART_SAMPLES = 60 * 16000;
const OVERLAP_SAMPLES = 24000; // 1.5 s: longer than any wake phrase

export interface SpotterOptions {
  phrase: string;
  /** pocketsphinx -kws_threshold, p(phrase) / p(alternatives) needed: lower = more accepts (e.g. 1e-20) */
  threshold: number;
  /** pocketsphinx -kws_plp, the phone loop's probability (the "anything else" the phrase competes with): lower =
   *  more accepts. Default 0.1 (pocketsphinx's). */
  phoneLoopProb?: number;
  /** directory holding en-us/ and cmudict-en-us.dict (default Debian's) */
  modelDir?: string;
  /** more pocketsphinx options (tuning experiments), e.g. { '-kws_plp': '1e-2' } */
  extra?: Record<string, string>;
}

export interface Detection {
  phrase: string;
  /** index, in the 16 kHz stream given to process() since the start, of the sample just after the phrase */
  endSample: number;
  /** pocketsphinx's path score of the detection (log domain) */
  score: number;
}

type Fn = (...args: unknown[]) => unknown;
interface Api {
  cmdLnInit: Fn;
  /** the caller's reference to a configuration: ps_init keeps its own */
  cmdLnFree: Fn;
  psArgs: Fn;
  psInit: Fn;
  psFree: Fn;
  startUtt: Fn;
  endUtt: Fn;
  processRaw: Fn;
  getHyp: Fn;
}

let api: Api | undefined;
function sphinx(): Api {
  if (api) return api;
  try {
    const base = koffi.load('libsphinxbase.so.3');
    const lib = koffi.load('libpocketsphinx.so.3');
    // logging off process-wide (not -logfn: see the companion's pocketsphinxRecognizer.ts)
    base.func('void err_set_logfp(void *fp)')(null);
    api = {
      cmdLnInit: base.func('void *cmd_ln_init(void *inout, void *defn, int strict, ...)') as Fn,
      cmdLnFree: base.func('int cmd_ln_free_r(void *cmdln)') as Fn,
      psArgs: lib.func('void *ps_args()') as Fn,
      psInit: lib.func('void *ps_init(void *config)') as Fn,
      psFree: lib.func('int ps_free(void *ps)') as Fn,
      startUtt: lib.func('int ps_start_utt(void *ps)') as Fn,
      endUtt: lib.func('int ps_end_utt(void *ps)') as Fn,
      processRaw: lib.func('int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)') as Fn,
      getHyp: lib.func('const char *ps_get_hyp(void *ps, _Out_ int *score)') as Fn,
    };
    return api;
  } catch (cause) {
    throw new AgentError('audio', 'wake word engine: cannot load libpocketsphinx.so.3 (apt: libpocketsphinx3 pocketsphinx-en-us)', { cause });
  }
}

/** The phrase as dictionary words: lower case, punctuation dropped ("Hey, Computer!" -> ["hey", "computer"]). */
export function phraseWords(phrase: string): string[] {
  return phrase
    .toLowerCase()
    .replace(/[^a-z' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** The dictionary lines (every pronunciation) of the phrase's words; a clear error for a word it does not hold. */
export function phraseDictionary(words: string[], modelDir = DEFAULT_MODEL_DIR): string {
  const file = path.join(modelDir, 'cmudict-en-us.dict');
  const wanted = new Set(words);
  let entries: DictionaryEntry[];
  try {
    entries = readDictionaryEntries(file, (w) => wanted.has(w));
  } catch (cause) {
    throw new AgentError('audio', `wake word engine: cannot read the pronunciation dictionary ${file} (apt: pocketsphinx-en-us)`, { cause });
  }
  const found = new Set(entries.map((e) => e.word));
  const missing = words.filter((w) => !found.has(w));
  if (missing.length) {
    throw new AgentError('config_invalid', `wake phrase: ${missing.map((w) => `"${w}"`).join(', ')} not in the pocketsphinx dictionary (${file}); choose words it knows`);
  }
  return formatDictionary(entries);
}

export class KeyphraseSpotter {
  readonly phrase: string;
  private ps: unknown;
  private readonly a: Api;
  /** samples given to the decoder since the start (absolute) */
  private fed = 0;
  /** absolute sample index at which the current utterance started */
  private uttStart = 0;
  /** the last OVERLAP_SAMPLES (a ring), replayed into a fresh utterance after a periodic restart */
  private readonly recent = new Int16Array(OVERLAP_SAMPLES);
  private pending = new Int16Array(FRAME);
  private pendingN = 0;
  private readonly score = [0];
  private lastEnd = -1;

  constructor(o: SpotterOptions) {
    const words = phraseWords(o.phrase);
    if (words.length === 0) throw new AgentError('config_invalid', 'wake phrase is empty');
    for (const [k, v] of [['threshold', o.threshold], ['phoneLoopProb', o.phoneLoopProb ?? 0.1]] as const) {
      if (!(v > 0) || !Number.isFinite(v)) throw new AgentError('config_invalid', `wake ${k} must be a positive number, got ${v}`);
    }
    this.phrase = words.join(' ');
    const modelDir = o.modelDir ?? DEFAULT_MODEL_DIR;
    const dict = phraseDictionary(words, modelDir);
    this.a = sphinx();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'wake-dict-'));
    try {
      const dictFile = path.join(dir, 'phrase.dict');
      writeFileSync(dictFile, dict);
      const s = 'const char *';
      const args: unknown[] = [null, this.a.psArgs(), 1,
        s, '-hmm', s, path.join(modelDir, 'en-us'),
        s, '-dict', s, dictFile,
        s, '-keyphrase', s, this.phrase,
        s, '-kws_threshold', s, o.threshold.toExponential(),
        s, '-kws_delay', s, String(KWS_DELAY),
        s, '-kws_plp', s, (o.phoneLoopProb ?? 0.1).toExponential(),
        ...Object.entries(o.extra ?? {}).flatMap(([k, v]) => [s, k, s, v]),
        s, null];
      const config = this.a.cmdLnInit(...args);
      if (!config) throw new AgentError('audio', 'wake word engine: pocketsphinx rejected its configuration');
      try {
        this.ps = this.a.psInit(config);
      } finally {
        this.a.cmdLnFree(config);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    if (!this.ps) throw new AgentError('audio', `wake word engine: pocketsphinx could not load its acoustic model from ${path.join(modelDir, 'en-us')} (apt: pocketsphinx-en-us)`);
    this.start();
  }

  /** Decodes 16 kHz mono samples; returns the detections whose phrase ended in them (usually none). */
  process(pcm16k: Int16Array): Detection[] {
    if (!this.ps) throw new AgentError('internal', 'wake word engine: spotter is closed');
    const out: Detection[] = [];
    let i = 0;
    while (i < pcm16k.length) {
      const n = Math.min(FRAME - this.pendingN, pcm16k.length - i);
      this.pending.set(pcm16k.subarray(i, i + n), this.pendingN);
      this.pendingN += n;
      i += n;
      if (this.pendingN < FRAME) break;
      this.pendingN = 0;
      const d = this.step(this.pending);
      if (d) out.push(d);
    }
    return out;
  }

  close(): void {
    if (!this.ps) return;
    this.a.endUtt(this.ps);
    this.a.psFree(this.ps);
    this.ps = undefined;
  }

  private start(): void {
    if ((this.a.startUtt(this.ps) as number) < 0) throw new AgentError('audio', 'wake word engine: ps_start_utt failed');
    this.uttStart = this.fed;
  }

  private step(frame: Int16Array): Detection | undefined {
    this.a.processRaw(this.ps, frame, FRAME, 0, 0);
    this.recent.set(frame, this.fed % OVERLAP_SAMPLES); // OVERLAP_SAMPLES is a multiple of FRAME
    this.fed += FRAME;
    const hyp = this.a.getHyp(this.ps, this.score) as string | null;
    if (hyp) {
      const endSample = Math.max(this.uttStart, this.fed - REPORT_LAG_FRAMES * FRAME);
      const score = this.score[0];
      this.a.endUtt(this.ps);
      this.start();
      if (endSample <= this.lastEnd) return undefined; // the same phrase heard again in a replayed overlap
      this.lastEnd = endSample;
      return { phrase: this.phrase, endSample, score };
    }
    if (this.fed - this.uttStart >= RESTART_SAMPLES) this.restart();
    return undefined;
  }

  /** A fresh utterance that first hears the last OVERLAP_SAMPLES again (no detection can come from those alone
   *  that was not reported before, but a phrase cut by the restart is completed by what follows). */
  private restart(): void {
    this.a.endUtt(this.ps);
    if ((this.a.startUtt(this.ps) as number) < 0) throw new AgentError('audio', 'wake word engine: ps_start_utt failed');
    const k = this.fed % OVERLAP_SAMPLES;
    const replay = new Int16Array(OVERLAP_SAMPLES);
    replay.set(this.recent.subarray(k));
    replay.set(this.recent.subarray(0, k), OVERLAP_SAMPLES - k);
    this.a.processRaw(this.ps, replay, replay.length, 0, 0);
    this.uttStart = this.fed - OVERLAP_SAMPLES;
  }
}
