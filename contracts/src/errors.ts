/**
 * The one error type every HTTP answer of Baseplane is made from, with the
 * stable codes of API.md. Pure data: the planes map it to a response.
 */

export type ErrorCode =
  // 400
  | 'invalid_request' | 'invalid_json' | 'invalid_credentials' | 'weak_password' | 'invalid_email'
  | 'invalid_filter' | 'unknown_column' | 'unknown_relation' | 'filter_required' | 'invalid_schema' | 'redirect_to_not_allowed' | 'url_expired' | 'mime_type_not_allowed'
  // 401
  | 'missing_api_key' | 'invalid_api_key' | 'invalid_token' | 'token_expired' | 'refresh_token_invalid'
  | 'refresh_token_reused' | 'no_session'
  // 403
  | 'forbidden' | 'service_key_required' | 'email_not_verified' | 'reauthentication_required' | 'signups_disabled' | 'invalid_signature'
  // 404, 405, 406 (and 300 for an ambiguous embedding)
  | 'not_found' | 'method_not_allowed' | 'not_acceptable' | 'not_single_object' | 'ambiguous_relation' | 'ambiguous_function'
  // 409
  | 'user_already_exists' | 'already_exists' | 'version_conflict' | 'bucket_not_empty' | 'last_owner'
  // 408, 413, 415, 416, 422, 429, 431
  | 'request_timeout' | 'headers_too_large' | 'payload_too_large' | 'unsupported_media_type' | 'range_not_satisfiable' | 'otp_invalid' | 'otp_expired' | 'apply_failed' | 'rate_limited'
  // 5xx
  | 'project_unavailable' | 'service_unavailable' | 'email_unavailable' | 'internal_error';

/** The flat body of every error answer. */
export interface ErrorBody {
  code: string;
  message: string;
  details: unknown;
  hint: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | string,
    message: string,
    readonly details: unknown = null,
    readonly hint: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): ErrorBody {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint };
  }
}

export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
/**
 * 503 `project_unavailable` (API.md) for a project that exists but whose
 * database is not serving: provisioning, failed, or being deleted.
 */
export const projectUnavailable = (status: string) =>
  new ApiError(503, 'project_unavailable', status === 'deleting' ? 'project is being deleted' : `project is ${status}`);
export const invalidRequest = (message: string, details: unknown = null) =>
  new ApiError(400, 'invalid_request', message, details);
/** 415 for a body of a content type the route does not read (the framework's refusal, before any handler). */
export const unsupportedMediaType = () =>
  new ApiError(415, 'unsupported_media_type', 'the request body is of a content type this endpoint does not read');

/**
 * 415 for a body sent compressed (`Content-Encoding` other than `identity`),
 * which no plane inflates: read as it is, a gzip body would be parsed as
 * garbage or, worse, stored. For an `onRequest` hook of every plane; a request
 * without a body passes whatever it says.
 */
export function refuseEncodedBody(headers: Record<string, string | string[] | undefined>): ApiError | undefined {
  const encoding = headers['content-encoding'];
  if (encoding === undefined) return undefined;
  const named = String(encoding).trim().toLowerCase();
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (named === '' || named === 'identity' || !hasBody) return undefined;
  return new ApiError(415, 'unsupported_media_type', `a body sent with Content-Encoding ${named} is not read`, null, 'send the body uncompressed');
}

/**
 * The JSON body parser of every plane, around Fastify's default one (`json`):
 * a JSON content type over an empty body is no body, as GoTrue takes it (what
 * fetch wrappers send on a POST without one: a logout, a ping), not 400
 * `invalid_json`; a route that needs a body still refuses its absence.
 */
export function emptyJsonIsNoBody<Request, Done extends (error: null, body?: undefined) => void>(json: (request: Request, body: string, done: Done) => void) {
  return (request: Request, body: string | Buffer, done: Done): void => {
    if (body.length === 0) return done(null, undefined);
    json(request, typeof body === 'string' ? body : body.toString('utf8'), done);
  };
}

/** The part of the response under a Fastify reply {@link answerFrameworkError} uses (a node `ServerResponse`). */
interface RawResponse {
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  end(body: string): unknown;
}

/**
 * Fastify's `frameworkErrors` for every plane: what its router refuses before
 * any route or error handler runs (a path segment that is not percent-encoded
 * UTF-8, a parameter over `maxParamLength`) in the error shape, not Fastify's
 * `{error,code,message,statusCode}`, and without echoing the path. Written to
 * the raw response, as Fastify's own answer is.
 */
export function answerFrameworkError(error: Error & { code?: string }, _request: unknown, reply: { raw: RawResponse }): void {
  const answer =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError(414, 'invalid_request', 'a segment of the path is too long')
      : new ApiError(400, 'invalid_request', 'the path is not valid', null, 'percent-encode each path segment as UTF-8');
  const body = JSON.stringify(answer.toBody());
  reply.raw.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  reply.raw.end(body);
}

/** The few socket-level facts {@link answerClientError} needs (a node `net.Socket` has them). */
interface ClientSocket {
  destroyed: boolean;
  writable: boolean;
  write(data: string): unknown;
  destroy(error?: Error): unknown;
}

/**
 * Fastify's `clientErrorHandler` for every plane: a request node's HTTP parser
 * refuses before any route sees it (headers or URL over 16 KB, a malformed
 * request line, a request that took too long) is answered in the error shape
 * of every other answer, not Fastify's `{error,statusCode}`, then the
 * connection is closed.
 */
export function answerClientError(error: Error & { code?: string }, socket: ClientSocket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, answer] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', new ApiError(431, 'headers_too_large', 'the request line and headers exceed 16 KB', null, 'send long filters in a POST body, or shorten the URL')]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', new ApiError(408, 'request_timeout', 'the request took too long to arrive')]
        : [400, 'Bad Request', new ApiError(400, 'invalid_request', 'the request is not valid HTTP')];
  const body = JSON.stringify(answer.toBody());
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}
