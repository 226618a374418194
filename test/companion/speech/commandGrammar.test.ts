import { describe, expect, it } from 'vitest';
import { buildCommandGrammar, COMMAND_PHRASES, grammarVocabulary, grammarWords, intToSpoken, spokenNumberToInt } from '../../../src/companion/speech/commandGrammar.js';

describe('spokenNumberToInt', () => {
  it('reads spoken numbers', () => {
    expect(spokenNumberToInt('zero')).toBe(0);
    expect(spokenNumberToInt('seven')).toBe(7);
    expect(spokenNumberToInt('thirteen')).toBe(13);
    expect(spokenNumberToInt('forty')).toBe(40);
    expect(spokenNumberToInt('forty two')).toBe(42);
    expect(spokenNumberToInt('Seventy-Five')).toBe(75);
    expect(spokenNumberToInt('one hundred')).toBe(100);
    expect(spokenNumberToInt('a hundred')).toBe(100);
    expect(spokenNumberToInt('two hundred and five')).toBe(205);
    expect(spokenNumberToInt('55')).toBe(55);
  });

  it('returns null for what is not a number', () => {
    for (const bad of ['', 'volume', 'forty forty', 'two three', 'twelve five', 'hundred', 'fifty zero']) {
      expect(spokenNumberToInt(bad)).toBeNull();
    }
  });

  it('is the inverse of intToSpoken for 0..100', () => {
    for (let n = 0; n <= 100; n++) expect(spokenNumberToInt(intToSpoken(n))).toBe(n);
    expect(() => intToSpoken(101)).toThrow(RangeError);
  });
});

describe('buildCommandGrammar', () => {
  it('is one JSGF grammar holding every intent, and adds only story names made of known words', () => {
    const g = buildCommandGrammar(['The Little Red Hen', 'Zyxqv the Brave!'], (w) => w !== 'zyxqv');
    expect(g.startsWith('#JSGF V1.0;\ngrammar commands;\npublic <command> = ')).toBe(true);
    for (const intent of Object.keys(COMMAND_PHRASES)) expect(g).toContain(`<${intent}> = `);
    expect(g).toContain('<story_name> = the little red hen;');
    expect(g).not.toContain('zyxqv');
    expect(g).toContain('read [me] the story <story_name>');
  });

  it('drops the story-name alternative when there are no usable names', () => {
    const g = buildCommandGrammar([]);
    expect(g).not.toContain('<story_name>');
    expect(g).toContain('read [me] a story');
    expect(grammarWords("Goldilocks & the Three Bears'")).toEqual(['goldilocks', 'the', 'three', "bears'"]);
  });
});

describe('grammarVocabulary', () => {
  it('lists the words of the rule bodies once each, without rule names, operators, weights or tags', () => {
    const jsgf = '#JSGF V1.0;\ngrammar g;\npublic <a> = (turn it up | /2/ louder) [please] <b>;\n<b> = turn {x} it* now+;\n';
    expect(grammarVocabulary(jsgf).sort()).toEqual(['it', 'louder', 'now', 'please', 'turn', 'up']);
  });

  it('holds every word of the command grammar, story names included', () => {
    const words = grammarVocabulary(buildCommandGrammar(['The Little Red Hen']));
    for (const w of ['volume', 'percent', 'ninety', 'hundred', 'little', 'red', 'hen', 'unmute']) expect(words).toContain(w);
    expect(words.some((w) => /[<>|()[\];=]/.test(w))).toBe(false);
  });
});
