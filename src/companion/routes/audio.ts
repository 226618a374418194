// GET /v1/audio/<kind>/<uuid>.<ext>?expires=..&signature=.. : stored audio behind signed, time-limited URLs.
// No device headers (players fetch these URLs directly): the signature is the credential. Expired or
// tampered URLs get 403 (URL_EXPIRED / INVALID_SIGNATURE); the path shape admits no traversal.
import { createReadStream, promises as fs } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { RestError } from '../../protocol/restErrors.js';
import type { CompanionContext } from '../context.js';

const CONTENT_TYPE: Record<string, string> = { wav: 'audio/wav', mp3: 'audio/mpeg' };

export function audioRoutes(ctx: CompanionContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { kind: string; file: string }; Querystring: Record<string, unknown> }>('/v1/audio/:kind/:file', async (req, reply) => {
      const rel = `${req.params.kind}/${req.params.file}`;
      ctx.signer.verify(rel, req.query.expires, req.query.signature);
      const abs = ctx.audio.absPath(rel);
      let size: number;
      try {
        size = (await fs.stat(abs)).size;
      } catch {
        throw new RestError('NOT_FOUND', 'the audio is no longer stored');
      }
      const ext = rel.slice(rel.lastIndexOf('.') + 1);
      reply.header('content-type', CONTENT_TYPE[ext] ?? 'application/octet-stream');
      reply.header('content-length', size);
      reply.header('cache-control', 'private, max-age=60');
      return reply.send(createReadStream(abs));
    });
  };
}
