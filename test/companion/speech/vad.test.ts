import { describe, expect, it } from 'vitest';
import { VoiceActivityDetector } from '../../../src/companion/speech/vad.js';
import { concatPcm, fliteSpeech, frames, trimSilence, whiteNoise } from './speechFixtures.js';

function run(vad: VoiceActivityDetector, pcm: Int16Array, frameSamples: number) {
  const events: { event: string; ms: number }[] = [];
  let ms = 0;
  for (const f of frames(pcm, frameSamples)) {
    const e = vad.process(f);
    ms += (f.length * 1000) / (frameSamples * 50); // frameSamples is 20 ms at the test's rate
    if (e) events.push({ event: e, ms: Math.round(ms) });
  }
  return events;
}

describe('VoiceActivityDetector', () => {
  it('finds speech in real speech, ends it after the hangover once silence follows (48 kHz, 20 ms frames)', () => {
    const rate = 48000;
    const speech = fliteSpeech('Hello there, could you please turn the volume up a little bit', rate, 'slt');
    const pcm = concatPcm(new Int16Array(rate), speech, new Int16Array(rate * 2));
    const vad = new VoiceActivityDetector({ sampleRate: rate, hangoverMs: 300 });
    const events = run(vad, pcm, 960);
    expect(events.map((e) => e.event)).toEqual(['speech_start', 'speech_end']);
    const speechEndMs = 1000 + (speech.length * 1000) / rate;
    expect(events[0].ms).toBeGreaterThan(1000);
    expect(events[0].ms).toBeLessThan(1600);
    // ends after the hangover, but not long after the speech stopped (flite adds a little trailing silence)
    expect(events[1].ms).toBeGreaterThanOrEqual(speechEndMs - 400 + 300);
    expect(events[1].ms).toBeLessThan(speechEndMs + 800);
    expect(vad.speaking).toBe(false);
  });

  it('keeps one utterance across the short pauses between words (16 kHz)', () => {
    const rate = 16000;
    const a = trimSilence(fliteSpeech('set the volume', rate, 'kal'), rate);
    const b = trimSilence(fliteSpeech('to forty percent', rate, 'kal'), rate);
    // a 200 ms pause between words: shorter than the 300 ms hangover
    const pcm = concatPcm(new Int16Array(rate / 2), a, new Int16Array(rate * 0.2), b, new Int16Array(rate));
    const events = run(new VoiceActivityDetector({ sampleRate: rate, hangoverMs: 300 }), pcm, 320);
    expect(events.map((e) => e.event)).toEqual(['speech_start', 'speech_end']);
  });

  it('never reports speech for silence or for loud white noise', () => {
    const rate = 48000;
    const vad = new VoiceActivityDetector({ sampleRate: rate });
    expect(run(vad, new Int16Array(rate * 2), 960)).toEqual([]);
    expect(run(vad, whiteNoise(rate * 3, 0.3), 960)).toEqual([]);
    // noise that starts abruptly at high level, on a fresh detector
    const fresh = new VoiceActivityDetector({ sampleRate: rate });
    expect(run(fresh, concatPcm(new Int16Array(rate), whiteNoise(rate * 3, 0.5, 7)), 960)).toEqual([]);
  });

  it('still detects speech over a steady noise floor, and reset() forgets an utterance', () => {
    const rate = 16000;
    const speech = fliteSpeech('what time is it', rate, 'slt');
    const noise = whiteNoise(rate * 4 + speech.length, 0.01, 3);
    const mixed = Int16Array.from(noise);
    for (let i = 0; i < speech.length; i++) mixed[rate * 2 + i] += speech[i];
    const vad = new VoiceActivityDetector({ sampleRate: rate });
    const events = run(vad, mixed, 320);
    expect(events.map((e) => e.event)).toEqual(['speech_start', 'speech_end']);
    run(vad, concatPcm(new Int16Array(rate), speech.subarray(0, rate / 2)), 320);
    expect(vad.speaking).toBe(true);
    vad.reset();
    expect(vad.speaking).toBe(false);
  });

  it('rejects an unusable sample rate with a clear error', () => {
    expect(() => new VoiceActivityDetector({ sampleRate: 0 })).toThrow(/sampleRate/);
  });
});
