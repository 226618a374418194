// Adversarial negatives for a wake verifier, made BY RULE (openWakeWord's "adversarial phrases" idea), not by hand
// after seeing failures: the English words whose pronunciation is close to a target's by a weighted phoneme edit
// distance, from the CMU pronouncing dictionary (ARPAbet; the copy pocketsphinx ships), ranked by how common they
// are by the unigram probabilities of pocketsphinx's US English language model (so common words come first and the
// dictionary's tens of thousands of rare surnames only where they are close).
import { readFileSync } from 'node:fs';

export const CMUDICT = '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict';
export const LANGUAGE_MODEL = '/usr/share/pocketsphinx/model/en-us/en-us.lm.bin';

const VOWELS = new Set(['AA', 'AE', 'AH', 'AO', 'AW', 'AY', 'EH', 'ER', 'EY', 'IH', 'IY', 'OW', 'OY', 'UH', 'UW']);

/** Pairs that sound alike, and their substitution cost (any other pair: 0.6 vowel for vowel, 1 otherwise). */
const NEAR: [string, string, number][] = [
  // voicing pairs
  ...(['P B', 'T D', 'K G', 'CH JH', 'S Z', 'F V', 'TH DH', 'SH ZH'].map((p) => [...p.split(' '), 0.3]) as [string, string, number][]),
  // sibilants and affricates
  ['JH', 'ZH', 0.5], ['CH', 'SH', 0.5], ['JH', 'SH', 0.6], ['CH', 'ZH', 0.6], ['S', 'SH', 0.5], ['Z', 'ZH', 0.5], ['JH', 'D', 0.6], ['CH', 'T', 0.6], ['JH', 'Y', 0.7],
  // liquids and glides (and V, which a weak speaker blurs into W)
  ['L', 'R', 0.5], ['R', 'W', 0.5], ['W', 'V', 0.5], ['L', 'V', 0.6], ['R', 'V', 0.6], ['L', 'W', 0.6], ['W', 'Y', 0.6], ['L', 'Y', 0.7], ['V', 'B', 0.6],
  // other fricatives, nasals, stops of another place
  ['F', 'TH', 0.5], ['V', 'DH', 0.5], ['S', 'TH', 0.6], ['Z', 'DH', 0.6], ['HH', 'F', 0.8], ['HH', 'S', 0.8], ['HH', 'TH', 0.8],
  ['M', 'N', 0.5], ['N', 'NG', 0.5], ['M', 'NG', 0.6],
  ['P', 'T', 0.6], ['T', 'K', 0.6], ['P', 'K', 0.6], ['B', 'D', 0.6], ['D', 'G', 0.6], ['B', 'G', 0.6],
  // a consonant and its vowel
  ['R', 'ER', 0.5], ['W', 'UW', 0.5], ['Y', 'IY', 0.5],
  // vowels close to each other (height, backness; a diphthong and its start)
  ['IY', 'IH', 0.3], ['IH', 'EH', 0.3], ['EH', 'EY', 0.3], ['EY', 'IY', 0.4], ['EH', 'AE', 0.3], ['AE', 'AA', 0.4], ['AA', 'AO', 0.3], ['AA', 'AH', 0.3],
  ['AH', 'ER', 0.4], ['AH', 'IH', 0.4], ['AH', 'UH', 0.3], ['AO', 'OW', 0.3], ['OW', 'UH', 0.4], ['UH', 'UW', 0.3], ['AA', 'AY', 0.4], ['AA', 'AW', 0.4],
  ['AO', 'OY', 0.4], ['EY', 'AY', 0.4], ['AE', 'AY', 0.4], ['OW', 'AW', 0.4], ['AH', 'EH', 0.4], ['AO', 'AH', 0.4],
];
const near = new Map<string, number>();
for (const [a, b, c] of NEAR) {
  near.set(`${a} ${b}`, c);
  near.set(`${b} ${a}`, c);
}

export function substitutionCost(a: string, b: string): number {
  if (a === b) return 0;
  return near.get(`${a} ${b}`) ?? (VOWELS.has(a) && VOWELS.has(b) ? 0.6 : 1);
}

/** Weighted Levenshtein distance between two phoneme sequences (insertion and deletion cost 1). */
export function phonemeDistance(a: readonly string[], b: readonly string[]): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + substitutionCost(a[i - 1], b[j - 1]));
    prev = cur;
  }
  return prev[b.length];
}

/** word (lower case, without "(2)") -> its pronunciations, stress markers dropped. */
export function readCmuDict(file = CMUDICT): Map<string, string[][]> {
  const dict = new Map<string, string[][]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [head, ...phones] = line.trim().split(/\s+/);
    if (!head || phones.length === 0) continue;
    const word = head.replace(/\(\d+\)$/, '').toLowerCase();
    const list = dict.get(word) ?? [];
    list.push(phones.map((p) => p.replace(/\d$/, '')));
    dict.set(word, list);
  }
  return dict;
}

/**
 * word -> log10 unigram probability, from pocketsphinx's binary trie language model (pocketsphinx 5's format:
 * "Trie Language Model", the order, the n-gram counts, a quantisation block of (2 (order - 2) + 1) x 65536 floats,
 * then the unigrams {prob, backoff, next} in word-id order, and the vocabulary as NUL-ended strings at the end, in
 * the same order). Probabilities are stored in logmath units of base 1.0001.
 */
export function readUnigrams(file = LANGUAGE_MODEL): Map<string, number> {
  const d = readFileSync(file);
  const magic = 'Trie Language Model';
  if (d.toString('latin1', 0, magic.length) !== magic) throw new Error(`${file}: not a pocketsphinx trie language model`);
  let off = magic.length;
  const order = d.readUInt8(off++);
  const n = d.readUInt32LE(off);
  off += 4 * order + 4; // counts, then the quantisation type
  off += (2 * (order - 2) + 1) * 65536 * 4;
  const probs = Array.from({ length: n }, (_, i) => d.readFloatLE(off + 12 * i));
  // the vocabulary: the last n NUL-ended strings
  const words: string[] = [];
  let end = d.length - 1;
  while (d[end] === 0) end--;
  for (let i = end; words.length < n && i >= 0; i--) {
    if (d[i - 1] === 0 || i === 0) {
      words.push(d.toString('latin1', i, d.indexOf(0, i)));
    }
  }
  words.reverse();
  if (words.length !== n || !words.every((w, i) => i === 0 || w > words[i - 1] || w.startsWith('<') || words[i - 1].startsWith('<'))) throw new Error(`${file}: vocabulary not read`);
  const ln10 = Math.log(10);
  return new Map(words.map((w, i) => [w, (probs[i] * Math.log(1.0001)) / ln10]));
}

export interface Candidate {
  word: string;
  distance: number;
  /** log10 unigram probability */
  logProb: number;
}

/**
 * The words within `maxDistance` of `target` (over any of their pronunciations) and at least `minDistance` away
 * (closer is the phrase itself, as a listener would hear it), that the language model knows, that are letters
 * only, and none of whose pronunciations is in `exclude`; nearest first, then most common.
 */
export function nearWords(
  target: string[],
  opts: { maxDistance: number; minDistance: number; exclude?: Set<string>; maxPhones?: number; dict?: Map<string, string[][]>; unigrams?: Map<string, number> },
): Candidate[] {
  const dict = opts.dict ?? readCmuDict();
  const unigrams = opts.unigrams ?? readUnigrams();
  const out: Candidate[] = [];
  for (const [word, prons] of dict) {
    if (!/^[a-z]+$/.test(word)) continue;
    const logProb = unigrams.get(word);
    if (logProb === undefined) continue;
    if (opts.exclude && prons.some((p) => opts.exclude!.has(p.join(' ')))) continue;
    const distance = Math.min(...prons.map((p) => (opts.maxPhones && p.length > opts.maxPhones ? Infinity : phonemeDistance(p, target))));
    if (distance <= opts.maxDistance && distance >= opts.minDistance) out.push({ word, distance, logProb });
  }
  return out.sort((a, b) => a.distance - b.distance || b.logProb - a.logProb);
}

/** The pronunciations of every word of some texts (words the dictionary lacks are skipped). */
export function pronunciationsOf(texts: string[], dict: Map<string, string[][]>): Set<string> {
  const set = new Set<string>();
  for (const t of texts) for (const w of t.toLowerCase().match(/[a-z']+/g) ?? []) for (const p of dict.get(w) ?? dict.get(w.replace(/'s$/, '')) ?? []) set.add(p.join(' '));
  return set;
}
