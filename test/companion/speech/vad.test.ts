import { describe, expect, it } from 'vitest';
import { VoiceActivityDetector } from '../../../src/companion/speech/vad.js';
import { concatPcm, fliteSpeech, frames, harmonicHum, trimSilence, whiteNoise } from './speechFixtures.js';

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

  it('learnNoiseFloor() after a steady hum that was speech to it: the hum starts nothing more, louder speech over it does, and the floor falls back once it stops', () => {
    const rate = 48000;
    const vad = new VoiceActivityDetector({ sampleRate: rate });
    const hum = harmonicHum(rate * 20, -23, rate);
    // the premise: after room noise, the hum is speech (and, the floor not learning from speech, never ends)
    run(vad, whiteNoise(rate * 2, 0.003, 5), 960);
    expect(run(vad, hum.subarray(0, rate * 5), 960).map((e) => e.event)).toEqual(['speech_start']);
    expect(vad.speaking).toBe(true);
    // what IncomingAudio does at its maximum utterance length
    vad.learnNoiseFloor();
    expect(vad.speaking).toBe(false);
    expect(vad.noiseFloorDbfs).toBeGreaterThan(-24);
    expect(vad.noiseFloorDbfs).toBeLessThan(-22);
    expect(run(vad, hum.subarray(rate * 5, rate * 15), 960)).toEqual([]);
    // a command ~10 dB above the hum, spoken over it: one utterance, ended by its silence (the hum)
    const speech = trimSilence(fliteSpeech('turn the volume up', rate, 'slt'), rate);
    const over = Int16Array.from(hum.subarray(rate * 15, rate * 20));
    for (let i = 0; i < speech.length; i++) over[rate + i] = Math.max(-32768, Math.min(32767, over[rate + i] + speech[i]));
    const events = run(vad, over, 960);
    expect(events.map((e) => e.event)).toEqual(['speech_start', 'speech_end']);
    expect(events[0].ms).toBeGreaterThan(1000);
    expect(events[0].ms).toBeLessThan(1300);
    expect(events[1].ms).toBeLessThan(1000 + (speech.length * 1000) / rate + 600);
    // the hum stops: the floor is the room's again within a few frames, and quieter speech is heard
    run(vad, whiteNoise(rate / 5, 0.003, 6), 960);
    expect(vad.noiseFloorDbfs).toBeLessThan(-45);
    const quiet = Int16Array.from(speech, (x) => Math.round(x * 0.1)); // ~-33 dBFS
    expect(run(vad, concatPcm(quiet, new Int16Array(rate)), 960).map((e) => e.event)).toEqual(['speech_start', 'speech_end']);
  });

  it('rejects an unusable sample rate with a clear error', () => {
    expect(() => new VoiceActivityDetector({ sampleRate: 0 })).toThrow(/sampleRate/);
  });
});
