// POST /text-to-speech/{voice_id}/with-timestamps: speech in a stored file behind a signed URL, plus word
// timings from the synthesiser itself (espeak-ng word events: exact sample positions).
import { promises as fs } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { isUuid } from '../../protocol/headers.js';
import { RestError } from '../../protocol/restErrors.js';
import type { CompanionContext } from '../context.js';
import { getVoice, isVisibleTo, type VoiceRow } from '../db/voices.js';
import { synthesizeToMp3File, synthesizeToPcmFile } from '../services/speechOutput.js';
import { ensureAdapterProfile } from '../services/voiceProfiles.js';
import { alignWordTimestamps, type ApiWordTimestamp } from '../tts/wordTimestamps.js';
import { SPEED_BOUNDS, STABILITY_BOUNDS } from '../tts/ttsAdapter.js';
import { jsonObject, requestAbortSignal } from './requestHelpers.js';

export const MAX_TEXT_LENGTH = 15_000;

export interface TimestampedSpeech {
  audio_url: string;
  expires_in: number;
  duration_seconds: number;
  timestamps: ApiWordTimestamp[];
  full_text: string;
}

function optionalNumberIn(body: Record<string, unknown>, key: string, b: { min: number; max: number }): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RestError('INVALID_REQUEST', `${key} must be a number`);
  if (v < b.min || v > b.max) throw new RestError('INVALID_REQUEST', `${key} must be between ${b.min} and ${b.max}, got ${v}`);
  return v;
}

/** The voice for a device: unknown id or another workspace's voice = VOICE_NOT_FOUND (404); another
 *  client's clone in the same workspace = VOICE_NOT_AVAILABLE (403). */
export function voiceForDevice(ctx: CompanionContext, voiceId: string, workspaceId: string, clientId: string): VoiceRow {
  const row = getVoice(ctx.db, voiceId);
  if (!row || row.workspace_id !== workspaceId) throw new RestError('VOICE_NOT_FOUND', `no voice ${voiceId} in this workspace`);
  if (!isVisibleTo(row, workspaceId, clientId)) throw new RestError('VOICE_NOT_AVAILABLE', 'this voice belongs to another device');
  return row;
}

export function ttsRoutes(ctx: CompanionContext): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Params: { voice_id: string } }>('/text-to-speech/:voice_id/with-timestamps', async (req, reply) => {
      const voiceId = req.params.voice_id;
      if (!isUuid(voiceId)) throw new RestError('INVALID_VOICE_ID', 'voice_id must be a UUID');
      const body = jsonObject(req.body);
      const text = body.text;
      if (text !== undefined && text !== null && typeof text !== 'string') throw new RestError('INVALID_REQUEST', 'text must be a string');
      if (typeof text !== 'string' || text.trim() === '') throw new RestError('EMPTY_TEXT', 'text is empty');
      if (text.length > MAX_TEXT_LENGTH) {
        throw new RestError('TEXT_TOO_LONG', `text has ${text.length} characters; at most ${MAX_TEXT_LENGTH} are accepted`);
      }
      const fmt = body.output_format;
      if (fmt !== undefined && fmt !== null && typeof fmt !== 'string') throw new RestError('INVALID_REQUEST', 'output_format must be a string');
      const mp3 = typeof fmt === 'string' && fmt.toLowerCase().includes('mp3');
      const speed = optionalNumberIn(body, 'speed', SPEED_BOUNDS);
      const stability = optionalNumberIn(body, 'stability', STABILITY_BOUNDS);

      const row = voiceForDevice(ctx, voiceId.toLowerCase(), req.device.workspaceId, req.device.clientId);
      const signal = requestAbortSignal(req, reply);
      const voice = await ensureAdapterProfile(ctx, row, signal);
      const job = { text, voice, speed, stability, signal };
      const out = mp3 ? await synthesizeToMp3File(ctx, job) : await synthesizeToPcmFile(ctx, job, { wav: true });
      const rel = ctx.audio.newRelPath('tts', mp3 ? 'mp3' : 'wav');
      try {
        await ctx.audio.commit(out.tempPath, rel);
      } catch (err) {
        await fs.rm(out.tempPath, { force: true });
        throw new RestError('STORAGE_ERROR', 'the audio could not be stored', { cause: err });
      }
      const durationMs = out.result.durationMs;
      const signed = ctx.signer.sign(rel);
      const res: TimestampedSpeech = {
        audio_url: signed.url,
        expires_in: signed.expiresIn,
        duration_seconds: Math.round(durationMs) / 1000,
        timestamps: alignWordTimestamps(text, out.result.words, durationMs),
        full_text: text,
      };
      return res;
    });
  };
}
