/**
 * The gateway's hot path: requests for the data plane are piped to one of
 * its replicas (round-robin) over kept-alive connections with node's own
 * http, before Fastify routes anything — the data API's throughput through
 * the gateway is bounded by this hop.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';

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

/** A round-robin proxy to the data-plane replicas. */
export interface DataPlaneProxy {
  /** True when `url` belongs to the data plane: one of its prefixes (at a path boundary) or of its paths inside `/api`. */
  serves(url: string): boolean;
  /** Pipes the request to the next replica and its answer back. */
  forward(request: IncomingMessage, response: ServerResponse): void;
  close(): void;
}

/** A proxy over `upstreams` (`http://host:port`) for the paths under `prefixes` and those `paths` match. */
export function createDataPlaneProxy(upstreams: string[], prefixes: readonly string[], paths: readonly RegExp[] = []): DataPlaneProxy {
  const targets = upstreams.map((u) => new URL(u));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512, maxFreeSockets: 256 });
  let turn = 0;
  const serves = (url: string) => prefixes.some((p) => url === p || url.startsWith(`${p}/`) || url.startsWith(`${p}?`)) || paths.some((path) => path.test(url));

  const forward = (request: IncomingMessage, response: ServerResponse) => {
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
    const upstream = http.request({ agent, host: target.hostname, port: target.port, method: request.method, path: request.url, headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      answer.pipe(response);
      answer.on('error', () => response.destroy());
    });
    upstream.setTimeout(UPSTREAM_IDLE_TIMEOUT_MS, () => {
      upstream.destroy();
      fail(504, 'gateway_timeout', 'the data plane did not answer in time');
    });
    upstream.on('error', () => fail(503, 'service_unavailable', 'the data plane is not reachable'));
    // A client that goes away takes its upstream request with it.
    response.on('close', () => {
      if (!response.writableFinished) upstream.destroy();
    });
    request.pipe(upstream);
  };

  return { serves, forward, close: () => agent.destroy() };
}
