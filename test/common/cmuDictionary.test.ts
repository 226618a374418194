import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dictionaryWord, filterDictionary, formatDictionary, readDictionaryEntries } from '../../src/common/cmuDictionary.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cmudict-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DEBIAN = '/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict';

describe('cmuDictionary', () => {
  it('reads every pronunciation of the words asked for, in file order, and nothing else', () => {
    const file = path.join(dir, 'small.dict');
    // blank line, a line without phones, and a last line without its newline
    writeFileSync(file, 'live L IH V\nlive(2) L AY V\nlived L IH V D\n\nnophones\nread R EH D\nread(2) R IY D  \nzoo Z UW');
    const entries = readDictionaryEntries(file, (w) => w === 'live' || w === 'read' || w === 'zoo');
    expect(entries).toEqual([
      { word: 'live', head: 'live', phones: 'L IH V' },
      { word: 'live', head: 'live(2)', phones: 'L AY V' },
      { word: 'read', head: 'read', phones: 'R EH D' },
      { word: 'read', head: 'read(2)', phones: 'R IY D' },
      { word: 'zoo', head: 'zoo', phones: 'Z UW' },
    ]);
    expect(formatDictionary(entries)).toBe('live L IH V\nlive(2) L AY V\nread R EH D\nread(2) R IY D\nzoo Z UW\n');
    expect(readDictionaryEntries(file, () => false)).toEqual([]);
    expect(filterDictionary(file, (w) => w === 'live' || w === 'read' || w === 'zoo')).toBe(formatDictionary(entries));
    expect(filterDictionary(file, () => false)).toBe('');
  });

  it('names the word of a further pronunciation', () => {
    expect(dictionaryWord('read(2)')).toBe('read');
    expect(dictionaryWord('read')).toBe('read');
    expect(dictionaryWord('r(2)d')).toBe('r(2)d');
  });

  it("reads Debian's dictionary: all of it when asked, each word's pronunciations together", () => {
    const all = readDictionaryEntries(DEBIAN, () => true);
    const lines = readFileSync(DEBIAN, 'utf8').split('\n').filter((l) => l.indexOf(' ') > 0);
    expect(all.length).toBe(lines.length);
    expect(all.length).toBeGreaterThan(100_000);
    const read = readDictionaryEntries(DEBIAN, (w) => w === 'read');
    expect(read.map((e) => e.head)).toEqual(['read', 'read(2)']);
  });

  it('throws the read error for a missing file', () => {
    expect(() => readDictionaryEntries(path.join(dir, 'none.dict'), () => true)).toThrow(/ENOENT/);
  });
});
