// Creating voices: clone (from a recorded sample) and design (from a description).
//
// The offline adapter cannot clone a voice (no neural model runs here): a "clone" measures the sample (pitch,
// timbre) and derives the closest espeak voice; the sample itself is kept as the reference audio, which an
// external neural TTS adapter receives when configured.
//
// All-or-nothing: the audio is written in tmp/, renamed into audio/voices/, synced to the adapter, and only
// then is the voice row inserted (one statement). Any failure removes the file; a crash before the insert
// leaves at most an unreferenced file, removed at the next start. So no half-created voice is ever listed.
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { encodeWav } from '../../common/audio/wav.js';
import { RestError } from '../../protocol/restErrors.js';
import type { AuthenticatedDevice } from '../auth/deviceAuth.js';
import type { CompanionContext } from '../context.js';
import { insertVoice, type NewVoice, type VoiceRow } from '../db/voices.js';
import { decodeToPcm } from '../speech/audioConvert.js';
import { isSpeechError } from '../speech/speechError.js';
import type { VoiceParams } from '../speech/synthesizer.js';
import { analyzeVoiceSample } from '../speech/voiceCloneAnalysis.js';
import { designVoice } from '../speech/voiceDesign.js';
import { adapterFailure } from './adapterErrors.js';
import { toTtsVoice } from './voiceProfiles.js';
import { renderPreviewWav } from './voicePreviews.js';
import { probeDurationSeconds } from './probeDuration.js';
import { transcribeSample } from './sampleTranscription.js';

export const CLONE_MIN_SECONDS = 10;
export const CLONE_MAX_SECONDS = 30;
/** container padding (MP3/AAC priming) makes a "10 s" recording decode a few ms short or long */
export const CLONE_DURATION_TOLERANCE_SECONDS = 0.1;
const CLONE_RATE = 16_000;

export interface AppCloneResponse {
  voice_id: string;
  name: string;
  status: string;
  preview_url?: string;
}

export interface CloneInput {
  name: string;
  description: string;
  language: string;
  /** the uploaded file as received (any format ffmpeg reads) */
  uploadPath: string;
  signal?: AbortSignal;
}

/** Uploads larger than this are probed before decoding (smaller ones decode to at most a few MB anyway). */
const PROBE_ABOVE_BYTES = 1024 * 1024;

export async function cloneVoice(ctx: CompanionContext, device: AuthenticatedDevice, input: CloneInput): Promise<AppCloneResponse> {
  if ((await fs.stat(input.uploadPath)).size > PROBE_ABOVE_BYTES) {
    const declared = await probeDurationSeconds(input.uploadPath, input.signal);
    if (declared !== undefined && declared > CLONE_MAX_SECONDS + 1) {
      throw new RestError('AUDIO_TOO_LONG', `the sample lasts ${declared.toFixed(1)} s; at most ${CLONE_MAX_SECONDS} s are accepted`);
    }
  }
  let decoded;
  try {
    // decoded no further than the longest accepted sample: a small file can hold hours (a 72 KB FLAC of silence
    // held 10 h, 1.15 GB of PCM buffered twice) and declare no duration for the probe above (a WebM from a browser)
    decoded = await decodeToPcm(input.uploadPath, { sampleRate: CLONE_RATE, signal: input.signal, maxDurationSec: CLONE_MAX_SECONDS + CLONE_DURATION_TOLERANCE_SECONDS });
  } catch (err) {
    if (isSpeechError(err, 'EMPTY_AUDIO')) throw new RestError('EMPTY_AUDIO', 'audio_file contains no audio', { cause: err });
    if (isSpeechError(err, 'INVALID_AUDIO')) throw new RestError('INVALID_AUDIO', 'audio_file is not audio the server can decode', { cause: err });
    throw new RestError('INTERNAL_ERROR', 'the audio could not be converted', { cause: err });
  }
  const seconds = decoded.durationSec;
  if (seconds < CLONE_MIN_SECONDS - CLONE_DURATION_TOLERANCE_SECONDS) {
    throw new RestError('AUDIO_TOO_SHORT', `the sample lasts ${seconds.toFixed(1)} s; at least ${CLONE_MIN_SECONDS} s are needed`);
  }
  if (seconds > CLONE_MAX_SECONDS + CLONE_DURATION_TOLERANCE_SECONDS) {
    // decodeToPcm stopped half a second past the limit: the sample is at least that long, its length unknown
    throw new RestError('AUDIO_TOO_LONG', `the sample lasts more than ${(CLONE_MAX_SECONDS + CLONE_DURATION_TOLERANCE_SECONDS).toFixed(1)} s; at most ${CLONE_MAX_SECONDS} s are accepted`);
  }

  let transcript: string;
  try {
    transcript = await transcribeSample(ctx.speech.recognizer, decoded.pcm);
  } catch (err) {
    throw new RestError('TRANSCRIPTION_FAILED', 'the sample could not be transcribed', { cause: err });
  }
  if (!transcript) throw new RestError('TRANSCRIPTION_FAILED', 'no speech was recognised in the sample');

  let params: VoiceParams;
  try {
    params = { ...analyzeVoiceSample(decoded.pcm, CLONE_RATE).params, language: input.language };
  } catch (err) {
    throw new RestError('INVALID_AUDIO', 'no voice could be measured in the sample', { cause: err });
  }

  const id = randomUUID();
  const rel = `voices/${id}.wav`;
  const tempPath = ctx.audio.tempPath('.wav');
  try {
    await fs.writeFile(tempPath, encodeWav(decoded.pcm, CLONE_RATE), { mode: 0o600 });
    await ctx.audio.commit(tempPath, rel);
  } catch (err) {
    await fs.rm(tempPath, { force: true });
    await ctx.audio.remove(rel);
    throw new RestError('STORAGE_ERROR', 'the sample could not be stored', { cause: err });
  }
  const row = await registerVoice(ctx, {
    id,
    workspace_id: device.workspaceId,
    name: input.name,
    category: 'cloned',
    created_by_client: device.clientId,
    description: input.description,
    language: input.language,
    params_json: JSON.stringify(params),
    design_prompt: null,
    reference_text: transcript,
    adapter_profile_id: null,
    voice_clone_prompt_path: null,
    reference_audio_path: rel,
  }, input.signal);
  return creationResponse(ctx, row);
}

export interface DesignInput {
  name: string;
  designPrompt: string;
  language?: string;
  description: string;
  signal?: AbortSignal;
}

export async function designNewVoice(ctx: CompanionContext, device: AuthenticatedDevice, input: DesignInput): Promise<AppCloneResponse> {
  let params: VoiceParams;
  try {
    const { traits: _traits, ...designed } = designVoice(input.designPrompt, input.language);
    params = designed;
  } catch (err) {
    throw new RestError('DESIGN_FAILED', `the description could not be turned into a voice: ${(err as Error).message}`, { cause: err });
  }
  const id = randomUUID();
  const rel = `voices/${id}.wav`;
  let text: string;
  try {
    const preview = await renderPreviewWav(ctx, params, input.signal);
    text = preview.text;
    await ctx.audio.commit(preview.tempPath, rel).catch(async (err: unknown) => {
      await fs.rm(preview.tempPath, { force: true });
      throw new RestError('STORAGE_ERROR', 'the reference audio could not be stored', { cause: err });
    });
  } catch (err) {
    if (err instanceof RestError) throw err;
    throw new RestError('DESIGN_FAILED', 'the reference audio of the designed voice could not be produced', { cause: err });
  }
  const row = await registerVoice(ctx, {
    id,
    workspace_id: device.workspaceId,
    name: input.name,
    category: 'cloned', // made by this device: visible to it only (spec: "cloned = created by this device")
    created_by_client: device.clientId,
    description: input.description,
    language: params.language,
    params_json: JSON.stringify(params),
    design_prompt: input.designPrompt,
    reference_text: text,
    adapter_profile_id: null,
    // the designed voice's reference recording is its voice-clone prompt for a neural adapter
    voice_clone_prompt_path: rel,
    reference_audio_path: rel,
  }, input.signal);
  return creationResponse(ctx, row);
}

/** Syncs the stored voice to the adapter, then inserts its row; removes the audio if either fails. */
async function registerVoice(ctx: CompanionContext, v: NewVoice, signal?: AbortSignal): Promise<VoiceRow> {
  const draft = { ...v, status: 'ready', created_at: '' } as VoiceRow;
  let profile: string;
  try {
    const { profileId } = await ctx.tts.syncProfile(toTtsVoice(ctx, draft), signal);
    profile = `${ctx.tts.name}:${profileId}`;
  } catch (err) {
    await ctx.audio.remove(v.reference_audio_path);
    throw adapterFailure(err);
  }
  try {
    return insertVoice(ctx.db, { ...v, adapter_profile_id: profile });
  } catch (err) {
    await ctx.audio.remove(v.reference_audio_path);
    throw new RestError('STORAGE_ERROR', 'the voice could not be saved', { cause: err });
  }
}

export function creationResponse(ctx: CompanionContext, row: VoiceRow): AppCloneResponse {
  const out: AppCloneResponse = { voice_id: row.id, name: row.name, status: row.status };
  if (row.reference_audio_path) out.preview_url = ctx.signer.sign(row.reference_audio_path).url;
  return out;
}

