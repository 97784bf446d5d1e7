/**
 * The data plane's HTTP application: the same routes under `/rest/v1` and
 * its alias `/api/rest/v1`, storage objects, errors in the API.md shape.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ApiError, answerClientError, answerFrameworkError, emptyJsonIsNoBody, proxiesToTrust, refuseEncodedBody, unsupportedMediaType } from '@baseplane/contracts';
import type { ProjectDirectory } from './directory/project-directory';
import { bindRestRoot } from './http/rest-root';
import { bindAuthJwks } from './http/auth-jwks';
import { bindCors } from './http/cors';
import { bindAuthRoutes } from './auth/auth-routes';
import { AuthHousekeeping, sweepAuthRows } from './auth/housekeeping';
import { bindCodeRoutes } from './auth/code-routes';
import type { CodeBook } from './auth/codes';
import type { RefreshTokens } from './auth/refresh-tokens';
import { RateLimitedError } from './auth/rate-limits';
import type { ProjectMailers } from './mail/project-mailers';
import { bindAccountRoutes } from './auth/account-routes';
import { AfterAnswer } from './auth/after-answer';
import type { AccessTokens } from './auth/access-tokens';
import type { OwnerPools } from './tenants/owner-pools';
import type { DataApi } from './rest/data-api';
import { bindDataApi } from './rest/routes';
import { RaisedAnswer } from './rest/db-errors';
import type { Storage } from './storage/storage';
import { bindObjectRoutes } from './storage/object-routes';
import { bindPublicObjectRoutes } from './storage/public-routes';

export interface DataPlaneDependencies {
  directory: ProjectDirectory;
  tenants: OwnerPools;
  /** The data API (`/:table`, `/rpc/:fn`); absent, only the root and auth are served. */
  dataApi?: DataApi;
  /** Storage objects (`/api/projects/:id/storage/buckets/:name/objects…`, `/storage/v1/object/…`); absent, not served. */
  storage?: Storage;
  tokens: AccessTokens;
  codes: CodeBook;
  refreshTokens: RefreshTokens;
  mailers: ProjectMailers;
  publicUrl: string;
  /** TRUSTED_PROXIES: besides loopback, whose `X-Forwarded-For` names the client. */
  trustedProxies: string[];
  log: Logger;
}

/** The largest JSON body taken (uploads stream past it). */
const BODY_LIMIT = 10 * 1024 * 1024;

export function buildDataPlane(deps: DataPlaneDependencies): FastifyInstance {
  // Request lines are logged at info by Fastify; the hot path keeps only warnings.
  // The gateway in front (on loopback) appends the client's address to X-Forwarded-For; it and TRUSTED_PROXIES are believed.
  const app = Fastify({ loggerInstance: deps.log.child({}, { level: 'warn' }) as FastifyBaseLogger, bodyLimit: BODY_LIMIT, trustProxy: proxiesToTrust({ trustedProxies: deps.trustedProxies }), clientErrorHandler: answerClientError, frameworkErrors: answerFrameworkError });

  // A JSON content type over an empty body (/logout, /reauth from a fetch wrapper) is no body.
  const json = emptyJsonIsNoBody(app.getDefaultJsonParser('error', 'error'));
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, json);

  // A compressed body is refused before anything reads it as it is.
  app.addHook('onRequest', async (request) => {
    const refused = refuseEncodedBody(request.headers);
    if (refused) throw refused;
  });

  app.get('/healthz', async (_request, reply) => {
    if (!deps.directory.ready) return reply.status(503).send({ status: 'unavailable', pid: process.pid });
    // `position`: the last project event this replica follows, so a deployment (and a test) can tell it has caught up.
    return { status: 'ok', pid: process.pid, position: deps.directory.appliedPosition };
  });

  // Codes mailed after their answer: a replica told to stop sends them before its pools close.
  const afterAnswer = new AfterAnswer();
  const housekeeping = new AuthHousekeeping(
    afterAnswer,
    (projectId) => deps.tenants.read(projectId, (pool) => sweepAuthRows(pool)),
    (projectId, err) => deps.log.warn({ err, projectId }, 'auth housekeeping failed'),
  );
  const auth = { ...deps, afterAnswer, housekeeping };
  app.addHook('onClose', () => auth.afterAnswer.settled());

  for (const prefix of ['/rest/v1', '/api/rest/v1']) {
    void app.register(
      async (scope) => {
        bindCors(scope);
        bindRestRoot(scope, deps.directory, deps.publicUrl, deps.dataApi);
        if (deps.dataApi) bindDataApi(scope, deps.dataApi);
        bindAuthJwks(scope, deps.directory);
        bindAuthRoutes(scope, auth);
        bindCodeRoutes(scope, auth);
        bindAccountRoutes(scope, auth);
      },
      { prefix },
    );
  }

  if (deps.storage) {
    // The bytes of versions uploads replaced are deleted after their answers; a stopping replica deletes them first.
    bindObjectRoutes(app, deps.storage, afterAnswer);
    bindPublicObjectRoutes(app, deps.directory, deps.storage);
  }

  app.setNotFoundHandler((_request, reply) => {
    void reply.status(404).send(new ApiError(404, 'not_found', 'no such route').toBody());
  });
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    if (error instanceof RaisedAnswer) void reply.headers(error.headers);
    if (error instanceof ApiError) {
      // A dependency that failed (the object store, the mail server) is worth an operator's look; a project not
      // serving yet (provisioning, being deleted) is the ordinary course of things.
      if (error.status >= 500 && error.code !== 'project_unavailable') {
        deps.log.warn({ err: error.cause, code: error.code, message: error.message, method: request.method, route: request.routeOptions.url }, 'answered %d %s', error.status, error.code);
      }
      return reply.status(error.status).send(error.toBody());
    }
    const status = (error as { statusCode?: number }).statusCode;
    // Fastify refuses a body over bodyLimit (FST_ERR_CTP_BODY_TOO_LARGE) before any handler sees it; the multipart
    // plugin refuses an upload with more parts, fields or files than it takes (FST_PARTS_LIMIT, …) with 413 too.
    if (status === 413) {
      // Fastify closes the connection after this answer with the rest of the body unread: the peer's socket is then
      // reset and the answer may be lost with it (the gateway read it as an unreachable data plane). Kept open, the
      // connection reads the rest of the body and drops it, as node does for any answer given before the body.
      void reply.removeHeader('connection');
      const code = (error as { code?: string }).code;
      const answer = code === 'FST_ERR_CTP_BODY_TOO_LARGE' || code === undefined
        ? new ApiError(413, 'payload_too_large', `request body exceeds ${BODY_LIMIT} bytes`, { maxBytes: BODY_LIMIT })
        : new ApiError(413, 'payload_too_large', 'the multipart body has more parts than an upload takes', { limit: code }, 'send the object in one field named "file", with at most 10 other fields');
      return reply.status(413).send(answer.toBody());
    }
    // Fastify refuses a body of a type no parser of the route reads (FST_ERR_CTP_INVALID_MEDIA_TYPE) before any handler sees it.
    if (status === 415) return reply.status(415).send(unsupportedMediaType().toBody());
    if (status && status < 500) {
      const invalidJson = /JSON/i.test((error as Error).message);
      return reply.status(status).send(new ApiError(status, invalidJson ? 'invalid_json' : 'invalid_request', invalidJson ? 'request body is not valid JSON' : 'invalid request').toBody());
    }
    // The client went away mid-request (an upload reset half-way): no one is left to answer, and nothing failed here.
    if (request.raw.aborted || request.raw.socket?.destroyed) {
      deps.log.debug({ err: error }, 'request abandoned by its client');
      return reply.status(400).send(new ApiError(400, 'request_aborted', 'the client closed the connection before the request was whole').toBody());
    }
    deps.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send(new ApiError(500, 'internal_error', 'internal error').toBody());
  });
  return app;
}
