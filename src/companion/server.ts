// The companion server: one Fastify instance serving the REST API (/v1/app, routes/), signed audio
// (/v1/audio) and the realtime routes (/v1/realtime*, realtime/plugin.ts), all on one port.
// Request logging never includes headers (device secrets and workspace keys travel in them).
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { silentLogger, type Logger } from '../common/logger.js';
import { createCompanionContext, type CompanionContext, type SpeechEngines } from './context.js';
import { audioRoutes } from './routes/audio.js';
import { clientErrorHandler, sendError, sendNotFound } from './httpErrors.js';
import { restApi } from './routes/restApi.js';
import { ensureVoicePreviews } from './services/voicePreviews.js';
import type { CompanionSettings } from './settings.js';
import { listVoiceFilePaths } from './db/voices.js';
import { adoptDirectoryOwnerTree } from '../common/atomicFile.js';

export interface CompanionServer {
  url: string;
  port: number;
  context: CompanionContext;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  /** speech engines to use instead of creating the offline ones (they are then not closed by the server) */
  speech?: SpeechEngines;
}

interface RealtimeService {
  plugin: FastifyPluginAsync;
  close(): Promise<void>;
}

/** The realtime plugin (another module, src/companion/realtime/plugin.ts); absent in a build without it. */
async function loadRealtime(ctx: CompanionContext): Promise<RealtimeService | undefined> {
  let mod: { createRealtimeService?: (c: CompanionContext) => RealtimeService };
  try {
    mod = (await import('./realtime/plugin.js')) as typeof mod;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes('realtime/plugin')) {
      ctx.logger.warn('realtime plugin not present: /v1/realtime routes are not served');
      return undefined;
    }
    throw err;
  }
  return mod.createRealtimeService?.(ctx);
}

const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const LINGER_MAX_MS = 10_000;

/** Called before the reply is written while the request body is still unread: read and discard the rest, and
 *  when Node would destroy the socket after the response (Connection: close), half-close it instead, so the
 *  client reads the response before the connection goes. */
function lingerOnUnreadBody(req: IncomingMessage): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (req.complete || req.destroyed || !socket || (socket as { speakerAgentLinger?: boolean }).speakerAgentLinger) return;
  (socket as { speakerAgentLinger?: boolean }).speakerAgentLinger = true;
  const timer = setTimeout(() => socket.destroy(), LINGER_MAX_MS).unref();
  socket.once('close', () => clearTimeout(timer));
  socket.destroySoon = () => socket.end(); // FIN after the response; the socket closes when the client's FIN comes
  let read = 0;
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > LINGER_MAX_BYTES) socket.destroy();
  });
  req.resume();
}

export async function startCompanionServer(settings: CompanionSettings, opts: StartOptions = {}): Promise<CompanionServer> {
  const logger = opts.logger ?? silentLogger;
  const { context: ctx, setListeningUrl } = await createCompanionContext(settings, { logger, speech: opts.speech });
  const ownsSpeech = !opts.speech;
  let app: FastifyInstance | undefined;
  let realtime: RealtimeService | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  const previewAbort = new AbortController();

  const closeAll = async () => {
    previewAbort.abort();
    if (sweepTimer) clearInterval(sweepTimer);
    await app?.close().catch(() => undefined);
    await realtime?.close().catch((err: unknown) => logger.warn({ err }, 'realtime service close failed'));
    await ctx.tts.close().catch(() => undefined);
    if (ownsSpeech) {
      await ctx.speech.synthesizer.close().catch(() => undefined);
      await ctx.speech.recognizer.close().catch(() => undefined);
    }
    ctx.db.close();
    // `sudo speaker-agent companion` by hand on a speaker: what it wrote stays the service's to open
    adoptDirectoryOwnerTree(settings.dataDir);
  };

  try {
    adoptDirectoryOwnerTree(settings.dataDir); // the database and signing key a root start just created
    ctx.audio.sweepOrphanVoiceFiles(new Set(listVoiceFilePaths(ctx.db)));
    const http = Fastify({
      loggerInstance: logger as unknown as FastifyBaseLogger,
      logController: new LogController({ disableRequestLogging: true }), // logged below, without headers
      bodyLimit: 1024 * 1024, // JSON bodies; the multipart upload has its own limit (maxUploadBytes)
      forceCloseConnections: true,
      // a body that stops coming is not waited for (settings.requestTimeoutMs). Node looks at its connections every
      // `connectionsCheckingInterval` (30 s by default: at most a quarter of the timeout here), and takes the
      // smaller of the two timeouts for the headers, the larger for the whole request: its headersTimeout (60 s)
      // must not exceed the request's, or a shorter requestTimeout became 60 s.
      requestTimeout: settings.requestTimeoutMs,
      http: { connectionsCheckingInterval: Math.min(30_000, Math.ceil(settings.requestTimeoutMs / 4)), headersTimeout: Math.min(60_000, settings.requestTimeoutMs) },
      return503OnClosing: true,
      // Path parameters as long as a request line can be (headers are capped at 16 KiB): a route answers a long
      // voice_id or slug with the spec's own code (INVALID_VOICE_ID, STORY_NOT_FOUND), where fastify's default of
      // 100 characters answered 414 URI_TOO_LONG, a code the spec does not have.
      // (under routerOptions: fastify 5 printed a deprecation warning for the top-level option at every start)
      routerOptions: { maxParamLength: 16 * 1024 },
      // errors before a route runs, and before a request exists, in the spec's shape too (httpErrors.ts)
      frameworkErrors: (err, req, reply) => sendError(logger, err, req, reply),
      clientErrorHandler: clientErrorHandler(logger),
    });
    app = http;
    // A request refused before its body was read (bad credentials, a body over the limit): keep reading and
    // discarding the rest for a while before the connection closes. Closing a socket with unread data sends a TCP
    // RST, and the client's kernel then drops our error response before the client reads it (lingering close, as
    // nginx does). Bounded in bytes and time, so a client cannot keep the server reading forever.
    http.addHook('onSend', async (req, _reply, payload) => {
      lingerOnUnreadBody(req.raw);
      return payload;
    });
    http.addHook('onResponse', async (req, reply) => {
      if (logger.isLevelEnabled('debug')) {
        logger.debug({ method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
      }
    });
    http.setErrorHandler((err, req, reply) => sendError(logger, err, req, reply));
    http.setNotFoundHandler((req, reply) => sendNotFound(req, reply));

    await http.register(restApi(ctx), { prefix: '/v1/app' });
    await http.register(audioRoutes(ctx));
    realtime = await loadRealtime(ctx);
    if (realtime) await http.register(realtime.plugin);

    try {
      await http.listen({ host: settings.host, port: settings.port });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
        throw new Error(
          `the companion server cannot listen on ${settings.host}:${settings.port} (${code}); ` +
            'choose another address or port (SPEAKER_AGENT_COMPANION_HOST / SPEAKER_AGENT_COMPANION_PORT)',
          { cause: err },
        );
      }
      throw err;
    }
    const addr = http.server.address();
    const port = typeof addr === 'object' && addr ? addr.port : settings.port;
    const host = settings.host === '0.0.0.0' || settings.host === '::' ? '127.0.0.1' : settings.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    setListeningUrl(url);
    if (host !== settings.host && !settings.publicUrl) {
      logger.warn({ url }, 'listening on all interfaces without publicUrl: signed audio URLs name 127.0.0.1, which other machines cannot reach; set SPEAKER_AGENT_COMPANION_PUBLIC_URL');
    }

    // synthesis outputs outlive their signed URLs a little, then go
    const ttlMs = settings.signedUrlTtlSeconds * 1000;
    sweepTimer = setInterval(() => ctx.audio.sweepTts(ttlMs + 60_000), Math.min(ttlMs, 60_000));
    sweepTimer.unref();
    // voices added by the admin commands get their preview audio in the background
    void ensureVoicePreviews(ctx, previewAbort.signal).catch((err: unknown) => logger.warn({ err }, 'voice previews not generated'));

    logger.info({ url, dataDir: settings.dataDir, tts: ctx.tts.name, enrollment: settings.enrollment }, 'companion server listening');
    let closing: Promise<void> | undefined;
    return { url, port, context: ctx, close: () => (closing ??= closeAll()) };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
