// The REST API of spec sections 2, 4, 5, 7, 8 under /v1/app: voices (list, clone, design), timestamped speech,
// stories (list, full, narration). Every request is authenticated first (onRequest: before any body is read,
// so an unauthenticated upload is refused without being received).
import multipart from '@fastify/multipart';
import type { FastifyPluginAsync } from 'fastify';
import { REST_ERRORS, RestError } from '../../protocol/restErrors.js';
import type { AuthenticatedDevice } from '../auth/deviceAuth.js';
import type { CompanionContext } from '../context.js';
import { storyRoutes } from './stories.js';
import { ttsRoutes } from './tts.js';
import { voiceRoutes } from './voices.js';

declare module 'fastify' {
  interface FastifyRequest {
    device: AuthenticatedDevice;
  }
}

export function restApi(ctx: CompanionContext): FastifyPluginAsync {
  return async (app) => {
    app.decorateRequest('device', null as unknown as AuthenticatedDevice);
    app.addHook('onRequest', async (req, reply) => {
      const r = ctx.auth.authenticate(req.headers);
      if (!r.ok) {
        return reply.code(REST_ERRORS[r.restCode].status).send(new RestError(r.restCode, r.message).toBody());
      }
      if (r.device.enrolledNow) ctx.logger.info({ client: r.device.clientId, workspace: r.device.workspaceId }, 'client enrolled');
      req.device = r.device;
    });

    // An empty body with Content-Type application/json is "no body" (POST .../read has an optional body).
    const strictJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
      if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
      strictJson(req, body as string, done);
    });
    await app.register(multipart, {
      limits: {
        fileSize: ctx.settings.maxUploadBytes,
        files: 1,
        fields: 16,
        fieldSize: 64 * 1024,
        parts: 24,
        headerPairs: 100,
      },
    });

    await app.register(voiceRoutes(ctx));
    await app.register(ttsRoutes(ctx));
    await app.register(storyRoutes(ctx));
  };
}
