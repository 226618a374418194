// The single list of spoken commands the assistant understands by grammar (JSGF for pocketsphinx), plus the
// number words they use. The realtime brain matches transcripts against the same phrases and turns spoken
// numbers into arguments with spokenNumberToInt().

const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

/** Words the command grammar uses that cmudict lacks, with their pronunciations (CMU phones). */
export const EXTRA_PRONUNCIATIONS: Record<string, string> = {
  unmute: 'AH N M Y UW T',
};

/** The command phrases, by intent (JSGF right-hand sides; <number> and <story_name> are rules below). */
export const COMMAND_PHRASES = {
  volume_up: ['volume up', 'turn it up', 'turn the volume up', 'louder'],
  volume_down: ['volume down', 'turn it down', 'turn the volume down', 'quieter', 'softer'],
  set_volume: ['set [the] volume to <number> [percent]', 'volume <number> [percent]'],
  mute: ['mute', 'be quiet', 'quiet'],
  unmute: ['unmute'],
  stop: ['stop', 'stop talking'],
  list_stories: ['list [the] stories', 'what stories do you have'],
  read_story: ['read [me] a story', 'read [me] the story <story_name>'],
  time: ['what time is it'],
  hello: ['hello', 'hi'],
  help: ['help', 'what can you do'],
} as const;

export type CommandIntent = keyof typeof COMMAND_PHRASES;

/** Normalises a story name to grammar words: lower case, letters/digits/apostrophes only. */
export function grammarWords(name: string): string[] {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** The JSGF grammar text. Story names (dynamic) become alternatives of <story_name>; names containing a word
 *  the recogniser's dictionary lacks are left out (pass isKnownWord to filter), since JSGF cannot use them. */
export function buildCommandGrammar(storyNames: string[] = [], isKnownWord: (w: string) => boolean = () => true): string {
  const stories = [...new Set(storyNames.map((n) => grammarWords(n).join(' ')))]
    .filter((n) => n && n.split(' ').every(isKnownWord));
  const rules = Object.entries(COMMAND_PHRASES).map(([intent, phrases]) => {
    const alts = (phrases as readonly string[]).filter((p) => stories.length > 0 || !p.includes('<story_name>'));
    return `<${intent}> = ${alts.join(' | ')};`;
  });
  const lines = [
    '#JSGF V1.0;',
    'grammar commands;',
    `public <command> = ${Object.keys(COMMAND_PHRASES).map((i) => `<${i}>`).join(' | ')};`,
    ...rules,
    `<units> = ${UNITS.slice(1).join(' | ')};`,
    `<teens> = ${TEENS.join(' | ')};`,
    `<tens> = ${TENS.slice(2).join(' | ')};`,
    '<number> = zero | <units> | <teens> | <tens> [<units>] | one hundred | a hundred;',
  ];
  if (stories.length > 0) lines.push(`<story_name> = ${stories.join(' | ')};`);
  return lines.join('\n') + '\n';
}

/** 'forty two' -> 42, 'one hundred' -> 100, 'seventy-five' -> 75, '40' -> 40; null when not a number 0..999. */
export function spokenNumberToInt(text: string): number | null {
  const words = text.toLowerCase().replace(/-/g, ' ').replace(/\band\b/g, ' ').trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return null;
  if (words.length === 1 && /^\d+$/.test(words[0])) return Number(words[0]);
  let total = 0;
  let current = 0;
  let seen = false;
  let last: 'unit' | 'teen' | 'ten' | 'hundred' | null = null;
  for (const w of words) {
    const u = UNITS.indexOf(w);
    const t = TEENS.indexOf(w);
    const d = TENS.indexOf(w);
    if (w === 'a' && !seen) {
      current = 1;
      last = 'unit';
      seen = true;
    } else if (u >= 0 && (last === null || last === 'ten' || last === 'hundred')) {
      if (u === 0 && seen) return null;
      current += u;
      last = 'unit';
    } else if (t >= 0 && (last === null || last === 'hundred')) {
      current += t + 10;
      last = 'teen';
    } else if (d >= 2 && (last === null || last === 'hundred')) {
      current += d * 10;
      last = 'ten';
    } else if (w === 'hundred' && last === 'unit' && current > 0 && current < 10) {
      total += current * 100;
      current = 0;
      last = 'hundred';
    } else {
      return null;
    }
    seen = true;
  }
  return total + current;
}

/** Every integer 0..100 as it is spoken in the grammar, e.g. 42 -> 'forty two'. */
export function intToSpoken(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 100) throw new RangeError(`intToSpoken: 0..100 only, got ${n}`);
  if (n === 100) return 'one hundred';
  if (n < 10) return UNITS[n];
  if (n < 20) return TEENS[n - 10];
  return TENS[Math.floor(n / 10)] + (n % 10 ? ` ${UNITS[n % 10]}` : '');
}

/** The words a JSGF grammar text uses (rule bodies without rule names, operators, weights or tags), once each. */
export function grammarVocabulary(jsgf: string): string[] {
  const words = new Set<string>();
  for (const line of jsgf.split('\n')) {
    const eq = line.indexOf('=');
    if (eq < 0 || !/^\s*(public\s+)?</.test(line)) continue;
    const body = line.slice(eq + 1).replace(/<[^>]*>|\/[^/]*\/|\{[^}]*\}|[|()[\];*+]/g, ' ');
    for (const w of body.split(/\s+/)) if (w) words.add(w);
  }
  return [...words];
}
