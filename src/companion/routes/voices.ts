// GET /voices, POST /voices/clone (multipart), POST /voices/design (JSON).
import { createWriteStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { FastifyPluginAsync } from 'fastify';
import { RestError } from '../../protocol/restErrors.js';
import type { CompanionContext } from '../context.js';
import { dbGeneration } from '../db/database.js';
import { listVisibleVoiceCards, type VoiceCard } from '../db/voices.js';
import { cloneVoice, designNewVoice } from '../services/voiceCreation.js';
import { jsonObject, optionalString, requestAbortSignal } from './requestHelpers.js';

const LANGUAGE_RE = /^[a-z]{2,3}([-_][a-z0-9]{1,8})*$/i;
const MAX_NAME = 100;
const MAX_DESCRIPTION = 2000;

function checkName(name: string | undefined, fallback?: string): string {
  const n = (name ?? '').trim() || fallback;
  if (!n) throw new RestError('INVALID_REQUEST', 'name is required');
  if (n.length > MAX_NAME) throw new RestError('INVALID_REQUEST', `name is longer than ${MAX_NAME} characters`);
  return n;
}

function checkLanguage(language: string | undefined): string {
  const l = (language ?? '').trim() || 'en-us';
  if (!LANGUAGE_RE.test(l)) throw new RestError('INVALID_REQUEST', 'language must be a language code such as en-us or de');
  return l.toLowerCase().replace('_', '-');
}

function checkDescription(d: string | undefined): string {
  const s = d ?? '';
  if (s.length > MAX_DESCRIPTION) throw new RestError('INVALID_REQUEST', `description is longer than ${MAX_DESCRIPTION} characters`);
  return s;
}

export function voiceRoutes(ctx: CompanionContext): FastifyPluginAsync {
  return async (app) => {
    // GET /voices is the hot read path (every device polls it): the list is cached per device and dropped
    // whenever the voices change (in this process or, via SQLite's data_version, in an admin command)
    const lists = new Map<string, { generation: string; cards: VoiceCard[] }>();
    const voiceListSchema = {
      response: {
        200: {
          type: 'object',
          properties: {
            voices: {
              type: 'array',
              items: {
                type: 'object',
                properties: { voice_id: { type: 'string' }, name: { type: 'string' }, category: { type: 'string' }, preview_url: { type: 'string' } },
                required: ['voice_id', 'name', 'category'],
              },
            },
          },
          required: ['voices'],
        },
      },
    };
    app.get('/voices', { schema: voiceListSchema }, async (req) => {
      const generation = dbGeneration(ctx.db);
      const cacheKey = `${req.device.workspaceId}/${req.device.clientId}`;
      let entry = lists.get(cacheKey);
      if (!entry || entry.generation !== generation) {
        if (lists.size > 10_000) lists.clear();
        entry = { generation, cards: listVisibleVoiceCards(ctx.db, req.device.workspaceId, req.device.clientId) };
        lists.set(cacheKey, entry);
      }
      return {
        voices: entry.cards.map((r) => {
          const v: { voice_id: string; name: string; category: string; preview_url?: string } = { voice_id: r.id, name: r.name, category: r.category };
          if (r.reference_audio_path) v.preview_url = ctx.signer.sign(r.reference_audio_path).url;
          return v;
        }),
      };
    });

    app.post('/voices/clone', async (req, reply) => {
      if (!req.isMultipart()) {
        throw new RestError('UNSUPPORTED_CONTENT_TYPE', 'voices/clone takes multipart/form-data (fields name, description, audio_file)');
      }
      const signal = requestAbortSignal(req, reply);
      const upload = ctx.audio.tempPath('.upload');
      const fields: Record<string, string> = {};
      let uploaded = false;
      try {
        // the file streams to disk (the size limit is enforced while it arrives); nothing is buffered whole
        for await (const part of req.parts()) {
          if (part.type === 'file') {
            if (part.fieldname !== 'audio_file' || uploaded) {
              part.file.resume();
              continue;
            }
            uploaded = true;
            try {
              await pipeline(part.file, createWriteStream(upload, { mode: 0o600 }));
            } catch (err) {
              if ((err as { statusCode?: number }).statusCode === 413 || part.file.truncated) {
                throw new RestError('PAYLOAD_TOO_LARGE', `audio_file is larger than ${ctx.settings.maxUploadBytes} bytes`, { cause: err });
              }
              throw err;
            }
          } else if (typeof part.value === 'string') {
            fields[part.fieldname] = part.value;
          }
        }
        const name = checkName(fields.name);
        const description = checkDescription(fields.description);
        const language = checkLanguage(fields.language);
        const size = uploaded ? (await fs.stat(upload)).size : 0;
        if (size === 0) throw new RestError('EMPTY_AUDIO', 'audio_file is missing or empty');
        const created = await cloneVoice(ctx, req.device, { name, description, language, uploadPath: upload, signal });
        return reply.code(201).send(created);
      } finally {
        await fs.rm(upload, { force: true });
      }
    });

    app.post('/voices/design', async (req, reply) => {
      if (req.body !== undefined && !/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
        throw new RestError('UNSUPPORTED_CONTENT_TYPE', 'voices/design takes application/json');
      }
      const body = jsonObject(req.body);
      const prompt = body.design_prompt;
      if (prompt !== undefined && prompt !== null && typeof prompt !== 'string') throw new RestError('INVALID_REQUEST', 'design_prompt must be a string');
      if (typeof prompt !== 'string' || prompt.trim() === '') throw new RestError('MISSING_DESIGN_PROMPT', 'design_prompt is required');
      if (prompt.length > MAX_DESCRIPTION) throw new RestError('INVALID_REQUEST', `design_prompt is longer than ${MAX_DESCRIPTION} characters`);
      const name = checkName(optionalString(body, 'name'), prompt.trim().slice(0, 40));
      const rawLanguage = optionalString(body, 'language');
      // absent: the prompt's accent words may choose the language ("a British voice")
      const language = rawLanguage?.trim() ? checkLanguage(rawLanguage) : undefined;
      const description = checkDescription(optionalString(body, 'description'));
      const created = await designNewVoice(ctx, req.device, {
        name,
        designPrompt: prompt.trim(),
        language,
        description,
        signal: requestAbortSignal(req, reply),
      });
      return reply.code(201).send(created);
    });
  };
}
