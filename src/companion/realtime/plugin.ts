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
import { HEADER, isUuid } from '../../protocol/headers.js';
import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../auth/secrets.js';
import { findWorkspaceByKeyHash } from '../db/workspaces.js';
import type { Modality } from '../../protocol/session.js';
import type { Brain } from './brain.js';
import { CallLimitError, CallRegistry, type RealtimeStats } from './callRegistry.js';
import { CallPeerError } from './callPeer.js';
import { OpenAiBrain } from './openAiBrain.js';
import { RuleBrain, type StoryCatalog } from './ruleBrain.js';
import { checkOffer } from './sdpOffer.js';
import { SessionRegistry } from './sessionRegistry.js';
import { bearerToken, ClientSecretStore, DEFAULT_KEY_TTL_S, MAX_KEY_TTL_S, MIN_KEY_TTL_S, type ClientKeyGrant } from './clientSecrets.js';
import { defaultGaSession, gaSessionObject, mergeGaSession, type GaSessionConfig } from './gaSession.js';
import { newId } from './eventWriter.js';
import { UpstreamError, UpstreamGateway } from './upstreamGateway.js';
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
const CORS_HEADERS = ['content-type', 'authorization', HEADER.workspaceKey, HEADER.clientId, HEADER.clientSecret, HEADER.appSource].join(', ');
/** GA call routes authenticate with a client key (Authorization: Bearer ek_...) or, for devices, their headers. */
const GA_CALLS_PATH = /^\/v1\/realtime\/calls(\/|\?|$)/;
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

/** An optional JSON object body (empty = {}), for client_secrets. */
function jsonBody(req: FastifyRequest): { ok: true; value: Record<string, unknown> } | { ok: false; code: RealtimeErrorCode; message: string } {
  const type = mediaType(req);
  const raw = typeof req.body === 'string' ? req.body : '';
  if (raw.trim() === '') return { ok: true, value: {} };
  if (type !== 'application/json') return { ok: false, code: 'unsupported_content_type', message: `Content-Type must be application/json, got "${type || 'none'}"` };
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { ok: false, code: 'invalid_json', message: 'the body is not valid JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { ok: false, code: 'invalid_json', message: 'the body must be a JSON object' };
  return { ok: true, value: v as Record<string, unknown> };
}

/** The upstream gateway when realtime.upstream.url is set ('no_key' when its key variable is empty). */
function createGateway(ctx: CompanionContext, logger: CompanionContext['logger']): UpstreamGateway | 'no_key' | undefined {
  const u = ctx.settings.realtime.upstream;
  if (!u.url) return undefined;
  const apiKey = process.env[u.apiKeyEnv];
  if (!apiKey) {
    logger.error({ variable: u.apiKeyEnv }, 'realtime.upstream is set but its API key variable is empty: device calls will be refused');
    return 'no_key';
  }
  logger.info({ upstream: new URL(u.url).origin, model: u.model }, 'gateway mode: device calls go to the upstream');
  return new UpstreamGateway({ url: u.url, apiKey, model: u.model, instructions: u.instructions, voice: u.voice, timeoutMs: u.timeoutMs });
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
  const grants = new WeakMap<FastifyRequest, ClientKeyGrant>();
  const clientKeys = new ClientSecretStore();
  const gateway = createGateway(ctx, logger);
  const gaDefaults = defaultGaSession({ silenceDurationMs: rt.vadHangoverMs, voice: rt.voice.language });
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

  const forward = async (gw: UpstreamGateway | 'no_key', sdp: string, clientId: string): Promise<{ ok: true; answer: string; callId: string } | { ok: false; message: string }> => {
    if (gw === 'no_key') return { ok: false, message: `the upstream API key variable ${rt.upstream.apiKeyEnv} is not set on the companion` };
    try {
      const r = await gw.answer(sdp);
      logger.info({ client: clientId, upstreamCall: r.upstreamCallId }, 'call forwarded to the upstream');
      return { ok: true, answer: r.answer, callId: r.upstreamCallId ?? newId('call') };
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      logger.warn({ client: clientId, reason: err.message }, 'upstream refused or unreachable');
      return { ok: false, message: err.message };
    }
  };

  const plugin: FastifyPluginAsync = async (app) => {
    // Every body arrives as text and is checked by the route, so a wrong or missing Content-Type is our 400.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: SDP_BODY_LIMIT }, (_req, body, done) => done(null, body));

    app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        return sendError(reply, req.url.startsWith('/v1/realtime/sessions') || req.url.startsWith('/v1/realtime/client_secrets') ? 'invalid_json' : 'invalid_sdp', `the body is larger than ${SDP_BODY_LIMIT} bytes`);
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
          .header('access-control-expose-headers', 'location')
          // stock clients add their own headers (X-OpenAI-Agents-SDK): allow what the preflight asks for;
          // credentials travel in headers, never cookies, so this grants a page nothing it did not already hold
          .header('access-control-allow-headers', String(req.headers['access-control-request-headers'] ?? CORS_HEADERS))
          .header('access-control-max-age', '600')
          .send();
      }
    });
    app.options('/v1/realtime/sessions', async () => undefined);
    app.options('/v1/realtime', async () => undefined);
    app.options('/v1/realtime/client_secrets', async () => undefined);
    app.options('/v1/realtime/calls', async () => undefined);
    app.options('/v1/realtime/calls/:callId/hangup', async () => undefined);
    // a browser reads the call id from Location
    app.addHook('onSend', async (_req, reply) => {
      reply.header('access-control-expose-headers', 'location');
    });

    // Authentication before the body is read: an unauthenticated client never gets its SDP parsed.
    app.addHook('onRequest', async (req, reply) => {
      if (GA_CALLS_PATH.test(req.url)) {
        const key = bearerToken(req.headers.authorization);
        if (key !== undefined || req.headers[HEADER.clientId] === undefined) {
          const grant = key === undefined ? undefined : clientKeys.resolve(key);
          if (!grant) {
            return sendError(
              reply,
              'invalid_api_key',
              key === undefined
                ? 'this route needs "Authorization: Bearer <client key>" (POST /v1/realtime/client_secrets mints one) or device headers'
                : 'the client key is unknown or expired',
            );
          }
          devices.set(req, { workspaceId: grant.workspaceId, clientId: grant.clientId, enrolledNow: false });
          grants.set(req, grant);
          return;
        }
      }
      // client_secrets for a web server that holds the workspace key but no device: "Authorization: Bearer <workspace
      // key>" (an admin key of that workspace). The minted key is bound to the workspace and to the X-Client-Id
      // given (a UUID), or to a fresh id per key: such a client is never enrolled, it only makes calls.
      if (req.url.startsWith('/v1/realtime/client_secrets') && req.headers[HEADER.workspaceKey] === undefined) {
        const adminKey = bearerToken(req.headers.authorization);
        if (adminKey !== undefined) {
          const ws = findWorkspaceByKeyHash(ctx.db, sha256Hex(adminKey));
          if (!ws) return sendError(reply, 'invalid_workspace_key', 'the Bearer key is no workspace key');
          const given = req.headers[HEADER.clientId];
          if (given !== undefined && (typeof given !== 'string' || !isUuid(given))) return sendError(reply, 'invalid_client_id', 'X-Client-Id must be a UUID');
          devices.set(req, { workspaceId: ws.id, clientId: typeof given === 'string' ? given : randomUUID(), enrolledNow: false });
          return;
        }
      }
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
        expires_at: Math.floor((Date.now() + (s.expiresAt - performance.now())) / 1000), // expiresAt is monotonic
      });
    });

    // ---- the GA WebRTC routes of the widely used realtime protocol, beside the spec's (README "GA routes") ----

    app.post('/v1/realtime/client_secrets', async (req, reply) => {
      const device = devices.get(req)!;
      const body = jsonBody(req);
      if (!body.ok) return sendError(reply, body.code, body.message);
      const b = body.value;
      let ttl = DEFAULT_KEY_TTL_S;
      if (b.expires_after !== undefined) {
        const e = b.expires_after as { anchor?: unknown; seconds?: unknown } | null;
        const sec = e?.seconds;
        if (typeof e !== 'object' || e === null || (e.anchor !== undefined && e.anchor !== 'created_at') || typeof sec !== 'number' || !Number.isInteger(sec) || sec < MIN_KEY_TTL_S || sec > MAX_KEY_TTL_S) {
          return sendError(reply, 'invalid_session', `expires_after must be {"anchor":"created_at","seconds":${MIN_KEY_TTL_S}..${MAX_KEY_TTL_S}}`);
        }
        ttl = sec;
      }
      const merged = b.session === undefined ? { ok: true as const, config: gaDefaults } : mergeGaSession(gaDefaults, b.session);
      if (!merged.ok) return sendError(reply, 'invalid_session', merged.message);
      const key = clientKeys.mint({ workspaceId: device.workspaceId, clientId: device.clientId, session: merged.config }, ttl);
      logger.info({ client: device.clientId, ttl }, 'client key minted');
      return reply.code(200).send({ value: key.value, expires_at: Math.floor(key.expiresAt / 1000), session: gaSessionObject(merged.config, newId('sess')) });
    });

    app.post('/v1/realtime/calls', async (req, reply) => {
      const device = devices.get(req)!;
      const type = mediaType(req);
      const raw = typeof req.body === 'string' ? req.body : '';
      let sdp: unknown = raw;
      let config: GaSessionConfig = grants.get(req)?.session ?? gaDefaults;
      if (type === 'multipart/form-data') {
        let form: FormData;
        try {
          form = await new Response(raw, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
        } catch {
          return sendError(reply, 'invalid_sdp', 'the multipart body cannot be read');
        }
        sdp = form.get('sdp');
        const part = form.get('session');
        if (part !== null) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(typeof part === 'string' ? part : await part.text());
          } catch {
            return sendError(reply, 'invalid_session', 'the "session" part is not JSON');
          }
          const merged = mergeGaSession(config, parsed);
          if (!merged.ok) return sendError(reply, 'invalid_session', merged.message);
          config = merged.config;
        }
        if (sdp !== null && typeof sdp !== 'string') sdp = await (sdp as Blob).text();
      } else if (type !== 'application/sdp') {
        return sendError(reply, 'unsupported_content_type', `Content-Type must be application/sdp or multipart/form-data, got "${type || 'none'}"`);
      }
      const offer = checkOffer(sdp ?? '');
      if (!offer.ok) return sendError(reply, offer.code, offer.message);
      if (gateway) {
        const forwarded = await forward(gateway, offer.sdp, device.clientId);
        if (!forwarded.ok) return sendError(reply, 'upstream_unavailable', forwarded.message);
        return reply.code(201).header('location', `/v1/realtime/calls/${forwarded.callId}`).type('application/sdp').send(forwarded.answer);
      }
      if (!calls.hasRoomFor(device.workspaceId, device.clientId)) return sendError(reply, 'too_many_calls', `the server holds its maximum of ${rt.maxCalls} calls`);
      const session = sessions.claim(device.workspaceId, device.clientId);
      syncStoryNames(device.workspaceId);
      try {
        const { call, answer } = await calls.start(session, offer.sdp, { ga: config });
        logger.info({ call: call.id, session: session.id, tools: config.tools.length }, 'GA call answered');
        return reply.code(201).header('location', `/v1/realtime/calls/${call.id}`).type('application/sdp').send(answer);
      } catch (err) {
        if (err instanceof CallPeerError) return sendError(reply, err.code, err.message);
        if (err instanceof CallLimitError) return sendError(reply, 'too_many_calls', err.message);
        throw err;
      }
    });

    app.post('/v1/realtime/calls/:callId/hangup', async (req, reply) => {
      const device = devices.get(req)!;
      const { callId } = req.params as { callId: string };
      const call = calls.get(callId);
      if (!call || call.session.clientId !== device.clientId || call.session.workspaceId !== device.workspaceId) {
        return sendError(reply, 'call_not_found', `no call "${callId}" of this device`);
      }
      await call.close('hangup');
      return reply.code(200).send({});
    });

    app.post('/v1/realtime', async (req, reply) => {
      const device = devices.get(req)!;
      const type = mediaType(req);
      if (type !== 'application/sdp') {
        return sendError(reply, 'unsupported_content_type', `Content-Type must be application/sdp, got "${type || 'none'}"`);
      }
      const offer = checkOffer(req.body);
      if (!offer.ok) return sendError(reply, offer.code, offer.message);
      if (gateway) {
        const forwarded = await forward(gateway, offer.sdp, device.clientId);
        if (!forwarded.ok) return sendError(reply, 'upstream_unavailable', forwarded.message);
        return reply.code(200).type('application/sdp').send(forwarded.answer);
      }
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
