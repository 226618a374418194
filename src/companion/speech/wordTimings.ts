// Maps espeak's WORD/END events back onto the words of the input text. espeak reports a 1-based code-point
// position per spoken word; one written word may yield several events ("1234" -> "one thousand two hundred
// thirty four", "$5.50") or none (a lone dash). Contract for callers: every whitespace-separated word of the
// input appears exactly once, in order, with monotonic times; words espeak did not speak get a zero-length
// timing at the end of the previous word.
import type { WordTiming } from './synthesizer.js';

export interface TextToken {
  word: string;
  /** UTF-16 offset in the full text */
  offset: number;
  /** code-point range within its chunk */
  cpStart: number;
  cpEnd: number;
}

/** Whitespace-separated words of text, with JS offsets (plus base) and code-point offsets within text. */
export function tokenize(text: string, base = 0): TextToken[] {
  const tokens: TextToken[] = [];
  let cp = 0;
  let cur: TextToken | null = null;
  for (let i = 0; i < text.length; ) {
    const code = text.codePointAt(i)!;
    const len = code > 0xffff ? 2 : 1;
    if (/\s/u.test(String.fromCodePoint(code))) {
      if (cur) tokens.push(cur);
      cur = null;
    } else if (!cur) {
      cur = { word: text.slice(i, i + len), offset: base + i, cpStart: cp, cpEnd: cp + 1 };
    } else {
      cur.word += text.slice(i, i + len);
      cur.cpEnd = cp + 1;
    }
    i += len;
    cp++;
  }
  if (cur) tokens.push(cur);
  return tokens;
}

/** One espeak event, relative to the synthesis call of its chunk. */
export interface ChunkEvent {
  /** 1 = WORD, 5 = END (of clause/sentence) */
  type: number;
  /** 1-based code-point position in the chunk's text */
  textPosition: number;
  /** samples from the start of the chunk's audio */
  sample: number;
}

/** Accumulates word timings chunk by chunk, in order. */
export class WordTimingBuilder {
  private readonly words: WordTiming[] = [];
  private lastEndSample = 0;

  constructor(private readonly sampleRate: number) {}

  /** Adds one chunk: its text (offset = its position in the full text), its events, and where its audio starts. */
  addChunk(text: string, offset: number, events: ChunkEvent[], sampleOffset: number, chunkSamples: number): void {
    const tokens = tokenize(text, offset);
    if (tokens.length === 0) {
      this.lastEndSample = Math.max(this.lastEndSample, sampleOffset);
      return;
    }
    const start: (number | null)[] = new Array(tokens.length).fill(null);
    const end: (number | null)[] = new Array(tokens.length).fill(null);
    let t = 0; // token cursor: events arrive in text order
    let open = -1; // token whose end is not yet known
    for (const ev of events) {
      if (ev.type === 5) {
        if (open >= 0 && end[open] === null) end[open] = ev.sample;
        open = -1;
        continue;
      }
      if (ev.type !== 1) continue;
      const cp = ev.textPosition - 1;
      while (t < tokens.length && tokens[t].cpEnd <= cp) t++;
      // a position inside a token, or in white space after one (extra words of its expansion)
      const idx = t < tokens.length && tokens[t].cpStart <= cp ? t : t - 1;
      if (idx < 0 || start[idx] !== null) continue;
      if (open >= 0 && end[open] === null) end[open] = ev.sample;
      start[idx] = ev.sample;
      open = idx;
    }
    if (open >= 0 && end[open] === null) end[open] = chunkSamples;
    let prevEnd = this.lastEndSample;
    for (let i = 0; i < tokens.length; i++) {
      let s = start[i] === null ? null : start[i]! + sampleOffset;
      let e = end[i] === null ? null : end[i]! + sampleOffset;
      if (s === null) s = e = prevEnd; // unspoken: zero length where the previous word ended
      s = Math.max(s, prevEnd);
      e = Math.max(e ?? s, s);
      this.words.push({
        word: tokens[i].word,
        startMs: Math.round((s * 1000) / this.sampleRate),
        endMs: Math.round((e * 1000) / this.sampleRate),
        textOffset: tokens[i].offset,
        textLength: tokens[i].word.length,
      });
      prevEnd = e;
    }
    this.lastEndSample = Math.max(prevEnd, sampleOffset);
  }

  result(): WordTiming[] {
    return this.words;
  }
}

/** Splits text at sentence ends (or, for run-on text, at white space) into chunks of at most maxChars,
 *  the first at most firstMaxChars so a reply's first audio comes quickly. Chunks cover the text exactly. */
export function splitForSynthesis(text: string, maxChars = 500, firstMaxChars = 160): { text: string; offset: number }[] {
  const chunks: { text: string; offset: number }[] = [];
  let start = 0;
  while (start < text.length) {
    const limit = chunks.length === 0 ? firstMaxChars : maxChars;
    if (text.length - start <= limit) {
      chunks.push({ text: text.slice(start), offset: start });
      break;
    }
    const window = text.slice(start, start + limit);
    // last sentence end followed by white space within the window, else last white space, else hard cut
    let cut = -1;
    const re = /[.!?;:。！？\n]["'”’)\]]*\s/g;
    for (let m = re.exec(window); m; m = re.exec(window)) cut = m.index + m[0].length;
    if (cut <= 0) {
      const ws = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\n'), window.lastIndexOf('\t'));
      cut = ws > 0 ? ws + 1 : limit;
      // never split a surrogate pair
      if (ws <= 0 && /[\ud800-\udbff]/.test(text[start + cut - 1] ?? '')) cut--;
    }
    chunks.push({ text: text.slice(start, start + cut), offset: start });
    start += cut;
  }
  return chunks;
}
