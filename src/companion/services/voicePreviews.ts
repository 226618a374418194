// Preview (reference) audio of voices made from a description: a short sentence spoken by the offline
// synthesiser with the voice's parameters. Designed voices get theirs at creation; workspace voices added
// by the admin commands (which do not start the speech engines) get theirs in the background at server start.
import { promises as fs } from 'node:fs';
import type { CompanionContext } from '../context.js';
import { setReferenceAudio, voiceParams, voicesWithoutReferenceAudio } from '../db/voices.js';
import type { VoiceParams } from '../speech/synthesizer.js';
import { PcmFileWriter } from './pcmFile.js';

const PREVIEW_TEXT: Record<string, string> = {
  en: 'Hello! This is how I sound. Shall I read you a story tonight?',
  de: 'Hallo! So klinge ich. Soll ich dir heute Abend eine Geschichte vorlesen?',
  fr: 'Bonjour ! Voici ma voix. Veux-tu que je te lise une histoire ce soir ?',
  es: '¡Hola! Así suena mi voz. ¿Te leo un cuento esta noche?',
};

export function previewText(language: string): string {
  return PREVIEW_TEXT[language.slice(0, 2).toLowerCase()] ?? PREVIEW_TEXT.en;
}

/** Speaks the preview sentence into a temp WAV file; returns its path and text (caller commits or removes). */
export async function renderPreviewWav(ctx: CompanionContext, params: VoiceParams, signal?: AbortSignal): Promise<{ tempPath: string; text: string }> {
  const text = previewText(params.language);
  const tempPath = ctx.audio.tempPath('.wav');
  const writer = new PcmFileWriter(tempPath, { wav: true, sampleRate: ctx.speech.synthesizer.sampleRate });
  try {
    const r = await ctx.speech.synthesizer.synthesize(text, params, { onAudio: (pcm) => writer.write(pcm), signal, lane: 'bulk' });
    writer.finish(r.sampleRate);
    return { tempPath, text };
  } catch (err) {
    writer.abandon();
    await fs.rm(tempPath, { force: true });
    throw err;
  }
}

/** Gives every voice without reference audio a preview; returns how many were made. */
export async function ensureVoicePreviews(ctx: CompanionContext, signal?: AbortSignal): Promise<number> {
  let made = 0;
  for (const row of voicesWithoutReferenceAudio(ctx.db)) {
    if (signal?.aborted) break;
    const { tempPath, text } = await renderPreviewWav(ctx, voiceParams(row), signal);
    const rel = ctx.audio.newRelPath('voices', 'wav');
    await ctx.audio.commit(tempPath, rel);
    if (setReferenceAudio(ctx.db, row.id, rel, text)) made++;
    else await ctx.audio.remove(rel); // another process got there first
  }
  return made;
}
