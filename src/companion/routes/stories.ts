// GET /stories, GET /stories/{slug}, POST /stories/{slug}/read (WAV narration).
//
// Narration keeps memory flat: the synthesiser's PCM streams into a temp file (fixed 256 KiB buffer), then
// the response sends the 44-byte WAV header and the file as a stream with Content-Length set, and the temp
// file is removed when the response ends. (Streaming straight to the client would need the length before the
// audio exists; espeak's length is only known at the end.)
import { createReadStream, promises as fs } from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { wavHeader } from '../../common/audio/wav.js';
import { isUuid } from '../../protocol/headers.js';
import { RestError } from '../../protocol/restErrors.js';
import type { CompanionContext } from '../context.js';
import { getStoryBySlug, listSluggedStories, type StoryRow } from '../db/stories.js';
import { getVoice, listVisibleVoices, type VoiceRow } from '../db/voices.js';
import { synthesizeToPcmFile } from '../services/speechOutput.js';
import { ensureAdapterProfile } from '../services/voiceProfiles.js';
import { jsonObject, requestAbortSignal } from './requestHelpers.js';
import { voiceForDevice } from './tts.js';

/** Reading pace for estimated_reading_time_seconds (typical read-aloud pace for children's stories). */
export const READING_WORDS_PER_MINUTE = 150;

export function storyCard(s: StoryRow) {
  const card: Record<string, unknown> = {
    story_id: s.id,
    slug: s.slug,
    name: s.name,
    age_group: s.age_group,
    illustration_url: s.illustration_url,
    illustration_alt: s.illustration_alt,
    sort_order: s.sort_order,
  };
  if (s.excerpt) card.excerpt = s.excerpt;
  return card;
}

export function fullStory(s: StoryRow) {
  const words = s.transcript.split(/\s+/).filter(Boolean).length;
  const story: Record<string, unknown> = {
    story_id: s.id,
    slug: s.slug,
    name: s.name,
    transcript: s.transcript,
    illustration_url: s.illustration_url,
    illustration_alt: s.illustration_alt,
    estimated_reading_time_seconds: Math.max(1, Math.round((words * 60) / READING_WORDS_PER_MINUTE)),
  };
  if (s.excerpt) story.excerpt = s.excerpt;
  return story;
}

function storyOf(ctx: CompanionContext, workspaceId: string, slug: string): StoryRow {
  const s = getStoryBySlug(ctx.db, workspaceId, slug);
  if (!s) throw new RestError('STORY_NOT_FOUND', `no story '${slug}' in this workspace`);
  return s;
}

/** Spec order: the given voice_id; else the story's default voice; else the workspace's first voice this
 *  device may use (workspace voices first). None at all: 400 VOICE_NOT_AVAILABLE. */
function narrationVoice(ctx: CompanionContext, story: StoryRow, voiceId: unknown, workspaceId: string, clientId: string): VoiceRow {
  if (voiceId !== undefined && voiceId !== null) {
    if (typeof voiceId !== 'string' || !isUuid(voiceId)) throw new RestError('VOICE_NOT_FOUND', 'voice_id is not the id of a voice');
    return voiceForDevice(ctx, voiceId.toLowerCase(), workspaceId, clientId);
  }
  if (story.default_voice_profile_id) {
    const v = getVoice(ctx.db, story.default_voice_profile_id);
    if (v && v.workspace_id === workspaceId) return v;
  }
  const first = listVisibleVoices(ctx.db, workspaceId, clientId)[0];
  if (!first) throw new RestError('VOICE_NOT_AVAILABLE', 'this workspace has no voice to narrate with', { status: 400 });
  return first;
}

export function storyRoutes(ctx: CompanionContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/stories', async (req) => listSluggedStories(ctx.db, req.device.workspaceId).map(storyCard));

    app.get<{ Params: { slug: string } }>('/stories/:slug', async (req) => fullStory(storyOf(ctx, req.device.workspaceId, req.params.slug)));

    app.post<{ Params: { slug: string } }>('/stories/:slug/read', async (req, reply) => {
      const story = storyOf(ctx, req.device.workspaceId, req.params.slug);
      const body = jsonObject(req.body);
      const row = narrationVoice(ctx, story, body.voice_id, req.device.workspaceId, req.device.clientId);
      const signal = requestAbortSignal(req, reply);
      const voice = await ensureAdapterProfile(ctx, row, signal);
      const out = await synthesizeToPcmFile(ctx, { text: story.transcript, voice, signal }, { wav: false });
      const header = wavHeader(out.pcmBytes, out.result.sampleRate);
      const tempPath = out.tempPath;
      const cleanup = () => void fs.rm(tempPath, { force: true });
      reply.raw.once('close', cleanup);
      const body$ = Readable.from(
        (async function* () {
          yield header;
          yield* createReadStream(tempPath, { highWaterMark: 64 * 1024 });
        })(),
        { objectMode: false },
      );
      reply.header('content-type', 'audio/wav');
      reply.header('content-length', header.length + out.pcmBytes);
      return reply.send(body$);
    });
  };
}
