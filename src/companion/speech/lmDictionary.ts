// The language-model decoder's dictionary: the CMU dictionary's entries for the words of the language model only.
//
// Why: pocketsphinx keeps every dictionary entry in memory, and its n-gram search leaves out the words its
// language model does not have, so they cost memory and are never heard. Debian's en-us model knows 72,546 words,
// the dictionary 134,723 entries: restricted to them (79,420 entries), a decoder holds 12 MB less, with the
// same transcripts and path scores (test/companion/speech/lmDictionary.test.ts decodes the same speech both ways).
// The model's words are read once through sphinxbase (ngram_model_read: about 0.3 s on x86-64, 30 MB for that
// time) and the file is kept in `cacheDir`, named by what it was made from, so a new Debian model makes a new one.
// Without a cache directory, or when it cannot be written or is not this user's own, the file is made in a private
// temporary directory for the decoder's start (pocketsphinx reads it whole at ps_init) and removed. Anything
// failing, or a file pocketsphinx refuses (pocketsphinxRecognizer.ts): the full dictionary.
import koffi from 'koffi';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { filterDictionary } from '../../common/cmuDictionary.js';
import { trimMalloc } from '../../common/memoryKeeper.js';

export const FULL_DICTIONARY = 'cmudict-en-us.dict';
export const LANGUAGE_MODEL = 'en-us.lm.bin';
const CACHE_PREFIX = 'lm-words-';

/** A dictionary file for ps_init; release() once the decoder is made (removes a temporary one). */
export interface DictionaryFile {
  path: string;
  /** the full dictionary, and why, when the restricted one could not be had */
  fallback?: string;
  release(): void;
  /** pocketsphinx refused the file: a cached one is removed, so that the next start makes it again */
  refused(): void;
}

interface NgramApi {
  logmathInit: (base: number, shift: number, useTable: number) => unknown;
  logmathFree: (lmath: unknown) => number;
  read: ((config: null, file: string, type: number, lmath: unknown) => unknown) & { async: (...args: unknown[]) => void };
  counts: (lm: unknown) => unknown;
  word: (lm: unknown, wid: number) => string | null;
  free: (lm: unknown) => number;
}

let ngramApi: NgramApi | undefined;
function ngram(): NgramApi {
  if (ngramApi) return ngramApi;
  const base = koffi.load('libsphinxbase.so.3');
  ngramApi = {
    logmathInit: base.func('void *logmath_init(double base, int shift, int use_table)') as NgramApi['logmathInit'],
    logmathFree: base.func('int logmath_free(void *lmath)') as NgramApi['logmathFree'],
    read: base.func('void *ngram_model_read(void *config, const char *file, int type, void *lmath)') as unknown as NgramApi['read'],
    counts: base.func('uint32_t *ngram_model_get_counts(void *model)') as NgramApi['counts'],
    word: base.func('const char *ngram_word(void *model, int32_t wid)') as NgramApi['word'],
    free: base.func('int ngram_model_free(void *model)') as NgramApi['free'],
  };
  return ngramApi;
}

const NGRAM_AUTO = 0;

/** The words of a language model file (its unigrams, <s> and </s> among them). */
export async function languageModelWords(lmFile: string, sync: boolean): Promise<Set<string>> {
  const a = ngram();
  const lmath = a.logmathInit(1.0001, 0, 0);
  try {
    const lm = sync
      ? a.read(null, lmFile, NGRAM_AUTO, lmath)
      : await new Promise<unknown>((resolve, reject) => a.read.async(null, lmFile, NGRAM_AUTO, lmath, (err: unknown, r: unknown) => (err ? reject(err) : resolve(r))));
    if (!lm) throw new Error(`sphinxbase could not read the language model ${lmFile}`);
    try {
      const unigrams = (koffi.decode(a.counts(lm), 'uint32_t', 1) as number[])[0];
      const words = new Set<string>();
      for (let wid = 0; wid < unigrams; wid++) {
        const w = a.word(lm, wid);
        if (w) words.add(w);
      }
      return words;
    } finally {
      a.free(lm);
    }
  } finally {
    a.logmathFree(lmath);
    trimMalloc(); // the model's 30 MB, freed, would otherwise stay inside malloc's arena
  }
}

/** The cache file's name: the dictionary and the model it was made from (path, size, time, inode). */
export function cacheName(modelDir: string): string {
  const id = [FULL_DICTIONARY, LANGUAGE_MODEL].map((f) => {
    const p = path.join(modelDir, f);
    const st = statSync(p);
    return [path.resolve(p), st.size, st.mtimeMs, st.ino];
  });
  return `${CACHE_PREFIX}${createHash('sha256').update(JSON.stringify(id)).digest('hex').slice(0, 16)}.dict`;
}

/** The dictionary for a decoder with `modelDir`'s language model: restricted to its words when that can be had. */
export async function languageModelDictionary(modelDir: string, opts: { cacheDir?: string; sync: boolean }): Promise<DictionaryFile> {
  const full = path.join(modelDir, FULL_DICTIONARY);
  const keep = (p: string, cached: boolean): DictionaryFile => ({
    path: p,
    release: () => {},
    refused: () => {
      if (cached) rmSync(p, { force: true });
    },
  });
  try {
    const name = cacheName(modelDir);
    const cacheDir = opts.cacheDir !== undefined && usableCacheDir(opts.cacheDir) ? opts.cacheDir : undefined;
    if (cacheDir && isOwnFile(path.join(cacheDir, name))) return keep(path.join(cacheDir, name), true);
    const words = await languageModelWords(path.join(modelDir, LANGUAGE_MODEL), opts.sync);
    const text = filterDictionary(full, (w) => words.has(w));
    const entries = countLines(text);
    // a dictionary that misses most of the model's words (another model's, a damaged file) would leave the
    // decoder deaf to them: the full one then, and nothing kept
    if (entries < words.size / 2) throw new Error(`${full} holds only ${entries} entries for the ${words.size} words of ${LANGUAGE_MODEL}`);
    if (cacheDir) {
      try {
        writeWhole(path.join(cacheDir, name), text);
      } catch {
        return temporaryFile(name, text); // a cache that cannot be written: a temporary file for this start
      }
      removeStale(cacheDir, name);
      return keep(path.join(cacheDir, name), true);
    }
    return temporaryFile(name, text);
  } catch (err) {
    return { ...keep(full, false), fallback: String((err as Error)?.message ?? err) };
  }
}

function temporaryFile(name: string, text: string): DictionaryFile {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'speaker-agent-dict-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    writeWhole(path.join(dir, name), text);
  } catch (err) {
    remove();
    throw err;
  }
  return { path: path.join(dir, name), release: remove, refused: () => {} };
}

/** Written whole under a temporary name, then renamed over `target`. Synchronously: in a decoding thread (nice 19,
 *  SCHED_IDLE) a file call on libuv's pool starts the pool's threads from that thread when they are not running
 *  yet, and they keep its priority, every later file, DNS and crypto call of the companion with them (Node 26
 *  in CI: 6 threads at SCHED_IDLE instead of the 2 decoding threads). Not fsynced: a cache file lost or damaged
 *  by a power cut is found (empty; the sentinel words in pocketsphinxRecognizer.ts) and made again. */
function writeWhole(target: string, text: string): void {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    writeFileSync(tmp, text, { flag: 'wx', mode: 0o600 });
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** The cache directory, made when missing, when it is this user's own real directory that nobody else may write.
 *  Not when root runs on a directory that is not root's (a service's data directory, by hand): the service could
 *  put a link there, and what root made there would not be the service's. */
function usableCacheDir(dir: string): boolean {
  const uid = process.getuid?.() ?? -1;
  try {
    if (uid === 0 && statSync(path.dirname(dir)).uid !== 0) return false;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** A regular file (not a link) of this user's, not empty. */
function isOwnFile(p: string): boolean {
  try {
    const st = lstatSync(p);
    return st.isFile() && st.uid === (process.getuid?.() ?? -1) && st.size > 0;
  } catch {
    return false;
  }
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Files made from an earlier model (a Debian upgrade), and temporary files a crashed start left (not this
 *  process's: another decoder thread may be writing one). Best effort: what cannot go stays. */
function removeStale(dir: string, current: string): void {
  try {
    for (const f of readdirSync(dir)) {
      const stale = f.startsWith(CACHE_PREFIX) ? f !== current : f.startsWith(`.${CACHE_PREFIX}`) && !f.includes(`.tmp-${process.pid}-`);
      if (stale) rmSync(path.join(dir, f), { force: true, recursive: true });
    }
  } catch {
    /* as it was */
  }
}
