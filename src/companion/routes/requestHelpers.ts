// Small helpers shared by the REST routes: request-scoped abort and JSON body field checks.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RestError } from '../../protocol/restErrors.js';

/** An AbortSignal that fires when the client goes away before the response is sent (stops wasted work). */
export function requestAbortSignal(req: FastifyRequest, reply: FastifyReply): AbortSignal {
  const ac = new AbortController();
  req.raw.on('close', () => {
    if (!reply.sent && !req.raw.complete) ac.abort();
  });
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) ac.abort();
  });
  return ac.signal;
}

/** The JSON body as an object: absent body = {} (every field optional at this level); anything else is
 *  INVALID_REQUEST. */
export function jsonObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new RestError('INVALID_REQUEST', 'the request body must be a JSON object');
  return body as Record<string, unknown>;
}

export function optionalString(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new RestError('INVALID_REQUEST', `${key} must be a string`);
  return v;
}

