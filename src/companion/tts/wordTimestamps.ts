// Turns the synthesiser's word events into the API's timestamps: one entry per word of the caller's text, in
// order, monotonic and within the audio. The engine speaks "42" as "forty two" and "Dr." as "doctor", and
// reports each spoken word with its position in the input text; grouping events by the text word that
// contains that position maps numbers, abbreviations and punctuation back to the words the caller wrote.
import type { WordTiming } from '../speech/synthesizer.js';

export interface ApiWordTimestamp {
  word: string;
  start_ms: number;
  end_ms: number;
}

export interface TextWord {
  word: string;
  /** span of the whole whitespace-delimited token (punctuation included), UTF-16 offsets */
  tokenStart: number;
  tokenEnd: number;
}

const HAS_WORD_CHAR = /[\p{L}\p{N}]/u;
const EDGE_PUNCT = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;

/** The words of a text: whitespace-separated tokens with surrounding punctuation removed; tokens that are
 *  only punctuation ("—", "...") are not words. */
export function textWords(text: string): TextWord[] {
  const out: TextWord[] = [];
  for (const m of text.matchAll(/\S+/g)) {
    const token = m[0];
    if (!HAS_WORD_CHAR.test(token)) continue;
    out.push({ word: token.replace(EDGE_PUNCT, ''), tokenStart: m.index, tokenEnd: m.index + token.length });
  }
  return out;
}

export function alignWordTimestamps(text: string, events: readonly WordTiming[], durationMs: number): ApiWordTimestamp[] {
  const words = textWords(text);
  const n = words.length;
  const start = new Array<number>(n).fill(NaN);
  const end = new Array<number>(n).fill(NaN);

  // events arrive in text order; walk both lists once
  let wi = 0;
  for (const e of events) {
    const pos = e.textOffset;
    while (wi < n && words[wi].tokenEnd <= pos) wi++;
    if (wi >= n) break;
    // an event between tokens (whitespace) belongs to the next word
    const i = wi;
    start[i] = Number.isNaN(start[i]) ? e.startMs : Math.min(start[i], e.startMs);
    end[i] = Number.isNaN(end[i]) ? e.endMs : Math.max(end[i], e.endMs);
  }

  // words the engine did not report (rare: symbols it skips) share the gap between their neighbours
  let i = 0;
  while (i < n) {
    if (!Number.isNaN(start[i])) {
      i++;
      continue;
    }
    let j = i;
    while (j < n && Number.isNaN(start[j])) j++;
    const from = i > 0 ? end[i - 1] : 0;
    const to = j < n ? start[j] : durationMs;
    const span = Math.max(0, to - from) / (j - i);
    for (let k = i; k < j; k++) {
      start[k] = from + span * (k - i);
      end[k] = from + span * (k - i + 1);
    }
    i = j;
  }

  const out: ApiWordTimestamp[] = [];
  let prevEnd = 0;
  const total = Math.max(0, Math.floor(durationMs));
  for (let k = 0; k < n; k++) {
    const s = Math.min(total, Math.max(prevEnd, Math.round(start[k])));
    const e = Math.min(total, Math.max(s, Math.round(end[k])));
    out.push({ word: words[k].word, start_ms: s, end_ms: e });
    prevEnd = e;
  }
  return out;
}
