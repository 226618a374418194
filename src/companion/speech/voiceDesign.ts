// "Voice design" for espeak: turns a free-text description into espeak voice parameters by recognising
// descriptive words (gender, age, pitch, pace, expressiveness, accent/language). There is no generative voice
// model offline; this is a rule-based mapping and says so.
//
// Decision (documented for the REST API): the design fails with SpeechError 'DESIGN_FAILED' when
//   - the language code (argument) is not an installed espeak voice, or
//   - the prompt contains no trait we recognise at all (it would silently give the default voice).
import type { VoiceParams } from './synthesizer.js';
import { SpeechError } from './speechError.js';
import { isEspeakLanguage } from './espeakVoices.js';

const has = (text: string, words: string[]) => words.some((w) => new RegExp(`\\b${w}\\b`).test(text));

const ACCENTS: [string[], string][] = [
  [['scottish', 'scotland'], 'en-gb-scotland'],
  [['received pronunciation', 'posh', 'rp'], 'en-gb-x-rp'],
  [['british', 'english accent', 'uk', 'london', 'england'], 'en-gb'],
  [['caribbean', 'jamaican'], 'en-029'],
  [['new york'], 'en-us-nyc'],
  [['american', 'us accent', 'usa'], 'en-us'],
  [['french'], 'fr'], [['german'], 'de'], [['spanish'], 'es'], [['italian'], 'it'],
  [['brazilian'], 'pt-br'], [['portuguese'], 'pt'], [['dutch'], 'nl'], [['swedish'], 'sv'],
  [['polish'], 'pl'], [['russian'], 'ru'], [['greek'], 'el'], [['hindi', 'indian'], 'hi'],
];

export interface DesignedVoice extends VoiceParams {
  /** the traits recognised in the prompt, for the API's description/debugging */
  traits: string[];
}

export function designVoice(prompt: string, language?: string): DesignedVoice {
  const text = ` ${String(prompt ?? '').toLowerCase().replace(/[^a-z0-9' -]+/g, ' ')} `;
  const traits: string[] = [];

  let lang = 'en-us';
  if (language !== undefined && language !== null && String(language).trim() !== '') {
    const code = String(language).trim().toLowerCase().replace('_', '-');
    if (!isEspeakLanguage(code)) throw new SpeechError('DESIGN_FAILED', `unknown language code '${language}': not an installed espeak-ng voice`);
    lang = code;
  }
  // An accent in the prompt refines an English (or unspecified) language.
  for (const [words, code] of ACCENTS) {
    if (has(text, words) && (lang === 'en-us' || lang.startsWith('en')) && isEspeakLanguage(code)) {
      lang = code;
      traits.push(`accent:${code}`);
      break;
    }
  }

  let gender: 'male' | 'female' | undefined;
  if (has(text, ['woman', 'female', 'girl', 'lady', 'she', 'her', 'mother', 'grandmother', 'granny', 'feminine', 'actress', 'queen'])) gender = 'female';
  else if (has(text, ['man', 'male', 'boy', 'guy', 'gentleman', 'he', 'his', 'father', 'grandfather', 'grandpa', 'masculine', 'king'])) gender = 'male';
  if (gender) traits.push(`gender:${gender}`);

  let age: number | undefined;
  const num = /\b(\d{1,2})[- ]?(?:years?|yrs?|year-old|yo)\b/.exec(text);
  if (num) age = Number(num[1]);
  else if (has(text, ['child', 'kid', 'little girl', 'little boy', 'toddler'])) age = 8;
  else if (has(text, ['teen', 'teenage', 'teenager'])) age = 16;
  else if (has(text, ['young', 'youthful'])) age = 25;
  else if (has(text, ['middle aged', 'middle-aged'])) age = 45;
  else if (has(text, ['old', 'elderly', 'aged', 'senior', 'grandfather', 'grandmother', 'grandpa', 'granny'])) age = 75;
  if (age !== undefined) traits.push(`age:${age}`);

  let pitch = 50;
  let rate = 175;
  let range = 50;
  if (has(text, ['very deep', 'bass', 'booming'])) { pitch = 15; traits.push('pitch:very-low'); }
  else if (has(text, ['deep', 'low', 'low-pitched', 'gravelly', 'husky'])) { pitch = 28; traits.push('pitch:low'); }
  else if (has(text, ['high', 'high-pitched', 'squeaky', 'shrill', 'bright'])) { pitch = 75; traits.push('pitch:high'); }
  if (age !== undefined && age < 13) pitch = Math.max(pitch, 85);
  else if (age !== undefined && age >= 65) pitch -= 8;

  if (has(text, ['very slowly', 'very slow'])) { rate = 110; traits.push('rate:very-slow'); }
  else if (has(text, ['slow', 'slowly', 'unhurried', 'measured', 'deliberate'])) { rate = 135; traits.push('rate:slow'); }
  else if (has(text, ['fast', 'quick', 'quickly', 'rapid', 'rapidly', 'energetic', 'excited', 'hurried'])) { rate = 215; traits.push('rate:fast'); }
  if (age !== undefined && age >= 65) rate = Math.min(rate, 155);

  if (has(text, ['monotone', 'flat', 'robotic', 'emotionless'])) { range = 10; traits.push('range:flat'); }
  else if (has(text, ['calm', 'soothing', 'gentle', 'relaxed', 'soft', 'serious'])) { range = 35; rate = Math.min(rate, 160); traits.push('tone:calm'); }
  else if (has(text, ['expressive', 'lively', 'animated', 'energetic', 'cheerful', 'excited', 'dramatic', 'enthusiastic'])) { range = 80; traits.push('tone:lively'); }

  if (traits.length === 0) {
    throw new SpeechError(
      'DESIGN_FAILED',
      'the description names no voice trait we can use (try gender, age, pitch such as deep/high, pace such as slow/fast, tone such as calm/lively, or an accent such as British)',
    );
  }

  // espeak variants: f3/m3 are the most natural of the stock variants; grandpa/grandma add age tremor.
  let variant: string | undefined;
  if (gender === 'female') variant = age !== undefined && age >= 65 ? 'grandma' : age !== undefined && age < 13 ? 'f5' : 'f3';
  else if (gender === 'male') variant = age !== undefined && age >= 65 ? 'grandpa' : 'm3';
  else if (age !== undefined && age < 13) variant = 'f5';

  return { language: lang, gender, age, variant, pitch, range, rate, traits };
}
