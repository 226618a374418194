// GET /voices, POST /voices/clone (multipart), POST /voices/design (JSON).
import { createWriteStream, promises as fs } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Multipart } from '@fastify/multipart';
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

    /** req.parts(), with the parser's own failures (a truncated body, a broken part header) as INVALID_MULTIPART
     *  instead of a 500: they are the client's doing. */
    async function* multipartParts(req: FastifyRequest) {
      const it = req.parts()[Symbol.asyncIterator]();
      for (;;) {
        let next: IteratorResult<Multipart>;
        try {
          next = await it.next();
        } catch (err) {
          throw multipartError(err);
        }
        if (next.done) return;
        yield next.value;
      }
    }

    app.post('/voices/clone', async (req, reply) => {
      if (!req.isMultipart()) {
        throw new RestError('UNSUPPORTED_CONTENT_TYPE', 'voices/clone takes multipart/form-data (fields name, description, audio_file)');
      }
      checkBoundary(req.headers['content-type'] ?? '');
      const signal = requestAbortSignal(req, reply);
      const upload = ctx.audio.tempPath('.upload');
      const fields: Record<string, string> = {};
      let uploaded = false;
      try {
        // the file streams to disk (the size limit is enforced while it arrives); nothing is buffered whole
        for await (const part of multipartParts(req)) {
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
              // the disk side failing is ours; the stream side (the body ended mid-file) is the client's
              if (typeof (err as NodeJS.ErrnoException).syscall === 'string') throw new RestError('STORAGE_ERROR', 'the upload could not be stored', { cause: err });
              throw multipartError(err);
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

/** RFC 2046: a boundary is 1 to 70 characters of a restricted set. Checked before parsing, so a missing or
 *  monstrous one (busboy throws on boundaries over ~250 characters) is a clear 400. */
function checkBoundary(contentType: string): void {
  const m = /;\s*boundary=(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2] ?? '';
  if (!boundary) throw new RestError('INVALID_MULTIPART', 'the multipart Content-Type has no boundary parameter');
  if (boundary.length > 70 || !/^[0-9A-Za-z'()+_,\-./:=? ]*[0-9A-Za-z'()+_,\-./:=?]$/.test(boundary)) {
    throw new RestError('INVALID_MULTIPART', 'the multipart boundary must be 1 to 70 characters of the RFC 2046 set');
  }
}

/** A failure of the multipart parser as the client's error; limits keep their own codes (toRestError). */
function multipartError(err: unknown): unknown {
  if (err instanceof RestError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('FST_')) return err; // limits: 413 through toRestError
  return new RestError('INVALID_MULTIPART', `the multipart body could not be parsed: ${(err as Error)?.message ?? 'unknown error'}`, { cause: err });
}
