// The wake word test set, made here and deterministic: synthetic voices (flite's natural voices, espeak-ng voice
// variants at several speeds and pitches) saying the wake phrase, alone or followed by a command, mixed with
// generated noise and music at a chosen SNR; and a NON-wake set (story and long-text narrations, similar-sounding
// phrases, noise, music). Voices and texts are split into a tuning part and a held-out part: thresholds are chosen
// on the tuning part only (bench/wake-word.bench.ts reports the held-out part).
// Synthesised speech is cached under .test-runtime/wake (gitignored); mixing is pure, seeded arithmetic.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { resample } from '../../src/common/audio/resample.js';
import { decodeWav, encodeWav } from '../../src/common/audio/wav.js';
import { concatPcm } from '../companion/speech/speechFixtures.js';
import { DEFAULT_STORIES } from '../../src/companion/seedContent.js';

const root = path.resolve(import.meta.dirname, '../..');
const cacheDir = path.join(root, '.test-runtime', 'wake');
export const RATE = 16000;

export interface Voice {
  id: string;
  engine: 'flite' | 'espeak';
  voice: string;
  /** espeak words per minute */
  speed?: number;
  /** espeak pitch 0..99 */
  pitch?: number;
}

export const TUNING_VOICES: Voice[] = [
  { id: 'flite-slt', engine: 'flite', voice: 'slt' },
  { id: 'flite-rms', engine: 'flite', voice: 'rms' },
  { id: 'espeak-m3', engine: 'espeak', voice: 'en-us+m3', speed: 150, pitch: 45 },
  { id: 'espeak-f2', engine: 'espeak', voice: 'en-us+f2', speed: 175, pitch: 65 },
  { id: 'espeak-gb-m1', engine: 'espeak', voice: 'en-gb+m1', speed: 140, pitch: 40 },
];

export const HELDOUT_VOICES: Voice[] = [
  { id: 'flite-awb', engine: 'flite', voice: 'awb' },
  { id: 'flite-kal16', engine: 'flite', voice: 'kal16' },
  { id: 'espeak-f4', engine: 'espeak', voice: 'en-us+f4', speed: 160, pitch: 70 },
  { id: 'espeak-m7', engine: 'espeak', voice: 'en-us+m7', speed: 135, pitch: 35 },
  { id: 'espeak-klatt', engine: 'espeak', voice: 'en-us+klatt2', speed: 185, pitch: 55 },
];

export const COMMANDS = {
  tuning: ['set the volume to forty percent', 'what time is it', 'read me a story'],
  heldout: ['turn the music down', 'what is the weather like tomorrow', 'stop'],
};

/** Phrases that sound like a wake phrase ("hey computer", "hey jarvis") without being it. */
export const SIMILAR_PHRASES = {
  tuning: ['computing power is cheap', 'the commuter train is late', 'he computed the sum', 'a cup of tea please', 'hey Cooper, come here', 'the company picnic', 'compete with her', 'hey, how are you', 'a computer program',
    'hey Travis', 'the jars are on the shelf', 'Jarvis Cocker sang', 'hey Jerry, stop it', 'a service van', 'hey, jump in'],
  heldout: ['cloud computing', 'commuters are tired', 'compute the total', 'hey come pewter', 'complete her form', 'the competitor won', 'hey look at that', 'my computer is slow', 'the amputee walked', 'a recruiter called',
    'hey Marvin', 'a jar of honey', 'Davis and Jarvis', 'harvest time is here', 'hey Charlie, come in', 'they carved his name', 'hey, nervous?'],
};

export type Part = 'tuning' | 'heldout';
export type Background = 'pink' | 'brown' | 'music';
export const BACKGROUNDS: Background[] = ['pink', 'brown', 'music'];

/** Speech for `text` in `voice`: 16 kHz mono, leading and trailing silence trimmed. Cached. */
export function speak(text: string, voice: Voice): Int16Array {
  mkdirSync(cacheDir, { recursive: true });
  const key = createHash('sha1').update(`${JSON.stringify(voice)}|${text}`).digest('hex').slice(0, 16);
  const file = path.join(cacheDir, `${key}.16k.wav`);
  if (!existsSync(file)) {
    const raw = `${file}.raw.wav`;
    const txt = `${file}.txt`;
    writeFileSync(txt, text);
    if (voice.engine === 'flite') execFileSync('flite', ['-voice', voice.voice, '-f', txt, '-o', raw]);
    else execFileSync('espeak-ng', ['-v', voice.voice, '-s', String(voice.speed ?? 160), '-p', String(voice.pitch ?? 50), '-f', txt, '-w', raw]);
    const w = decodeWav(readFileSync(raw));
    writeFileSync(`${file}.tmp`, encodeWav(trim(resample(w.pcm, w.sampleRate, RATE)), RATE));
    renameSync(`${file}.tmp`, file);
  }
  return decodeWav(readFileSync(file)).pcm;
}

function trim(pcm: Int16Array): Int16Array {
  let a = 0;
  let b = pcm.length - 1;
  while (a < b && Math.abs(pcm[a]) < 100) a++;
  while (b > a && Math.abs(pcm[b]) < 100) b--;
  return pcm.slice(a, b + 1);
}

/** A small seeded PRNG (mulberry32): the same noise and music on every run. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Generated background audio (float, RMS ~0.1): pink noise, brown noise, or music (chords and a melody). */
export function background(kind: Background, samples: number, seed: number): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(samples);
  if (kind === 'pink') {
    // Paul Kellet's economical pink filter
    let b0 = 0, b1 = 0, b2 = 0, b3 = 0, b4 = 0, b5 = 0, b6 = 0;
    for (let i = 0; i < samples; i++) {
      const w = r() * 2 - 1;
      b0 = 0.99886 * b0 + w * 0.0555179; b1 = 0.99332 * b1 + w * 0.0750759; b2 = 0.969 * b2 + w * 0.153852;
      b3 = 0.8665 * b3 + w * 0.3104856; b4 = 0.55 * b4 + w * 0.5329522; b5 = -0.7616 * b5 - w * 0.016898;
      out[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362;
      b6 = w * 0.115926;
    }
  } else if (kind === 'brown') {
    let y = 0;
    for (let i = 0; i < samples; i++) {
      y = 0.998 * y + (r() * 2 - 1) * 0.1;
      out[i] = y;
    }
  } else {
    const scale = [0, 2, 4, 5, 7, 9, 11];
    const hz = (degree: number, octave: number): number => 130.81 * 2 ** (octave + (scale[((degree % 7) + 7) % 7] + 12 * Math.floor(degree / 7)) / 12);
    const beat = Math.round(RATE * 0.3); // 100 bpm
    for (let start = 0, n = 0; start < samples; start += beat, n++) {
      const len = Math.min(beat * 2, samples - start);
      const notes: [number, number][] = [];
      if (n % 4 === 0) {
        const root = Math.floor(r() * 7);
        for (const d of [root, root + 2, root + 4]) notes.push([hz(d, 0), 0.25]);
      }
      if (r() < 0.8) notes.push([hz(Math.floor(r() * 10), 1), 0.35]);
      for (const [f, amp] of notes) {
        for (let i = 0; i < len; i++) {
          const t = i / RATE;
          const env = Math.min(1, t / 0.01) * Math.exp(-t * 3);
          let v = 0;
          for (let h = 1; h <= 4; h++) v += Math.sin(2 * Math.PI * f * h * t) / h;
          out[start + i] += amp * env * v;
        }
      }
    }
  }
  let p = 0;
  for (let i = 0; i < samples; i++) p += out[i] * out[i];
  const g = 0.1 / Math.sqrt(p / Math.max(1, samples) || 1);
  for (let i = 0; i < samples; i++) out[i] *= g;
  return out;
}

function power(pcm: Int16Array, from = 0, to = pcm.length): number {
  let p = 0;
  for (let i = from; i < to; i++) p += pcm[i] * pcm[i];
  return p / Math.max(1, to - from);
}

/** speech + background scaled so that speech power (over [from, to)) / background power = snrDb. */
export function mix(speech: Int16Array, bg: Background | null, snrDb: number, seed: number, range?: [number, number]): Int16Array {
  // speech at about -26 dBFS RMS, as a microphone's gain would put a voice
  const sp = power(speech, ...(range ?? [0, speech.length]));
  const g = sp > 0 ? 1640 / Math.sqrt(sp) : 1;
  const out = new Int16Array(speech.length);
  const noise = bg ? background(bg, speech.length, seed) : null;
  const ng = noise ? (1640 / 10 ** (snrDb / 20)) / 0.1 : 0;
  for (let i = 0; i < out.length; i++) {
    const v = speech[i] * g + (noise ? noise[i] * ng : 0);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
  }
  return out;
}

export interface WakeClip {
  /** 16 kHz mono */
  pcm: Int16Array;
  /** sample index just after the wake phrase's last spoken sample */
  phraseEnd: number;
  voice: string;
  text: string;
  background: Background | null;
  snrDb: number;
}

const LEAD = RATE; // 1 s of background before the phrase
const TAIL = RATE; // and after the speech
const GAP = Math.round(RATE * 0.12); // phrase -> command, "in one breath"

/** The wake phrase from every voice of a part: alone, and followed by each command; over each background. */
export function wakeClips(phrase: string, part: Part, snrDb: number, opts: { backgrounds?: (Background | null)[]; voices?: Voice[] } = {}): WakeClip[] {
  const voices = opts.voices ?? (part === 'tuning' ? TUNING_VOICES : HELDOUT_VOICES);
  const bgs = opts.backgrounds ?? BACKGROUNDS;
  const clips: WakeClip[] = [];
  let seed = part === 'tuning' ? 1000 : 2000;
  for (const v of voices) {
    const ph = speak(phrase, v);
    for (const command of [null, ...COMMANDS[part]]) {
      const cmd = command ? speak(command, v) : new Int16Array(0);
      const speech = new Int16Array(LEAD + ph.length + (command ? GAP + cmd.length : 0) + TAIL);
      speech.set(ph, LEAD);
      if (command) speech.set(cmd, LEAD + ph.length + GAP);
      for (const bg of bgs) {
        clips.push({
          pcm: mix(speech, bg, snrDb, seed++, [LEAD, LEAD + ph.length]),
          phraseEnd: LEAD + ph.length,
          voice: v.id,
          text: command ? `${phrase}, ${command}` : phrase,
          background: bg,
          snrDb,
        });
      }
    }
  }
  return clips;
}

export interface NonWakeSegment {
  pcm: Int16Array;
  label: string;
}

const LICENCES = {
  tuning: ['GPL-2', 'LGPL-2.1', 'Apache-2.0', 'LGPL-3'],
  heldout: ['GPL-3', 'GFDL-1.3', 'MPL-2.0', 'MPL-1.1', 'GPL-1', 'Artistic'],
};

/** Long texts of a part, sentence-split, without any sentence that contains the wake phrase itself. */
export function narrationTexts(phrase: string, part: Part): { name: string; text: string }[] {
  const words = phrase.toLowerCase().replace(/[^a-z' ]+/g, ' ').trim();
  const texts: { name: string; text: string }[] = [];
  const stories = DEFAULT_STORIES.filter((_, i) => (part === 'tuning' ? i % 2 === 0 : i % 2 === 1));
  for (const s of stories) texts.push({ name: `story:${s.slug}`, text: s.transcript });
  for (const l of LICENCES[part]) {
    const file = path.join('/usr/share/common-licenses', l);
    if (existsSync(file)) texts.push({ name: `licence:${l}`, text: readFileSync(file, 'utf8') });
  }
  return texts.map(({ name, text }) => ({
    name,
    text: text
      .replace(/\s+/g, ' ')
      .split(/(?<=[.!?;:])\s+/)
      .filter((sentence) => !` ${sentence.toLowerCase().replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ')} `.includes(` ${words} `))
      .join(' '),
  }));
}

/**
 * The non-wake set of a part, lazily: each long text narrated by one of the part's voices in turn (stories by
 * every voice), mixed with a background at 20 or 10 dB; similar-sounding phrases from every voice; and minutes
 * of plain noise and music. Stops once maxSeconds of audio were given.
 */
export function* nonWakeSegments(phrase: string, part: Part, opts: { maxSeconds?: number } = {}): Generator<NonWakeSegment> {
  const voices = part === 'tuning' ? TUNING_VOICES : HELDOUT_VOICES;
  const max = (opts.maxSeconds ?? Infinity) * RATE;
  let given = 0;
  let seed = part === 'tuning' ? 5000 : 6000;
  const give = function* (seg: NonWakeSegment): Generator<NonWakeSegment> {
    const left = max - given;
    if (left <= 0) return;
    const pcm = seg.pcm.length > left ? seg.pcm.subarray(0, left) : seg.pcm;
    given += pcm.length;
    yield { pcm, label: seg.label };
  };
  const pause = new Int16Array(Math.round(RATE * 0.6));
  const similar = SIMILAR_PHRASES[part].filter((p) => !` ${p.toLowerCase().replace(/[^a-z ]+/g, '')} `.includes(` ${phrase.toLowerCase().replace(/[^a-z ]+/g, '')} `));
  for (const v of voices) {
    const parts: Int16Array[] = [];
    for (const p of similar) parts.push(speak(p, v), pause);
    const speech = concatPcm(...parts);
    yield* give({ pcm: mix(speech, BACKGROUNDS[seed % 3], 10, seed++), label: `similar:${v.id}` });
  }
  for (const kind of BACKGROUNDS) {
    const n = RATE * 120;
    const bg = background(kind, n, seed++);
    const pcm = new Int16Array(n);
    for (let i = 0; i < n; i++) pcm[i] = Math.round(bg[i] * 8000);
    yield* give({ pcm, label: `background:${kind}` });
  }
  let k = 0;
  for (const { name, text } of narrationTexts(phrase, part)) {
    const narrators = name.startsWith('story:') ? voices : [voices[k++ % voices.length]];
    for (const v of narrators) {
      const speech = speak(text, v);
      yield* give({ pcm: mix(speech, BACKGROUNDS[seed % 3], seed % 2 ? 20 : 10, seed++), label: `narration:${name}:${v.id}` });
    }
  }
}

