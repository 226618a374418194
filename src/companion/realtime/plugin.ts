// The realtime routes (spec sections 4, 5, 7): POST /v1/realtime/sessions and POST /v1/realtime (SDP exchange),
// device authentication on both, every failure as {error:{message,type,code}} from the registry in
// src/protocol/realtimeErrors.ts. The plugin is encapsulated: its body parsing, hooks and error handler apply to
// these routes only.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticatedDevice } from '../auth/deviceAuth.js';
import type { CompanionContext } from '../context.js';
import type { Db } from '../db/database.js';
import { listSluggedStories } from '../db/stories.js';
import { REALTIME_ERRORS, realtimeErrorBody, type RealtimeErrorCode } from '../../protocol/realtimeErrors.js';
import { HEADER } from '../../protocol/headers.js';
import type { Modality } from '../../protocol/session.js';
import type { Brain } from './brain.js';
import { CallLimitError, CallRegistry, type RealtimeStats } from './callRegistry.js';
import { CallPeerError } from './callPeer.js';
import { OpenAiBrain } from './openAiBrain.js';
import { RuleBrain, type StoryCatalog } from './ruleBrain.js';
import { checkOffer } from './sdpOffer.js';
import { SessionRegistry } from './sessionRegistry.js';
import { lowerHelperThreadsIncludingPool } from '../threads/helperThreads.js';

export interface RealtimeService {
  plugin: FastifyPluginAsync;
  /** ends every call (server shutdown) */
  close(): Promise<void>;
  /** live figures for benchmarks and diagnostics */
  stats(): RealtimeStats;
}

/** Optional abilities of a recogniser (PocketsphinxRecognizer and ThreadedRecognizer have both); other engines may lack them. */
interface RecognizerExtras {
  warmUp?: () => Promise<void>;
  setStoryNames?: (names: string[]) => void;
}

const SDP_BODY_LIMIT = 64 * 1024;
const CORS_HEADERS = ['content-type', HEADER.workspaceKey, HEADER.clientId, HEADER.clientSecret, HEADER.appSource].join(', ');
const MODALITIES: readonly Modality[] = ['text', 'audio'];

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

function mediaType(req: FastifyRequest): string {
  return String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
}

function sendError(reply: FastifyReply, code: RealtimeErrorCode, message: string): FastifyReply {
  return reply.code(REALTIME_ERRORS[code].status).type('application/json').send(realtimeErrorBody(code, message));
}

export function createBrain(ctx: CompanionContext): Brain {
  const b = ctx.settings.realtime.brain;
  if (b.kind === 'openai') {
    const apiKey = b.apiKeyEnv ? process.env[b.apiKeyEnv] : undefined;
    return new OpenAiBrain({ baseUrl: b.baseUrl ?? '', model: b.model ?? '', apiKey });
  }
  return new RuleBrain(databaseStoryCatalog(ctx.db));
}

/** The assistant's view of a workspace's stories: the slugged ones, as devices see them. */
export function databaseStoryCatalog(db: Db): StoryCatalog {
  return {
    list: (workspaceId) => listSluggedStories(db, workspaceId).map((s) => ({ name: s.name, slug: s.slug ?? '', transcript: s.transcript })),
  };
}

export function createRealtimeService(ctx: CompanionContext): RealtimeService {
  const rt = ctx.settings.realtime;
  // The frame pacer runs on the event loop: Node's helper threads give way to it (threads/helperThreads.ts).
  void lowerHelperThreadsIncludingPool().then((tids) => ctx.logger.debug({ threads: tids.length }, 'helper threads lowered to nice 19'));
  const loopback = rt.loopbackCandidates === 'always' || (rt.loopbackCandidates === 'auto' && isLoopbackHost(ctx.settings.host));
  const logger = ctx.logger.child({ module: 'realtime' });
  const sessions = new SessionRegistry();
  const calls = new CallRegistry(
    {
      iceServers: rt.iceServers,
      additionalHostAddresses: loopback ? ['127.0.0.1'] : [],
      transcriptFamily: rt.transcriptFamily,
      maxCalls: rt.maxCalls,
      idleTimeoutMs: rt.idleTimeoutMs,
      connectTimeoutMs: rt.connectTimeoutMs,
      vadHangoverMs: rt.vadHangoverMs,
      voice: { language: rt.voice.language, variant: rt.voice.variant, rate: rt.voice.rate },
    },
    { recognizer: ctx.speech.recognizer, synthesizer: ctx.speech.synthesizer, brain: createBrain(ctx), logger },
  );
  const devices = new WeakMap<FastifyRequest, AuthenticatedDevice>();
  const recognizer = ctx.speech.recognizer as typeof ctx.speech.recognizer & RecognizerExtras;
  // Load the recogniser's models now, not on the first call's first utterance (seconds of work).
  void recognizer.warmUp?.().catch((err: unknown) => logger.warn({ err }, 'recognizer warm-up failed'));
  // "read me the story <name>" is in the command grammar: keep it in step with the stories of calling workspaces.
  const storyWorkspaces = new Set<string>();
  let grammarStories = '';
  const syncStoryNames = (workspaceId: string): void => {
    if (!recognizer.setStoryNames) return;
    storyWorkspaces.add(workspaceId);
    const names = [...storyWorkspaces].flatMap((w) => listSluggedStories(ctx.db, w).map((s) => s.name)).sort();
    const key = names.join('\n');
    if (key === grammarStories) return;
    grammarStories = key;
    recognizer.setStoryNames(names);
  };

  const plugin: FastifyPluginAsync = async (app) => {
    // Every body arrives as text and is checked by the route, so a wrong or missing Content-Type is our 400.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: SDP_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return sendError(reply, req.url.startsWith('/v1/realtime/sessions') ? 'invalid_json' : 'invalid_sdp', `the body is larger than ${SDP_BODY_LIMIT} bytes`);
      }
      if (err.statusCode && err.statusCode < 500) {
        return sendError(reply, 'invalid_json', err.message);
      }
      logger.error({ err, url: req.url.split('?')[0] }, 'realtime request failed');
      return sendError(reply, 'server_error', 'internal server error');
    });

    // Browsers (a web client on another origin) may call these routes: credentials travel in headers, not
    // cookies, so any origin may ask; the preflight itself carries no device headers and is not authenticated.
    app.addHook('onRequest', async (req, reply) => {
      reply.header('access-control-allow-origin', '*');
      if (req.method === 'OPTIONS') {
        return reply
          .code(204)
          .header('access-control-allow-methods', 'POST, OPTIONS')
          .header('access-control-allow-headers', CORS_HEADERS)
          .header('access-control-max-age', '600')
          .send();
      }
    });
    app.options('/v1/realtime/sessions', async () => undefined);
    app.options('/v1/realtime', async () => undefined);

    // Authentication before the body is read: an unauthenticated client never gets its SDP parsed.
    app.addHook('onRequest', async (req, reply) => {
      const r = ctx.auth.authenticate(req.headers);
      if (!r.ok) return sendError(reply, r.code, r.message);
      devices.set(req, r.device);
    });

    app.post('/v1/realtime/sessions', async (req, reply) => {
      const device = devices.get(req)!;
      const type = mediaType(req);
      const raw = typeof req.body === 'string' ? req.body : '';
      if (type !== 'application/json' && !(type === '' && raw.trim() === '')) {
        return sendError(reply, 'unsupported_content_type', `Content-Type must be application/json, got "${type || 'none'}"`);
      }
      let body: unknown = {};
      if (raw.trim() !== '') {
        try {
          body = JSON.parse(raw);
        } catch {
          return sendError(reply, 'invalid_json', 'the body is not valid JSON');
        }
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) return sendError(reply, 'invalid_json', 'the body must be a JSON object');
      const m = (body as { modalities?: unknown }).modalities;
      let modalities: Modality[] = ['audio', 'text'];
      if (m !== undefined) {
        if (!Array.isArray(m) || m.length === 0 || !m.every((x) => MODALITIES.includes(x as Modality))) {
          return sendError(reply, 'invalid_modalities', 'modalities must be a non-empty array of "text" and "audio"');
        }
        modalities = [...new Set(m as Modality[])];
      }
      const s = sessions.create(device.workspaceId, device.clientId, modalities);
      return reply.code(200).send({
        id: s.id,
        object: 'realtime.session',
        modalities: s.modalities,
        iceServers: rt.iceServers,
        expires_at: Math.floor(s.expiresAt / 1000),
      });
    });

    app.post('/v1/realtime', async (req, reply) => {
      const device = devices.get(req)!;
      const type = mediaType(req);
      if (type !== 'application/sdp') {
        return sendError(reply, 'unsupported_content_type', `Content-Type must be application/sdp, got "${type || 'none'}"`);
      }
      const offer = checkOffer(req.body);
      if (!offer.ok) return sendError(reply, offer.code, offer.message);
      if (!calls.hasRoomFor(device.workspaceId, device.clientId)) return sendError(reply, 'too_many_calls', `the server holds its maximum of ${rt.maxCalls} calls`);
      const session = sessions.claim(device.workspaceId, device.clientId);
      syncStoryNames(device.workspaceId);
      try {
        const { call, answer } = await calls.start(session, offer.sdp);
        logger.info({ call: call.id, session: session.id, implicitSession: session.implicit }, 'call answered');
        return reply.code(200).type('application/sdp').send(answer);
      } catch (err) {
        if (err instanceof CallPeerError) return sendError(reply, err.code, err.message);
        if (err instanceof CallLimitError) return sendError(reply, 'too_many_calls', err.message);
        throw err;
      }
    });
  };

  return { plugin, close: () => calls.close(), stats: () => calls.stats() };
}
