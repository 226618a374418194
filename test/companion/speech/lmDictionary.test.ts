import { chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheName, languageModelDictionary, languageModelWords } from '../../../src/companion/speech/lmDictionary.js';
import { DEFAULT_LM_TUNING } from '../../../src/companion/speech/pocketsphinxRecognizer.js';
import { FULL_DICT, MODEL_DIR, RawDecoder } from '../../support/sphinxDecoder.js';
import { concatPcm, fliteSpeech } from './speechFixtures.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'lm-dict-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const LM = path.join(MODEL_DIR, 'en-us.lm.bin');

/** the words of a dictionary file's entries, parsed here independently of the module */
const wordsOf = (text: string) => text.split('\n').filter(Boolean).map((l) => l.slice(0, l.indexOf(' ')).replace(/\(\d+\)$/, ''));

let lmWords: Set<string>;
beforeAll(async () => {
  lmWords = await languageModelWords(LM, true);
}, 60_000);

describe('languageModelDictionary', () => {
  it("reads the language model's words", async () => {
    expect(lmWords.size).toBeGreaterThan(50_000);
    for (const w of ['weather', 'volume', 'goldilocks', '<s>', '</s>']) expect(lmWords.has(w)).toBe(true);
    const viaPool = await languageModelWords(LM, false); // on the libuv pool: the same words
    expect(viaPool.size).toBe(lmWords.size);
  });

  it('keeps every pronunciation of the words the model has, and only those, in a cache file named by its sources', async () => {
    const cacheDir = path.join(tmp, 'cache-a');
    const d = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
    expect(d.fallback).toBeUndefined();
    expect(d.path).toBe(path.join(cacheDir, cacheName(MODEL_DIR)));
    expect(statSync(d.path).mode & 0o777).toBe(0o600);
    const kept = readFileSync(d.path, 'utf8').split('\n').filter(Boolean);
    const full = readFileSync(FULL_DICT, 'utf8').split('\n').filter((l) => l.indexOf(' ') > 0);
    const expected = full.filter((l) => lmWords.has(wordsOf(l)[0]));
    expect(kept.length).toBe(expected.length);
    expect(kept.length).toBeLessThan(full.length * 0.7);
    const fullWords = new Set(wordsOf(full.join('\n')));
    expect(new Set(wordsOf(kept.join('\n'))).size).toBe([...lmWords].filter((w) => fullWords.has(w)).length);
    expect(kept).toContain('read R EH D');
    expect(kept).toContain('read(2) R IY D');
    const notInModel = wordsOf(full.join('\n')).find((w) => !lmWords.has(w))!;
    expect(wordsOf(kept.join('\n'))).not.toContain(notInModel);
    d.release();
    expect(existsSync(d.path)).toBe(true); // a cache file stays
  });

  it('uses the cache file at the next start, and removes what an earlier model or a crashed start left', async () => {
    const cacheDir = path.join(tmp, 'cache-b');
    const first = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
    const made = statSync(first.path);
    writeFileSync(path.join(cacheDir, 'lm-words-0123456789abcdef.dict'), 'old model\n');
    writeFileSync(path.join(cacheDir, `.${path.basename(first.path)}.tmp-1-abcd`), 'half\n');
    writeFileSync(path.join(cacheDir, 'other.txt'), 'kept\n');
    const t0 = performance.now();
    const again = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
    expect(again.path).toBe(first.path);
    expect(statSync(again.path).ino).toBe(made.ino); // not written again
    expect(performance.now() - t0).toBeLessThan(5000);
    // a new model (here: the dictionary touched) makes a new file and removes the others of its kind
    const model = path.join(tmp, 'model');
    mkdirSync(model);
    symlinkSync(path.join(MODEL_DIR, 'en-us'), path.join(model, 'en-us'));
    symlinkSync(LM, path.join(model, 'en-us.lm.bin'));
    copyFileSync(FULL_DICT, path.join(model, 'cmudict-en-us.dict'));
    utimesSync(path.join(model, 'cmudict-en-us.dict'), new Date(), new Date(Date.now() - 86_400_000));
    const next = await languageModelDictionary(model, { cacheDir, sync: true });
    expect(next.path).not.toBe(first.path);
    expect(readdirSync(cacheDir).sort()).toEqual([path.basename(next.path), 'other.txt'].sort());
  });

  it('without a cache directory, or with one it cannot write, makes a temporary file that release() removes', async () => {
    const notADir = path.join(tmp, 'a-file');
    writeFileSync(notADir, '');
    for (const cacheDir of [undefined, notADir, path.join(notADir, 'sub')]) {
      const d = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: false });
      expect(d.fallback).toBeUndefined();
      expect(d.path.startsWith(os.tmpdir())).toBe(true);
      expect(readFileSync(d.path, 'utf8').length).toBeGreaterThan(1_000_000);
      d.release();
      expect(existsSync(path.dirname(d.path))).toBe(false);
    }
  });

  it('does not use an empty cache file, a link in its place, or a directory of stale name; the cache stays usable', async () => {
    const cacheDir = path.join(tmp, 'cache-d');
    mkdirSync(cacheDir, { mode: 0o700 });
    const name = cacheName(MODEL_DIR);
    writeFileSync(path.join(cacheDir, name), '');
    const empty = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
    expect(empty.path).toBe(path.join(cacheDir, name));
    expect(statSync(empty.path).size).toBeGreaterThan(1_000_000);
    // a link where the file was (the directory's other user could not make one in a 0700 directory, but a
    // restore or a copy could): replaced by a file, its target untouched
    const target = path.join(tmp, 'link-target.txt');
    writeFileSync(target, 'not a dictionary\n');
    rmSync(empty.path);
    symlinkSync(target, empty.path);
    mkdirSync(path.join(cacheDir, 'lm-words-0000000000000000.dict')); // rmSync of a stale name fails on a directory
    const again = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
    expect(again.path).toBe(empty.path);
    expect(lstatSync(again.path).isFile()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('not a dictionary\n');
  });

  it('does not use a cache directory that is a link, or one others may write, and writes nothing through it', async () => {
    const real = path.join(tmp, 'real-dir');
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, path.join(tmp, 'linked-cache'));
    const open = path.join(tmp, 'open-cache');
    mkdirSync(open);
    chmodSync(open, 0o777);
    for (const cacheDir of [path.join(tmp, 'linked-cache'), open]) {
      const d = await languageModelDictionary(MODEL_DIR, { cacheDir, sync: true });
      expect(d.fallback).toBeUndefined();
      expect(d.path.startsWith(os.tmpdir()) && !d.path.startsWith(cacheDir)).toBe(true);
      d.release();
    }
    expect(readdirSync(real)).toEqual([]);
    expect(readdirSync(open)).toEqual([]);
  });

  it.skipIf(process.getuid?.() !== 0)("as root on a directory that is not root's (a service's, by hand): no cache there, nothing made root's", async () => {
    const dataDir = path.join(tmp, 'service-data');
    mkdirSync(dataDir, { mode: 0o700 });
    chownSync(dataDir, 4242, 4243);
    const d = await languageModelDictionary(MODEL_DIR, { cacheDir: path.join(dataDir, 'pocketsphinx'), sync: true });
    expect(d.fallback).toBeUndefined();
    expect(d.path.startsWith(dataDir)).toBe(false);
    d.release();
    expect(readdirSync(dataDir)).toEqual([]);
  });

  it("falls back to the full dictionary when the given one misses most of the model's words", async () => {
    const model = path.join(tmp, 'other-dict');
    mkdirSync(model);
    symlinkSync(LM, path.join(model, 'en-us.lm.bin'));
    writeFileSync(path.join(model, 'cmudict-en-us.dict'), 'hello HH AH L OW\nworld W ER L D\n');
    const d = await languageModelDictionary(model, { cacheDir: path.join(tmp, 'cache-e'), sync: true });
    expect(d.path).toBe(path.join(model, 'cmudict-en-us.dict'));
    expect(d.fallback).toMatch(/holds only 2 entries for the \d+ words/);
    expect(existsSync(path.join(tmp, 'cache-e', cacheName(model)))).toBe(false);
  });

  it('falls back to the full dictionary, with the reason, when the model cannot be read', async () => {
    const model = path.join(tmp, 'broken');
    mkdirSync(model);
    symlinkSync(FULL_DICT, path.join(model, 'cmudict-en-us.dict'));
    writeFileSync(path.join(model, 'en-us.lm.bin'), 'not a language model\n');
    const d = await languageModelDictionary(model, { cacheDir: path.join(tmp, 'cache-c'), sync: true });
    expect(d.path).toBe(path.join(model, 'cmudict-en-us.dict'));
    expect(d.fallback).toMatch(/could not read the language model/);
    const none = await languageModelDictionary(path.join(tmp, 'no-model'), { sync: true });
    expect(none.fallback).toMatch(/ENOENT/);
  });

  it('decodes the same transcripts with the same path scores as the full dictionary', async () => {
    const d = await languageModelDictionary(MODEL_DIR, { cacheDir: path.join(tmp, 'cache-a'), sync: true });
    const withFull = RawDecoder.create({ dict: FULL_DICT, lm: DEFAULT_LM_TUNING });
    const restricted = RawDecoder.create({ dict: d.path, lm: DEFAULT_LM_TUNING });
    try {
      const texts = ['the weather is lovely today and I would like a cup of tea', 'set the volume to forty percent', 'please call my mother tomorrow morning', 'read me the story goldilocks'];
      for (const voice of ['slt', 'kal']) {
        for (const t of texts) {
          const pcm = concatPcm(new Int16Array(4000), fliteSpeech(t, 16000, voice), new Int16Array(4000));
          const a = withFull.decode(pcm, true);
          expect(a.text.length).toBeGreaterThan(0);
          expect(restricted.decode(pcm, true)).toEqual(a);
        }
      }
    } finally {
      withFull.close();
      restricted.close();
    }
  }, 120_000);
});
