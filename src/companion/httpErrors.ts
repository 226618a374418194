// Every error the companion's HTTP server answers, in the spec's shape for the path's prefix (spec section 7):
// {"error":{"message","type","code"}} under /v1/realtime, {"detail":{"error","code"}} everywhere else. This covers
// what the routes throw, what Fastify raises before a route runs (a bad percent-escape, an over-long path
// parameter: frameworkErrors), routes that do not exist, and what Node's HTTP parser rejects before Fastify sees a
// request (headers over 16 KiB, unparseable HTTP, a request timeout: clientError, answered on the raw socket).
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../common/logger.js';
import { http } from '../common/nodeHttp.js';
import { realtimeErrorBody, REALTIME_ERRORS, type RealtimeErrorCode } from '../protocol/realtimeErrors.js';
import { RestError } from '../protocol/restErrors.js';
import { toRestError } from './routes/restErrors.js';

const isRealtimePath = (url: string | undefined) => (url ?? '').startsWith('/v1/realtime');

/** The realtime code for a failure the REST mapping already classified. Realtime statuses stay those the spec
 *  shows (400, 401, 404, 500): malformed requests of any kind are 400 invalid_request. */
function realtimeCodeFor(rest: RestError): RealtimeErrorCode {
  if (rest.status >= 500) return 'server_error';
  switch (rest.code) {
    case 'NOT_FOUND':
      return 'not_found';
    case 'UNSUPPORTED_CONTENT_TYPE':
      return 'unsupported_content_type';
    case 'INVALID_REQUEST':
      return rest.message === JSON_BODY_MESSAGE ? 'invalid_json' : 'invalid_request';
    default:
      return 'invalid_request';
  }
}
const JSON_BODY_MESSAGE = 'the request body is not valid JSON';

export interface ErrorReply {
  status: number;
  body: object;
}

/** The status and body for anything thrown while serving `url`. */
export function errorReplyFor(err: unknown, url: string | undefined): ErrorReply {
  const rest = toRestError(err);
  if (!isRealtimePath(url)) return { status: rest.status, body: rest.toBody() };
  const code = realtimeCodeFor(rest);
  return { status: REALTIME_ERRORS[code].status, body: realtimeErrorBody(code, rest.status >= 500 ? 'internal server error' : rest.message) };
}

/** Fastify's error handler and frameworkErrors: one reply for both. */
export function sendError(logger: Logger, err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, body } = errorReplyFor(err, req.url);
  if (status >= 500) logger.error({ err, method: req.method, url: req.url.split('?')[0] }, 'request failed');
  return reply.code(status).send(body);
}

/** No route: 404 in the prefix's shape (a known path with another method lands here too). */
export function sendNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, body } = errorReplyFor(new RestError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`), req.url);
  return reply.code(status).send(body);
}

/** The request line of a request Node's parser gave up on, when it got that far (for the prefix only). */
function requestPath(raw: unknown): string | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const line = raw.subarray(0, Math.min(raw.length, 2048)).toString('latin1').split('\r\n', 1)[0];
  return /^[A-Z]+ (\S+) HTTP\/\d/.exec(line)?.[1];
}

/** Node's 'clientError': the parser rejected the bytes before a request existed, so the answer is written on the
 *  socket by hand (what Fastify's default handler does, in the spec's shape). */
export function clientErrorHandler(logger: Logger) {
  return (err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const rest =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new RestError('HEADERS_TOO_LARGE', 'the request headers are larger than the server accepts (16 KiB)')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new RestError('REQUEST_TIMEOUT', 'the request did not arrive in time')
          : new RestError('INVALID_REQUEST', 'malformed HTTP request');
    const { status, body } = errorReplyFor(rest, requestPath(err.rawPacket));
    logger.debug({ code: err.code, status }, 'client error');
    // As Node's default handler: not into a response already under way on this connection (a pipelined request's
    // parse error, a timeout beside a streaming answer), whose bytes it would corrupt (Node looks at _headerSent;
    // headersSent is public and also holds a written head not yet flushed); the socket is closed either way
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const text = JSON.stringify(body);
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
          `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${text}`,
      );
    }
    socket.destroy();
  };
}
