import { describe, expect, it } from 'vitest';
import { alignWordTimestamps, textWords } from '../../../src/companion/tts/wordTimestamps.js';
import type { WordTiming } from '../../../src/companion/speech/synthesizer.js';

const ev = (text: string, at: string, startMs: number, endMs: number, from = 0): WordTiming => {
  const textOffset = text.indexOf(at, from);
  return { word: at, startMs, endMs, textOffset, textLength: at.length };
};

describe('textWords', () => {
  it('splits on white space, strips edge punctuation, drops punctuation-only tokens', () => {
    expect(textWords('Hello, Dr. Smith! — "42" cats... don\'t stop.').map((w) => w.word)).toEqual(['Hello', 'Dr', 'Smith', '42', 'cats', "don't", 'stop']);
  });
});

describe('alignWordTimestamps', () => {
  it('groups several spoken words of one written word (numbers) into one timing', () => {
    const text = 'I have 1234 cats.';
    // espeak says "one thousand two hundred and thirty four" with every event pointing into "1234"
    const events = [ev(text, 'I', 0, 100), ev(text, 'have', 100, 300), ...[300, 500, 700, 900].map((s) => ({ word: '1234', startMs: s, endMs: s + 200, textOffset: 7, textLength: 4 })), ev(text, 'cats', 1100, 1400)];
    expect(alignWordTimestamps(text, events, 1500)).toEqual([
      { word: 'I', start_ms: 0, end_ms: 100 },
      { word: 'have', start_ms: 100, end_ms: 300 },
      { word: '1234', start_ms: 300, end_ms: 1100 },
      { word: 'cats', start_ms: 1100, end_ms: 1400 },
    ]);
  });

  it('fills words the engine skipped from their neighbours, stays monotonic and inside the audio', () => {
    const text = 'one ### two three';
    const events = [ev(text, 'one', 0, 200), ev(text, 'two', 600, 800), ev(text, 'three', 790, 2100)];
    const out = alignWordTimestamps(text, events, 2000);
    expect(out.map((w) => w.word)).toEqual(['one', 'two', 'three']); // ### is not a word
    const text2 = 'one x9 two';
    const out2 = alignWordTimestamps(text2, [ev(text2, 'one', 0, 200), ev(text2, 'two', 600, 800)], 900);
    expect(out2).toEqual([
      { word: 'one', start_ms: 0, end_ms: 200 },
      { word: 'x9', start_ms: 200, end_ms: 600 },
      { word: 'two', start_ms: 600, end_ms: 800 },
    ]);
    // overlapping events are made monotonic; the last end is clipped to the duration
    expect(out[2]).toEqual({ word: 'three', start_ms: 800, end_ms: 2000 });
  });
});
