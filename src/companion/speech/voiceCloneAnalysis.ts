// "Voice cloning" without a neural model: measures a reference recording (median pitch, pitch variability,
// speaking rate) and picks the espeak parameters that come closest. The result sounds like espeak with a
// similar pitch, gender and pace, NOT like the speaker: no offline speaker-embedding or neural TTS model
// exists for this platform. Callers must present it as an approximation.
import type { VoiceParams } from './synthesizer.js';
import { Resampler } from '../../common/audio/resample.js';
import { SpeechError } from './speechError.js';

export interface VoiceSampleAnalysis {
  medianF0Hz: number;
  gender: 'male' | 'female';
  /** voiced-segment onsets per second of active speech (roughly syllables per second) */
  syllablesPerSec: number;
  /** fraction of analysis frames that were voiced */
  voicedRatio: number;
  params: VoiceParams;
}

const RATE = 8000; // pitch analysis rate: enough for F0 50..400 Hz, 1/4 the work of 16 kHz
const FRAME = 320; // 40 ms
const HOP = 80; // 10 ms
const MIN_LAG = 20; // 400 Hz
const MAX_LAG = 160; // 50 Hz
/** Below this median F0 a voice is classed male (adult male ~85-155 Hz, adult female ~165-255 Hz; flite's awb 130, slt 167). */
const GENDER_SPLIT_HZ = 150;

/** Pitch track by normalised autocorrelation: F0 (Hz) of each voiced 40 ms frame, 0 for unvoiced ones. */
export function pitchTrack(pcm: Int16Array, sampleRate: number): Float32Array {
  const x = sampleRate === RATE ? pcm : new Resampler(sampleRate, RATE).process(pcm);
  const frames = Math.max(0, Math.floor((x.length - FRAME - MAX_LAG) / HOP));
  const out = new Float32Array(frames);
  // energy gate: 35 dB below the loudest frame is not speech
  const energies = new Float64Array(frames);
  let maxE = 0;
  for (let f = 0; f < frames; f++) {
    let e = 0;
    const s = f * HOP + MAX_LAG;
    for (let i = 0; i < FRAME; i++) e += x[s + i] * x[s + i];
    energies[f] = e;
    if (e > maxE) maxE = e;
  }
  const gate = maxE * 10 ** (-35 / 10);
  const r = new Float64Array(MAX_LAG + 1);
  for (let f = 0; f < frames; f++) {
    if (energies[f] < gate || energies[f] === 0) continue;
    const s = f * HOP + MAX_LAG;
    let best = 0;
    for (let lag = MIN_LAG; lag <= MAX_LAG; lag++) {
      let ab = 0;
      let bb = 0;
      for (let i = 0; i < FRAME; i++) {
        const b = x[s + i - lag];
        ab += x[s + i] * b;
        bb += b * b;
      }
      r[lag] = bb > 0 ? ab / Math.sqrt(energies[f] * bb) : 0;
      if (r[lag] > best) best = r[lag];
    }
    if (best < 0.6) continue;
    // the shortest lag close to the best peak: avoids reporting a subharmonic (octave-low error)
    for (let lag = MIN_LAG + 1; lag < MAX_LAG; lag++) {
      if (r[lag] >= 0.9 * best && r[lag] >= r[lag - 1] && r[lag] >= r[lag + 1]) {
        const den = r[lag - 1] - 2 * r[lag] + r[lag + 1];
        const delta = den === 0 ? 0 : (0.5 * (r[lag - 1] - r[lag + 1])) / den;
        out[f] = RATE / (lag + delta);
        break;
      }
    }
  }
  return out;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
}

export function analyzeVoiceSample(pcm: Int16Array, sampleRate: number): VoiceSampleAnalysis {
  if (!Number.isInteger(sampleRate) || sampleRate < 8000) throw new SpeechError('INVALID_ARGUMENT', `sampleRate must be >= 8000, got ${sampleRate}`);
  const track = pitchTrack(pcm, sampleRate);
  const voiced = Array.from(track).filter((f) => f > 0).sort((a, b) => a - b);
  if (voiced.length < 10) throw new SpeechError('EMPTY_AUDIO', 'no voiced speech found in the sample');
  const median = quantile(voiced, 0.5);
  const spread = (quantile(voiced, 0.9) - quantile(voiced, 0.1)) / median; // relative pitch range
  const gender: 'male' | 'female' = median < GENDER_SPLIT_HZ ? 'male' : 'female';

  // voiced onsets (after >= 30 ms unvoiced) per second of speech time (first..last voiced frame)
  let onsets = 0;
  let gap = 99;
  let first = -1;
  let last = -1;
  for (let f = 0; f < track.length; f++) {
    if (track[f] > 0) {
      if (gap >= 3) onsets++;
      gap = 0;
      if (first < 0) first = f;
      last = f;
    } else gap++;
  }
  const activeSec = ((last - first + 1) * HOP) / RATE;
  const syllablesPerSec = activeSec > 0 ? onsets / activeSec : 0;

  // espeak mapping, calibrated by ear and by measuring espeak itself: en-us (male) sits near 110 Hz at pitch 50,
  // the f3 variant near 200 Hz; about 2 Hz (male) / 3 Hz (female) per pitch step.
  const pitch = gender === 'male' ? 50 + (median - 110) / 2 : 50 + (median - 200) / 3;
  const range = 50 + (spread - 0.35) * 100;
  // ~1.45 syllables per English word; espeak's 175 wpm is a typical conversational pace
  const rate = syllablesPerSec > 0 ? (syllablesPerSec * 60) / 1.45 : 175;
  const clamp = (v: number, lo: number, hi: number) => Math.round(Math.max(lo, Math.min(hi, v)));
  return {
    medianF0Hz: median,
    gender,
    syllablesPerSec,
    voicedRatio: voiced.length / Math.max(1, track.length),
    params: {
      language: 'en-us',
      gender,
      variant: gender === 'female' ? 'f3' : 'm3',
      pitch: clamp(pitch, 0, 100),
      range: clamp(range, 10, 90),
      rate: clamp(rate, 110, 260),
    },
  };
}
