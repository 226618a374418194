import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { analyzeVoiceSample, pitchTrack } from '../../../src/companion/speech/voiceCloneAnalysis.js';
import { decodeWav } from '../../../src/common/audio/wav.js';
import { sineWave } from '../../../src/common/audio/signal.js';
import { fliteWav } from './speechFixtures.js';

const SAMPLE = 'The quick brown fox jumps over the lazy dog. I am reading a story to the children tonight, and they are listening.';
const analyse = (voice: string) => {
  const w = decodeWav(readFileSync(fliteWav(SAMPLE, voice)));
  return analyzeVoiceSample(w.pcm, w.sampleRate);
};

describe('analyzeVoiceSample', () => {
  it('classifies flite male voices as male with an adult male pitch', () => {
    for (const voice of ['kal', 'awb', 'rms']) {
      const a = analyse(voice);
      expect(a.gender, voice).toBe('male');
      expect(a.medianF0Hz, voice).toBeGreaterThan(70);
      expect(a.medianF0Hz, voice).toBeLessThan(150);
      expect(a.params).toMatchObject({ language: 'en-us', gender: 'male' });
    }
  });

  it('classifies the flite female voice as female and picks a female espeak variant', () => {
    const a = analyse('slt');
    expect(a.gender).toBe('female');
    expect(a.medianF0Hz).toBeGreaterThan(150);
    expect(a.params).toMatchObject({ gender: 'female', variant: 'f3' });
    expect(a.params.rate).toBeGreaterThanOrEqual(110);
    expect(a.params.rate).toBeLessThanOrEqual(260);
  });

  it('tracks the pitch of a pure tone and rejects a sample with no voice', () => {
    const track = Array.from(pitchTrack(sineWave(220, 16000, 1, 0.5), 16000)).filter((f) => f > 0);
    expect(track.length).toBeGreaterThan(50);
    for (const f of track) expect(Math.abs(f - 220)).toBeLessThan(3);
    expect(() => analyzeVoiceSample(new Int16Array(16000 * 2), 16000)).toThrow(expect.objectContaining({ code: 'EMPTY_AUDIO' }));
  });
});
