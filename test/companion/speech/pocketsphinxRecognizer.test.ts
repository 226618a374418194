import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseResult, PocketsphinxRecognizer } from '../../../src/companion/speech/pocketsphinxRecognizer.js';
import { EXTRA_PRONUNCIATIONS, grammarVocabulary, spokenNumberToInt } from '../../../src/companion/speech/commandGrammar.js';
import { FULL_DICT, MODEL_DIR, RawDecoder } from '../../support/sphinxDecoder.js';
import { cacheName } from '../../../src/companion/speech/lmDictionary.js';
import { concatPcm, fliteSpeech, frames } from './speechFixtures.js';

let rec: PocketsphinxRecognizer;
beforeAll(async () => {
  rec = new PocketsphinxRecognizer({ storyNames: ['The Little Red Hen', 'Goldilocks'] });
  await rec.warmUp();
}, 60_000);
afterAll(async () => {
  await rec.close();
});

const speech = (text: string, voice = 'slt') => concatPcm(new Int16Array(4000), fliteSpeech(text, 16000, voice), new Int16Array(4000));

describe('PocketsphinxRecognizer', () => {
  it('recognises "set the volume to forty percent" through the grammar, and the number converts', async () => {
    const r = await rec.recognize(speech('set the volume to forty percent'));
    expect(r.grammarMatch).toBe(true);
    expect(r.text).toContain('forty percent');
    expect(spokenNumberToInt(/to (.+) percent/.exec(r.text)![1])).toBe(40);
  });

  it('recognises "what time is it" and "turn it up"', async () => {
    expect(await rec.recognize(speech('what time is it'))).toMatchObject({ text: 'what time is it', grammarMatch: true });
    expect(await rec.recognize(speech('turn it up'))).toMatchObject({ text: 'turn it up', grammarMatch: true });
  });

  it('recognises a dynamic story name', async () => {
    const r = await rec.recognize(speech('read me the story the little red hen'));
    expect(r.grammarMatch).toBe(true);
    expect(r.text).toContain('little red hen');
  });

  it('falls back to the language model for speech outside the grammar', async () => {
    const r = await rec.recognize(speech('the weather is lovely today and I would like a cup of tea'));
    expect(r.grammarMatch).toBe(false);
    expect(r.text).toMatch(/weather/);
    expect(r.text.split(' ').length).toBeGreaterThan(5);
  });

  it('streams 20 ms frames while speaking (dictation mode gives a transcript)', async () => {
    const s = rec.createStream({ mode: 'dictation' });
    for (const f of frames(speech('the children are reading a story in the garden', 'kal'), 320)) s.write(f);
    const r = await s.end();
    expect(r.grammarMatch).toBe(false);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.text).toMatch(/story|garden|children/);
  });

  it('decodes two streams at once and survives an aborted stream', async () => {
    const aborted = rec.createStream();
    aborted.write(speech('stop'));
    aborted.abort();
    const [a, b] = await Promise.all([rec.recognize(speech('volume down')), rec.recognize(speech('what can you do'))]);
    expect(a).toMatchObject({ text: 'volume down', grammarMatch: true });
    expect(b).toMatchObject({ text: 'what can you do', grammarMatch: true });
    const late = rec.createStream();
    late.abort();
    await expect(late.end()).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it('gives silence an empty transcript rather than an error', async () => {
    const r = await rec.recognize(new Int16Array(16000));
    expect(r.grammarMatch).toBe(false);
    expect(r.text).toBe('');
  });

  it('hears a command the same whatever the decoder heard before (a quiet speaker first)', async () => {
    // One decoder pair, so the command meets the decoders that heard the quiet speaker. Streamed, the grammar
    // decoder normalised with the previous utterances' cepstral mean: "fifty" was heard as "sixty" here.
    const one = new PocketsphinxRecognizer({ maxConcurrent: 1 });
    try {
      const quiet = speech('the children are reading a story in the garden and the weather is lovely', 'kal').map((v) => Math.round(v * 0.02));
      for (let i = 0; i < 2; i++) await one.recognize(quiet);
      for (const n of ['forty', 'fifty', 'sixty']) {
        expect(await one.recognize(speech(`set the volume to ${n} percent`))).toMatchObject({ text: `set the volume to ${n} percent`, grammarMatch: true });
      }
    } finally {
      await one.close();
    }
  });

  it("gives the grammar decoder every pronunciation of the grammar's words and nothing else", () => {
    const words = grammarVocabulary(rec.grammarText);
    const entries = rec.grammarDictionary;
    expect(new Set(entries.map((e) => e.word))).toEqual(new Set(words));
    expect(entries.filter((e) => e.word === 'read').map((e) => e.head)).toEqual(['read', 'read(2)']);
    expect(entries.find((e) => e.word === 'unmute')).toEqual({ word: 'unmute', head: 'unmute', phones: EXTRA_PRONUNCIATIONS.unmute });
    expect(entries.length).toBeLessThan(200);
  });

  it('decodes the same commands with the same path scores as a grammar decoder with the full dictionary', () => {
    const withFull = RawDecoder.create({ dict: FULL_DICT });
    const asMade = RawDecoder.create({ dict: '/dev/null' });
    try {
      for (const [w, phones] of Object.entries(EXTRA_PRONUNCIATIONS)) withFull.addWord(w, phones);
      withFull.setGrammar(rec.grammarText);
      for (const e of rec.grammarDictionary) asMade.addWord(e.head, e.phones);
      asMade.setGrammar(rec.grammarText);
      const texts = ['set the volume to seventy five percent', 'read me the story the little red hen', 'unmute', 'the weather is lovely today and I would like a cup of tea', 'I think the answer is forty two'];
      for (const voice of ['slt', 'awb']) {
        for (const t of texts) {
          const a = withFull.decode(speech(t, voice), false);
          expect(a.text.length).toBeGreaterThan(0);
          expect(asMade.decode(speech(t, voice), false)).toEqual(a);
        }
      }
    } finally {
      withFull.close();
      asMade.close();
    }
  }, 60_000);

  it('gives the grammar decoder the words of a story name it had not heard of', async () => {
    rec.setStoryNames(['The Gingerbread Man']);
    try {
      expect(rec.grammarDictionary.map((e) => e.head)).toContain('gingerbread');
      const r = await rec.recognize(speech('read me the story the gingerbread man'));
      expect(r).toMatchObject({ grammarMatch: true });
      expect(r.text).toContain('gingerbread man');
    } finally {
      rec.setStoryNames(['The Little Red Hen', 'Goldilocks']);
    }
  });

  it('a pronunciation pocketsphinx rejects fails that utterance with a clear error; the decoders stay usable', async () => {
    // a model directory whose dictionary has a story word with phones the acoustic model lacks
    const model = mkdtempSync(path.join(os.tmpdir(), 'sphinx-model-'));
    symlinkSync(path.join(MODEL_DIR, 'en-us'), path.join(model, 'en-us'));
    symlinkSync(path.join(MODEL_DIR, 'en-us.lm.bin'), path.join(model, 'en-us.lm.bin'));
    writeFileSync(path.join(model, 'cmudict-en-us.dict'), readFileSync(FULL_DICT, 'utf8') + 'zzyzx ZZ QQ\n');
    const one = new PocketsphinxRecognizer({ modelDir: model, maxConcurrent: 1, storyNames: ['Zzyzx'] });
    try {
      await expect(one.recognize(speech('turn it up'))).rejects.toMatchObject({ code: 'RECOGNIZER_FAILED', message: expect.stringMatching(/pronunciation of "zzyzx"/) });
      one.setStoryNames(['Goldilocks']); // the one pair was given back: the next utterance gets it
      expect(await one.recognize(speech('turn it up'))).toMatchObject({ text: 'turn it up', grammarMatch: true });
    } finally {
      await one.close();
      rmSync(model, { recursive: true, force: true });
    }
  }, 60_000);

  it('a damaged cached dictionary is not used: the full one now, and the next start makes it again', async () => {
    const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'sphinx-cache-'));
    const cached = path.join(cacheDir, cacheName(MODEL_DIR));
    writeFileSync(cached, 'garbage G AA R B IH JH\n', { mode: 0o600 }); // pocketsphinx starts on it, knowing one word
    const one = new PocketsphinxRecognizer({ maxConcurrent: 1, cacheDir });
    try {
      await one.warmUp();
      expect(existsSync(cached)).toBe(false);
      const r = await one.recognize(speech('the weather is lovely today and I would like a cup of tea'), { mode: 'dictation' });
      expect(r.text).toMatch(/weather/);
    } finally {
      await one.close();
    }
    const next = new PocketsphinxRecognizer({ maxConcurrent: 1, cacheDir });
    try {
      await next.warmUp();
      expect(statSync(cached).size).toBeGreaterThan(1_000_000);
    } finally {
      await next.close();
      rmSync(cacheDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('applies new story names to the next utterance', async () => {
    rec.setStoryNames(['Goldilocks']);
    expect(rec.grammarText).toContain('<story_name> = goldilocks;');
    const r = await rec.recognize(speech('read the story goldilocks'));
    expect(r).toMatchObject({ grammarMatch: true });
    expect(r.text).toContain('goldilocks');
  });
});

describe('chooseResult', () => {
  it('keeps the grammar result only when the free transcript agrees with it', () => {
    expect(chooseResult('turn it up', 'turned it up')).toMatchObject({ text: 'turn it up', grammarMatch: true });
    expect(chooseResult('what time is it', 'the weather is nice')).toEqual({ text: 'the weather is nice', grammarMatch: false });
    expect(chooseResult('', 'hello there')).toEqual({ text: 'hello there', grammarMatch: false });
  });

  it('also keeps a grammar result that scores far better, unless the free transcript hears a longer sentence', () => {
    // measured: flite "read me a story" -> LM "red meat and glory"
    expect(chooseResult({ text: 'read me a story', score: -2930 }, { text: 'red meat and glory', score: -7636 })).toMatchObject({ text: 'read me a story', grammarMatch: true });
    // measured: espeak "call my mother please" forced onto "hello"
    expect(chooseResult({ text: 'hello', score: -3390 }, { text: 'so i was nice', score: -8962 })).toEqual({ text: 'so i was nice', grammarMatch: false });
    // measured: flite "the weather is lovely today" forced onto "what can you do" (scores too close)
    expect(chooseResult({ text: 'what can you do', score: -8001 }, { text: "whether it's hot we didn't", score: -9665 })).toMatchObject({ grammarMatch: false });
  });
});
