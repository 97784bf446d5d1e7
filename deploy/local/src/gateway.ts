/**
 * The one public base URL of the local stack: routes `/api` to the control plane
 * and the application paths to the data plane (round-robin over its replicas,
 * data-plane-proxy.ts), streaming bodies through, and answers `/healthz` for
 * the whole stack.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import http from 'node:http';
import Fastify from 'fastify';
import httpProxy from '@fastify/http-proxy';
import { answerClientError, answerFrameworkError, unsupportedMediaType } from '@baseplane/contracts';
import { createDataPlaneProxy } from './data-plane-proxy';
import type { HealthReport } from './health';

/** Prefixes served by the data plane; paths go upstream unchanged. */
export const DATA_PLANE_PREFIXES = ['/rest/v1', '/api/rest/v1', '/storage/v1', '/auth'] as const;
/**
 * Paths inside `/api` the data plane serves: storage objects are data under the
 * app's RLS policies, so they go where end-user tokens are understood.
 */
export const DATA_PLANE_API_PATHS = [/^\/api\/projects\/[^/?#]+\/storage\/buckets\/[^/?#]+\/objects(?:[/?]|$)/] as const;
/** Prefix served by the control plane (the router prefers the longer `/api/rest/v1` above). */
export const CONTROL_PLANE_PREFIX = '/api';

/**
 * True for a control-plane path the proxy plugin would refuse or change: one
 * with a `..` once decoded (`a%2F..%2Fb`, `%2e%2e`, `..%5Cx`: the plugin reads
 * `%2F` and `%5C` as separators and refuses them all with its own 400) or
 * dot segments it would resolve (`%2e`). Such a path goes to the control
 * plane byte for byte instead, as data-plane paths do, so that it answers
 * it as it answers any path: the control plane's router takes a segment
 * as one name whatever it holds, so nothing is traversed.
 */
export function controlPlanePathPassedVerbatim(url: string): boolean {
  if (url !== CONTROL_PLANE_PREFIX && !url.startsWith(`${CONTROL_PLANE_PREFIX}/`) && !url.startsWith(`${CONTROL_PLANE_PREFIX}?`)) return false;
  const path = url.split('?', 1)[0]!;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path).replaceAll('\\', '/');
  } catch {
    return false; // not percent-encoded UTF-8: the router refuses it first, in the API error shape
  }
  // reply-from's test (a segment starting or ending with `..`), wider than http-proxy's own.
  if (decoded.includes('/..') || decoded.includes('../')) return true;
  return new URL(path, 'http://gateway.invalid').pathname !== path;
}

/** What {@link startGateway} needs. */
export interface GatewayOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  controlPlaneUrl: string;
  /** One data plane, or the replicas of a fleet, taken in turn request by request. */
  dataPlaneUrl: string | string[];
  checkHealth(): Promise<HealthReport>;
  /**
   * A request whose body has not moved for this long (no byte came, none
   * waiting to be read on our side) is answered 408 `request_timeout` and its
   * connection closed, which ends its upstream request too. Default
   * {@link BODY_IDLE_TIMEOUT_MS}; tests set less.
   */
  bodyIdleTimeoutMs?: number;
  /**
   * An answer the client has taken nothing of for this long (bytes waiting,
   * none sent) has its connection closed, which ends its upstream request
   * too. Default {@link ANSWER_IDLE_TIMEOUT_MS}; tests set less.
   */
  answerIdleTimeoutMs?: number;
}

/**
 * See {@link GatewayOptions.answerIdleTimeoutMs}: nginx's `send_timeout` is
 * 60 s. A client that asked for a large answer and never read it held the
 * answer in the data plane's memory for as long as it kept the connection
 * (20 of a 55 MB answer: 1.4 GB on each of two replicas, for good).
 */
export const ANSWER_IDLE_TIMEOUT_MS = 60_000;

/**
 * See {@link GatewayOptions.bodyIdleTimeoutMs}: nginx's `client_body_timeout`
 * is 60 s. A client gone mid-upload (its network lost, no FIN) held its
 * upstream request, and the upload's tenant transaction and row lock, until
 * node's 300 s request timeout.
 */
export const BODY_IDLE_TIMEOUT_MS = 30_000;
/** The request line and headers must have come within this long (node's default; nginx's `client_header_timeout` is 60 s too). */
const HEADERS_TIMEOUT_MS = 60_000;

/** The listening gateway. */
export interface Gateway {
  /** The port actually bound (useful when 0 was asked). */
  port: number;
  close(): Promise<void>;
}

/** The flat error body of API.md → Conventions. */
function errorBody(code: string, message: string) {
  return { code, message, details: null, hint: null };
}

/** Starts the gateway and resolves once it listens. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  // Data-plane paths are piped before Fastify routes anything (data-plane-proxy.ts): it is the hot path.
  const bodyIdleTimeoutMs = options.bodyIdleTimeoutMs ?? BODY_IDLE_TIMEOUT_MS;
  const answerIdleTimeoutMs = options.answerIdleTimeoutMs ?? ANSWER_IDLE_TIMEOUT_MS;
  const dataPlane = createDataPlaneProxy([options.dataPlaneUrl].flat(), DATA_PLANE_PREFIXES, DATA_PLANE_API_PATHS);
  const controlPlaneVerbatim = createDataPlaneProxy([options.controlPlaneUrl], [], [], 'the control plane');
  const app = Fastify({
    logger: false,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    serverFactory: (handler) => {
      const server = http.createServer((request, response) => {
        watchBody(request, response, bodyIdleTimeoutMs);
        watchAnswer(response, answerIdleTimeoutMs);
        if (dataPlane.serves(request.url ?? '')) dataPlane.forward(request, response);
        else if (controlPlanePathPassedVerbatim(request.url ?? '')) controlPlaneVerbatim.forward(request, response);
        else handler(request, response);
      });
      server.headersTimeout = HEADERS_TIMEOUT_MS;
      return server;
    },
  });
  app.addHook('onClose', async () => {
    dataPlane.close();
    controlPlaneVerbatim.close();
  });

  app.get('/healthz', async (_request, reply) => {
    const report = await options.checkHealth();
    return reply.code(report.status === 'ok' ? 200 : 503).send(report);
  });

  // Set before the proxy is registered: its encapsulated routes take the handler their parent has then (the proxy
  // refuses a path with `..` by throwing, which Fastify's default handler would answer in its own shape).
  app.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    // A Content-Type Fastify cannot read (a list, `application/json, text/plain`) is refused here, before the
    // control plane sees it: 415 with the code the control plane gives it, not invalid_request.
    const body = status === 415
      ? unsupportedMediaType().toBody()
      : status < 500
      ? errorBody('invalid_request', error.message ?? 'invalid request')
      : errorBody('internal_error', 'the gateway failed to handle the request');
    void reply.code(status).send(body);
  });

  const upstreams = [{ prefix: CONTROL_PLANE_PREFIX, url: options.controlPlaneUrl, part: 'the control plane' }];
  for (const { prefix, url, part } of upstreams) {
    await app.register(httpProxy, {
      upstream: url,
      prefix,
      // Keep the path as the client sent it: the services route on the full path.
      rewritePrefix: prefix,
      replyOptions: {
        rewriteRequestHeaders: (request, headers) => forwardedHeaders(request, headers),
        onError: (reply, { error }) => replyUpstreamFailure(reply, error, part),
        // reply-from would silently retry GETs answered 503 (e.g. project_unavailable); callers decide that.
        retryDelay: () => null,
      },
      // Connections to the control plane as many as requests in flight: reply-from's default pool of 128 queued
      // every further request, so 128 clients trickling bodies (to /api/auth/signin, no account needed) stalled
      // the whole operator API. A slow client now holds only its own connection, until the body idle timeout.
      undici: { connections: null },
    });
  }

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorBody('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`));
  });

  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return { port, close: () => app.close() };
}

/** Adds the standard forwarding headers so services see the client's address and the public host. */
function forwardedHeaders(
  request: { ip: string; protocol: string; headers: IncomingHttpHeaders },
  headers: IncomingHttpHeaders,
): IncomingHttpHeaders {
  const previous = headers['x-forwarded-for'];
  return {
    ...headers,
    'x-forwarded-for': previous ? `${previous}, ${request.ip}` : request.ip,
    'x-forwarded-host': headers['x-forwarded-host'] ?? request.headers.host,
    'x-forwarded-proto': headers['x-forwarded-proto'] ?? request.protocol,
  };
}

/** The part of a Fastify reply this module uses (the proxy's reply type is wider than ours). */
interface ErrorReply {
  code(status: number): { send(body: unknown): unknown };
}

function replyUpstreamFailure(reply: ErrorReply, error: Error & { statusCode?: number }, part: string): void {
  if (error.statusCode === 504) {
    void reply.code(504).send(errorBody('gateway_timeout', `${part} did not answer in time`));
    return;
  }
  void reply.code(503).send(errorBody('service_unavailable', `${part} is not reachable`));
}

/**
 * Arms the body idle timeout of a request that has a body: checked every
 * `idleMs`, a body that has neither moved (bytes read from the socket) nor
 * anything waiting on our side (the upstream not reading is not the
 * client's fault) is answered 408 and its connection closed. The socket's
 * byte count is watched rather than the request's 'data' events, which would
 * start it flowing before its reader is attached.
 */
function watchBody(request: IncomingMessage, response: ServerResponse, idleMs: number): void {
  const length = request.headers['content-length'];
  if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return;
  const socket = request.socket;
  let seen = socket.bytesRead;
  const timer = setInterval(() => {
    if (request.complete || socket.destroyed) {
      clearInterval(timer);
      return;
    }
    if (socket.bytesRead !== seen || request.readableLength > 0) {
      seen = socket.bytesRead;
      return;
    }
    clearInterval(timer);
    // The request is failed, not only its socket closed: node has let go of a request whose answer went (it
    // drops the rest of its body), so the control plane's proxy, reading it, would wait on for ever.
    const cut = () => {
      request.on('error', () => undefined);
      request.destroy(new Error('the request body did not move'));
      socket.destroy();
    };
    if (response.headersSent) {
      cut();
      return;
    }
    response.shouldKeepAlive = false;
    const body = JSON.stringify(errorBody('request_timeout', `the request body did not move for ${Math.round(idleMs / 1000)} s`));
    response.writeHead(408, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    response.end(body, cut);
  }, idleMs);
  timer.unref();
  request.once('end', () => clearInterval(timer));
  response.once('close', () => clearInterval(timer));
}

/**
 * Arms the answer idle timeout: checked every `idleMs`, a connection with
 * bytes of this answer waiting to go and none sent since the last check is
 * closed (the answer is cut; the proxies end its upstream request). Bytes
 * sent are those handed to the kernel: `bytesWritten` counts the waiting ones too.
 */
function watchAnswer(response: ServerResponse, idleMs: number): void {
  const socket = response.socket;
  if (!socket) return;
  const sent = () => socket.bytesWritten - socket.writableLength;
  let seen = sent();
  // Taken off the socket when the watch ends: a kept-alive connection carries many answers.
  const stop = () => {
    clearInterval(timer);
    socket.off('close', stop);
  };
  const timer = setInterval(() => {
    // Done once the whole answer has left (a finished answer's last bytes may still wait in the socket).
    if (socket.destroyed || (response.writableFinished && socket.writableLength === 0)) {
      stop();
      return;
    }
    const now = sent();
    if (socket.writableLength === 0 || now !== seen) {
      seen = now;
      return;
    }
    stop();
    socket.destroy();
  }, idleMs);
  timer.unref();
  socket.once('close', stop);
  // Most answers leave whole at once: nothing left to watch.
  response.once('finish', () => {
    if (socket.writableLength === 0) stop();
  });
}
