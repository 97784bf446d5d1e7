/**
 * Turns whatever a handler threw into the API.md error shape. Our ApiErrors
 * pass as they are; Nest's HTTP exceptions keep their status with a stable
 * code; anything else is a 500 whose details stay in the log.
 */
import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ApiError, unsupportedMediaType, type ErrorBody } from '@baseplane/contracts';
import { RateLimitedError } from '@baseplane/contracts/rate-limits';

const CODE_OF_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'invalid_token',
  403: 'forbidden',
  404: 'not_found',
  405: 'invalid_request',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** Maps any error (ours, Nest's, Fastify's) to a status and the flat error body. */
export function toErrorResponse(error: unknown, log: Logger): { status: number; body: ErrorBody } {
  if (error instanceof ApiError) return { status: error.status, body: error.toBody() };
  if (error instanceof HttpException) {
    const status = error.getStatus();
    // Nest wraps Fastify's body-parser failure in a 400 of its own (an empty body's message says 'application/json').
    if (status === 400 && /json/i.test(error.message)) {
      return { status, body: { code: 'invalid_json', message: 'request body is not valid JSON', details: null, hint: null } };
    }
    const message = status === 404 ? 'no such route' : error.message;
    return { status, body: { code: CODE_OF_STATUS[status] ?? 'invalid_request', message, details: null, hint: null } };
  }
  const fastifyError = error as { statusCode?: number; code?: string; message?: string };
  if (fastifyError.statusCode === 415) return { status: 415, body: unsupportedMediaType().toBody() };
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode < 500) {
    const status = fastifyError.statusCode;
    const invalidJson = fastifyError.code === 'FST_ERR_CTP_INVALID_JSON' || fastifyError.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || /JSON/.test(fastifyError.message ?? '');
    const code = invalidJson ? 'invalid_json' : fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'payload_too_large' : CODE_OF_STATUS[status] ?? 'invalid_request';
    return { status, body: { code, message: invalidJson ? 'request body is not valid JSON' : 'invalid request', details: null, hint: null } };
  }
  log.error({ err: error }, 'unhandled error');
  return { status: 500, body: { code: 'internal_error', message: 'internal error', details: null, hint: null } };
}

/**
 * A request's URL for the log: a service key may travel in the query
 * (`?apikey=`, API.md → Credentials), and a log line must never carry it.
 */
export function loggableUrl(url: string): string {
  const start = url.indexOf('?');
  if (start < 0) return url;
  const parameters = url.slice(start + 1).split('&').map((parameter) => {
    const equals = parameter.indexOf('=');
    const name = equals < 0 ? parameter : parameter.slice(0, equals);
    let decoded = name;
    try {
      decoded = decodeURIComponent(name.replace(/\+/g, ' '));
    } catch {
      /* not percent-encoded UTF-8: as it is */
    }
    return decoded.trim().toLowerCase() === 'apikey' ? `${name}=[redacted]` : parameter;
  });
  return `${url.slice(0, start)}?${parameters.join('&')}`;
}

@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  constructor(private readonly log: Logger) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const { status, body } = toErrorResponse(error, this.log);
    if (status >= 500) this.log.warn({ url: loggableUrl(request.url), status }, 'request failed');
    // A body over the limit: Fastify would close the connection with the rest unread, and the reset may lose this
    // answer on the way (the gateway read it as an unreachable control plane); kept open, the rest is read and dropped.
    if (status === 413) void reply.removeHeader('connection');
    if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    void reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }
}
