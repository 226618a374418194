// The offline TTS adapter: espeak-ng through the Synthesizer engine. There is no neural voice model here, so a
// "profile" is the voice's espeak parameters; its id is a digest of them, so a profile that changes gets a new id.
import { createHash } from 'node:crypto';
import { isSpeechError } from '../speech/speechError.js';
import type { Synthesizer, VoiceParams } from '../speech/synthesizer.js';
import { STABILITY_BOUNDS, TtsAdapterError, type AdapterSynthesisRequest, type AdapterSynthesisResult, type TtsAdapter, type TtsVoice } from './ttsAdapter.js';

export class EspeakAdapter implements TtsAdapter {
  readonly name = 'espeak';

  constructor(private readonly synth: Synthesizer) {}

  get sampleRate(): number {
    return this.synth.sampleRate;
  }

  async syncProfile(voice: TtsVoice): Promise<{ profileId: string }> {
    const digest = createHash('sha256').update(JSON.stringify(voice.params)).digest('hex').slice(0, 16);
    return { profileId: `espeak-${digest}` };
  }

  async synthesizeWithTimestamps(req: AdapterSynthesisRequest): Promise<AdapterSynthesisResult> {
    const params = applyStability(req.voice.params, req.stability);
    try {
      return await this.synth.synthesize(req.text, params, {
        speed: req.speed,
        onAudio: req.onAudio,
        signal: req.signal,
        lane: req.lane ?? 'bulk',
      });
    } catch (err) {
      if (isSpeechError(err, 'ABORTED')) throw new TtsAdapterError('ABORTED', 'synthesis aborted', { cause: err });
      throw new TtsAdapterError('TTS_FAILED', `speech synthesis failed: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    /* the synthesizer belongs to the context, which closes it */
  }
}

/** Stability 0..1 scales the pitch range: 0.5 keeps the voice as it is, 1 halves the movement (steadier),
 *  0 makes it 1.5 times livelier. espeak has no other notion of stability. */
export function applyStability(params: VoiceParams, stability: number | undefined): VoiceParams {
  if (stability === undefined) return params;
  const s = Math.min(STABILITY_BOUNDS.max, Math.max(STABILITY_BOUNDS.min, stability));
  const range = Math.round(Math.min(100, Math.max(0, (params.range ?? 50) * (1.5 - s))));
  return { ...params, range };
}
