// Voice rows as the TTS adapter sees them, and their adapter profiles. A stored profile id is prefixed with
// the adapter's name, so switching adapters (espeak -> an external server) re-registers voices on first use.
import path from 'node:path';
import type { CompanionContext } from '../context.js';
import { setAdapterProfile, voiceParams, type VoiceRow } from '../db/voices.js';
import type { TtsVoice } from '../tts/ttsAdapter.js';
import { adapterFailure } from './adapterErrors.js';

export function toTtsVoice(ctx: CompanionContext, row: VoiceRow): TtsVoice {
  const prefix = `${ctx.tts.name}:`;
  return {
    id: row.id,
    name: row.name,
    category: row.category,
    language: row.language,
    params: voiceParams(row),
    referenceAudioPath: row.reference_audio_path ? path.join(ctx.audio.root, row.reference_audio_path) : undefined,
    referenceText: row.reference_text ?? undefined,
    voiceClonePromptPath: row.voice_clone_prompt_path ? path.join(ctx.audio.root, row.voice_clone_prompt_path) : undefined,
    adapterProfileId: row.adapter_profile_id?.startsWith(prefix) ? row.adapter_profile_id.slice(prefix.length) : undefined,
    designPrompt: row.design_prompt ?? undefined,
  };
}

/** Registers the voice with the adapter (syncProfile) unless this adapter already has it; returns the voice
 *  with its profile id. Throws RestError ADAPTER_SYNC_FAILED / ADAPTER_NOT_CONFIGURED. */
export async function ensureAdapterProfile(ctx: CompanionContext, row: VoiceRow, signal?: AbortSignal): Promise<TtsVoice> {
  const voice = toTtsVoice(ctx, row);
  if (voice.adapterProfileId) return voice;
  try {
    const { profileId } = await ctx.tts.syncProfile(voice, signal);
    setAdapterProfile(ctx.db, row.id, `${ctx.tts.name}:${profileId}`);
    return { ...voice, adapterProfileId: profileId };
  } catch (err) {
    throw adapterFailure(err);
  }
}
