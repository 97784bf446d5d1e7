/**
 * The gateway's hot path: requests for the data plane are piped to one of
 * its replicas (round-robin) over kept-alive connections with node's own
 * http, before Fastify routes anything — the data API's throughput through
 * the gateway is bounded by this hop.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { Transform } from 'node:stream';

/** Headers that describe one connection, not the request (RFC 9110 §7.6.1): never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-connection']);
/** An upstream silent for this long is answered 504 (or cut, once the answer has begun). */
const UPSTREAM_IDLE_TIMEOUT_MS = 60_000;

/** The flat error body of API.md → Conventions. */
function errorBody(code: string, message: string): string {
  return JSON.stringify({ code, message, details: null, hint: null });
}

function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const listed = new Set(String(headers.connection ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean));
  const kept: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.has(name) && !listed.has(name)) kept[name] = value;
  return kept;
}

/** True when the request carries a body (RFC 9112 §6.3: a non-zero Content-Length, or Transfer-Encoding). */
function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Passes each chunk of a request body on a turn later (setImmediate, after
 * the poll phase), and none once `answered()`. A replica that answers before
 * the whole body has come (413 for a body over its limit) closes its
 * connection; a write after that close fails and node's client then drops
 * the socket with the answer unread, which the gateway would report as an
 * unreachable data plane. A turn later, that answer has been read first.
 */
function aTurnLater(answered: () => boolean): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      setImmediate(() => done(null, answered() ? undefined : chunk));
    },
  });
}

/** Methods whose request changes nothing on the server (RFC 9110 §9.2.1): one may be sent again. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A round-robin proxy to the data-plane replicas. */
export interface DataPlaneProxy {
  /** True when `url` belongs to the data plane: one of its prefixes (at a path boundary) or of its paths inside `/api`. */
  serves(url: string): boolean;
  /** Pipes the request to the next replica and its answer back. */
  forward(request: IncomingMessage, response: ServerResponse): void;
  close(): void;
}

/**
 * A proxy over `upstreams` (`http://host:port`) for the paths under `prefixes` and those `paths` match.
 * `part` names the upstream in the gateway's own answers (the gateway also pipes a few control-plane paths).
 */
export function createDataPlaneProxy(upstreams: string[], prefixes: readonly string[], paths: readonly RegExp[] = [], part = 'the data plane'): DataPlaneProxy {
  const targets = upstreams.map((u) => new URL(u));
  // No cap on sockets per replica: with one (512 before), as many clients trickling bodies filled it and every
  // further request, any client's, queued behind them. A slow client holds only its own socket, until the
  // gateway's body idle timeout; idle ones kept are capped.
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });
  let turn = 0;
  const serves = (url: string) => prefixes.some((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`)) || paths.some((path) => path.test(url));

  /** `tried`: replicas that already refused this request's connection. */
  const forward = (request: IncomingMessage, response: ServerResponse, tried = 0) => {
    const target = targets[turn++ % targets.length]!;
    const headers = withoutHopByHop(request.headers);
    const client = request.socket.remoteAddress ?? '';
    const previous = request.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = previous ? `${previous}, ${client}` : client;
    headers['x-forwarded-host'] ??= request.headers.host;
    headers['x-forwarded-proto'] ??= 'http';
    const fail = (status: number, code: string, message: string) => {
      if (response.headersSent) response.destroy();
      else response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(errorBody(code, message));
    };
    let answered = false;
    const upstream = http.request({ agent, host: target.hostname, port: target.port, method: request.method, path: request.url, headers }, (answer) => {
      answered = true;
      // Answered before the whole body went up: what is left of it is dropped, so the replica, which reads a
      // body to its declared end, would take the next request on this connection for the rest of this one.
      if (!upstream.writableEnded) upstream.shouldKeepAlive = false;
      response.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      answer.pipe(response);
      answer.on('error', () => response.destroy());
      if (!request.readableEnded) {
        // Answered before the whole body came: the rest is read only to be dropped (as node's own server
        // does), so that the client gets to read this answer.
        request.unpipe();
        request.resume();
      }
    });
    upstream.setTimeout(UPSTREAM_IDLE_TIMEOUT_MS, () => {
      upstream.destroy();
      fail(504, 'gateway_timeout', `${part} did not answer in time`);
    });
    // Once the answer has begun, its own stream says whether it arrived whole (a failed write of the rest of the body does not matter).
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      // A replica that is down (restarting) refused the connection, so nothing reached it: a request without a
      // body goes to the next replica instead (one with a body has begun to flow into this one).
      // So does a safe one (GET, HEAD, OPTIONS) sent on a kept-alive connection the replica closed or reset before
      // answering: a replica that went down left such connections idle here, and one may be taken before its closing is
      // seen (what node's documentation of reusedSocket advises); a safe request changes nothing if it was read after all.
      const refused = error.code === 'ECONNREFUSED' || (upstream.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') && SAFE_METHODS.has(request.method ?? ''));
      if (refused && !hasBody(request) && tried + 1 < targets.length) forward(request, response, tried + 1);
      else fail(503, 'service_unavailable', `${part} is not reachable`);
    });
    // A client that goes away takes its upstream request with it; so does one whose body stopped coming (the
    // gateway answered it 408), though that answer was finished.
    response.on('close', () => {
      if (!response.writableFinished || (!answered && !request.complete)) upstream.destroy();
    });
    if (hasBody(request)) request.pipe(aTurnLater(() => answered)).pipe(upstream);
    else request.pipe(upstream);
  };

  return { serves, forward, close: () => agent.destroy() };
}
