import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { designVoice } from '../../../src/companion/speech/voiceDesign.js';
import { analyzeVoiceSample } from '../../../src/companion/speech/voiceCloneAnalysis.js';
import { EspeakSynthesizer } from '../../../src/companion/speech/espeakSynthesizer.js';
import type { VoiceParams } from '../../../src/companion/speech/synthesizer.js';
import { concatPcm } from './speechFixtures.js';

describe('designVoice', () => {
  it('maps a calm elderly man with a deep, slow voice', () => {
    const v = designVoice('a calm elderly man with a deep voice who speaks slowly');
    expect(v).toMatchObject({ language: 'en-us', gender: 'male', variant: 'grandpa' });
    expect(v.age).toBeGreaterThanOrEqual(65);
    expect(v.pitch).toBeLessThan(35);
    expect(v.rate).toBeLessThan(150);
    expect(v.range).toBeLessThan(50);
  });

  it('maps a young energetic British woman with a high pitch', () => {
    const v = designVoice('young energetic woman, high pitch, British');
    expect(v).toMatchObject({ language: 'en-gb', gender: 'female', variant: 'f3' });
    expect(v.pitch).toBeGreaterThan(65);
    expect(v.rate).toBeGreaterThan(190);
    expect(v.range).toBeGreaterThan(60);
  });

  it('uses the language argument and refines English by accent', () => {
    expect(designVoice('a friendly woman', 'de').language).toBe('de');
    expect(designVoice('a Scottish man').language).toBe('en-gb-scotland');
    expect(designVoice('a cheerful girl', 'pt-BR').language).toBe('pt-br');
  });

  it('fails with DESIGN_FAILED for an unknown language code or a prompt with nothing usable', () => {
    expect(() => designVoice('a calm woman', 'klingon')).toThrow(expect.objectContaining({ code: 'DESIGN_FAILED' }));
    expect(() => designVoice('asdf qwerty')).toThrow(expect.objectContaining({ code: 'DESIGN_FAILED' }));
    expect(() => designVoice('')).toThrow(expect.objectContaining({ code: 'DESIGN_FAILED' }));
  });
});

describe('designed voices sound different (measured on espeak output)', () => {
  let synth: EspeakSynthesizer;
  beforeAll(() => {
    synth = new EspeakSynthesizer({ bulkWorkers: 1, realtimeWorkers: 0 });
  });
  afterAll(async () => {
    await synth.close();
  });
  const render = async (v: VoiceParams) => {
    const parts: Int16Array[] = [];
    await synth.synthesize('The quick brown fox jumps over the lazy dog. We read a story together tonight.', v, { onAudio: (p) => parts.push(p) });
    return analyzeVoiceSample(concatPcm(...parts), synth.sampleRate);
  };

  it('deep old man < man < woman < little girl in measured pitch, and gender is recovered', async () => {
    const oldMan = await render(designVoice('a calm elderly man with a deep voice'));
    const man = await render(designVoice('a man'));
    const woman = await render(designVoice('a woman'));
    const girl = await render(designVoice('a little girl'));
    expect(oldMan.medianF0Hz).toBeLessThan(man.medianF0Hz - 10);
    expect(man.medianF0Hz).toBeLessThan(woman.medianF0Hz - 50);
    expect(woman.medianF0Hz).toBeLessThan(girl.medianF0Hz - 30);
    expect([oldMan.gender, man.gender, woman.gender, girl.gender]).toEqual(['male', 'male', 'female', 'female']);
  });
});
