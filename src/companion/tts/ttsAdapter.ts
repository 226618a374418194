// The text-to-speech adapter: where voice profiles are registered and speech with word timings is made.
// The offline default (EspeakAdapter) runs espeak-ng in-process through the speech engines; HttpTtsAdapter
// talks to an external neural TTS server (voice cloning proper) when one is configured.
// Spec rule: a designed voice may pass its voice-clone-prompt path to the adapter; a clone uses the adapter's
// profile_id (obtained from syncProfile and stored with the voice).
import type { SynthesisLane, VoiceParams, WordTiming } from '../speech/synthesizer.js';
import { CodedError } from '../../common/errors.js';

export type TtsErrorCode = 'ADAPTER_NOT_CONFIGURED' | 'ADAPTER_SYNC_FAILED' | 'TTS_FAILED' | 'ABORTED';

export class TtsAdapterError extends CodedError<TtsErrorCode> {
  override name = 'TtsAdapterError';
}

/** What an adapter needs to know about a voice profile. */
export interface TtsVoice {
  id: string;
  name: string;
  category: 'cloned' | 'workspace';
  language: string;
  /** parameters of the offline synthesiser (measured from a clone sample or derived from a design prompt) */
  params: VoiceParams;
  /** absolute path of the reference recording (clone sample or designed preview), when there is one */
  referenceAudioPath?: string;
  /** transcript of the reference recording */
  referenceText?: string;
  /** designed voices: a prompt file the adapter may use instead of a profile */
  voiceClonePromptPath?: string;
  /** profile id returned by an earlier syncProfile */
  adapterProfileId?: string;
  designPrompt?: string;
}

export interface AdapterSynthesisRequest {
  text: string;
  voice: TtsVoice;
  /** 0.5..2 (1 = the voice's own pace) */
  speed?: number;
  /** 0..1: higher is steadier (less pitch movement) */
  stability?: number;
  /** receives mono s16 PCM at the result's sampleRate while it is produced */
  onAudio: (pcm: Int16Array) => void;
  signal?: AbortSignal;
  lane?: SynthesisLane;
}

export interface AdapterSynthesisResult {
  words: WordTiming[];
  samples: number;
  sampleRate: number;
  durationMs: number;
}

export interface TtsAdapter {
  readonly name: string;
  /** rate of the PCM passed to onAudio when known before synthesis (lets MP3 encoding run alongside) */
  readonly sampleRate: number | undefined;
  /** Registers (or refreshes) a voice profile; returns the adapter's id for it. Throws TtsAdapterError. */
  syncProfile(voice: TtsVoice, signal?: AbortSignal): Promise<{ profileId: string }>;
  /** Synthesises text with word timings, streaming PCM. Throws TtsAdapterError. */
  synthesizeWithTimestamps(req: AdapterSynthesisRequest): Promise<AdapterSynthesisResult>;
  close(): Promise<void>;
}

export const SPEED_BOUNDS = { min: 0.5, max: 2, default: 1 } as const;
export const STABILITY_BOUNDS = { min: 0, max: 1, default: 0.5 } as const;
