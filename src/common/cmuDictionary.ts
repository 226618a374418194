// The CMU pronouncing dictionary (Debian's pocketsphinx-en-us cmudict-en-us.dict), read for the few entries a
// decoder needs. pocketsphinx keeps every entry of the dictionary it is given in memory (134k entries, ~20 MB
// per decoder), so the agent's wake word spotter and the companion's decoders load only what they use.
// Format: one entry per line, "word phones...", a word's further pronunciations as "word(2)", "word(3)" after it.
import { readFileSync } from 'node:fs';

export interface DictionaryEntry {
  /** the word, without the "(2)" of a further pronunciation */
  word: string;
  /** as written: "read" or "read(2)" */
  head: string;
  /** CMU phones, space-separated */
  phones: string;
}

/** The word of an entry's head ("read(2)" -> "read"). */
export function dictionaryWord(head: string): string {
  return head.replace(/\(\d+\)$/, '');
}

/** Every entry (each pronunciation, in file order) of the words `keep` accepts. Throws the read error as is. */
export function readDictionaryEntries(file: string, keep: (word: string) => boolean): DictionaryEntry[] {
  const out: DictionaryEntry[] = [];
  eachEntry(readFileSync(file, 'utf8'), keep, (text, start, sp, end, word) => {
    out.push({ word, head: text.slice(start, sp), phones: text.slice(sp + 1, end).trim() });
  });
  return out;
}

/** The dictionary file's text with only the entries of the words `keep` accepts (for a large selection: no
 *  object per entry). Throws the read error as is. */
export function filterDictionary(file: string, keep: (word: string) => boolean): string {
  const parts: string[] = [];
  eachEntry(readFileSync(file, 'utf8'), keep, (text, start, _sp, end) => {
    parts.push(text.slice(start, end).trimEnd());
  });
  return parts.length ? parts.join('\n') + '\n' : '';
}

function eachEntry(text: string, keep: (word: string) => boolean, take: (text: string, start: number, sp: number, end: number, word: string) => void): void {
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const sp = text.indexOf(' ', start);
    if (sp > start && sp < end) {
      const word = dictionaryWord(text.slice(start, sp));
      if (keep(word)) take(text, start, sp, end, word);
    }
    start = end + 1;
  }
}

/** Entries as a dictionary file's text. */
export function formatDictionary(entries: readonly DictionaryEntry[]): string {
  return entries.map((e) => `${e.head} ${e.phones}\n`).join('');
}
