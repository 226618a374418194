import { describe, expect, it } from 'vitest';
import { splitForSynthesis, tokenize, WordTimingBuilder } from '../../../src/companion/speech/wordTimings.js';

describe('splitForSynthesis', () => {
  it('covers the text exactly, cuts at sentence ends, keeps the first chunk short', () => {
    let text = '';
    for (let i = 0; i < 60; i++) text += `Sentence number ${i} is here! Another one? `;
    const chunks = splitForSynthesis(text, 500, 160);
    expect(chunks.map((c) => c.text).join('')).toBe(text);
    for (const c of chunks) expect(text.slice(c.offset, c.offset + c.text.length)).toBe(c.text);
    expect(chunks[0].text.length).toBeLessThanOrEqual(160);
    for (const c of chunks.slice(0, -1)) {
      expect(c.text.length).toBeLessThanOrEqual(500);
      expect(c.text).toMatch(/[!?]\s$/);
    }
  });

  it('splits run-on text at white space and never inside a word or surrogate pair', () => {
    const text = 'word '.repeat(400) + '😀'.repeat(300);
    const chunks = splitForSynthesis(text, 500, 160);
    expect(chunks.map((c) => c.text).join('')).toBe(text);
    for (const c of chunks) expect(c.text).not.toMatch(/^[\udc00-\udfff]/);
    for (const c of chunks.slice(0, -1)) if (c.offset < 2000) expect(c.text.endsWith(' ')).toBe(true);
  });
});

describe('tokenize and WordTimingBuilder', () => {
  it('tokenizes with UTF-16 offsets and code-point positions', () => {
    const t = tokenize('a 😀b  c', 10);
    expect(t.map((x) => [x.word, x.offset, x.cpStart, x.cpEnd])).toEqual([
      ['a', 10, 0, 1],
      ['😀b', 12, 2, 4],
      ['c', 17, 6, 7],
    ]);
  });

  it('maps multi-event words once, fills unspoken words, and ends words at clause ends', () => {
    // "I have 12 - apples." : espeak speaks "twelve" (1 event), nothing for "-", and ends the clause
    const text = 'I have 12 - apples.';
    const b = new WordTimingBuilder(1000); // 1 sample = 1 ms for readability
    b.addChunk(text, 0, [
      { type: 1, textPosition: 1, sample: 0 },
      { type: 1, textPosition: 3, sample: 100 },
      { type: 1, textPosition: 8, sample: 300 },
      { type: 1, textPosition: 8, sample: 400 }, // second event of the same number: ignored
      { type: 1, textPosition: 13, sample: 600 },
      { type: 5, textPosition: 19, sample: 900 },
    ], 0, 1200);
    b.addChunk('Next.', 20, [{ type: 1, textPosition: 1, sample: 50 }, { type: 5, textPosition: 6, sample: 400 }], 1200, 600);
    expect(b.result()).toEqual([
      { word: 'I', startMs: 0, endMs: 100, textOffset: 0, textLength: 1 },
      { word: 'have', startMs: 100, endMs: 300, textOffset: 2, textLength: 4 },
      { word: '12', startMs: 300, endMs: 600, textOffset: 7, textLength: 2 },
      { word: '-', startMs: 600, endMs: 600, textOffset: 10, textLength: 1 },
      { word: 'apples.', startMs: 600, endMs: 900, textOffset: 12, textLength: 7 },
      { word: 'Next.', startMs: 1250, endMs: 1600, textOffset: 20, textLength: 5 },
    ]);
  });
});
