// Maps anything thrown on a REST route to the spec's error shape {detail:{error, code}} and status:
// RestError as is; Fastify's and @fastify/multipart's own errors (bad JSON, body too large, wrong content type)
// to INVALID_REQUEST / PAYLOAD_TOO_LARGE / UNSUPPORTED_CONTENT_TYPE; anything else to 500 INTERNAL_ERROR
// without its message (internals never reach the client; the log has them).
import { RestError } from '../../protocol/restErrors.js';

interface HttpishError {
  code?: string;
  statusCode?: number;
  message?: string;
}

export function toRestError(err: unknown): RestError {
  if (err instanceof RestError) return err;
  const e = (err ?? {}) as HttpishError;
  const code = typeof e.code === 'string' ? e.code : '';
  const status = typeof e.statusCode === 'number' ? e.statusCode : 0;
  if (status === 413 || code === 'FST_ERR_CTP_BODY_TOO_LARGE' || code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new RestError('PAYLOAD_TOO_LARGE', 'the request body is larger than the server accepts', { cause: err });
  }
  if (status === 415 || code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
    return new RestError('UNSUPPORTED_CONTENT_TYPE', 'unsupported Content-Type for this route', { cause: err });
  }
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || (err instanceof SyntaxError && status === 400)) {
    return new RestError('INVALID_REQUEST', 'the request body is not valid JSON', { cause: err });
  }
  if (status >= 400 && status < 500 && code.startsWith('FST_')) {
    return new RestError('INVALID_REQUEST', 'malformed request', { cause: err, status: status === 404 ? 404 : 400 });
  }
  return new RestError('INTERNAL_ERROR', 'internal server error', { cause: err });
}
