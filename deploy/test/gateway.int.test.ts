/**
 * The gateway's routing contract, over real sockets: which prefix reaches which
 * service, what passes through untouched, and the gateway's own answers. Two
 * small echo servers stand in for the control and data planes so that each
 * request's arrival can be inspected.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDataPlaneProxy } from '../local/src/data-plane-proxy';
import { startGateway, type Gateway } from '../local/src/gateway';
import { nothingReady } from '../local/src/health';
import { findFreePort } from '../local/src/net';

interface Echo {
  upstream: string;
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bodyBytes: number;
  bodySha256: string;
}

/** An HTTP server that answers with what it received; `x-echo-status` picks the status. */
async function startEcho(name: string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server = http.createServer((request, response) => {
    hits += 1;
    const hash = createHash('sha256');
    let bodyBytes = 0;
    request.on('data', (chunk: Buffer) => {
      bodyBytes += chunk.length;
      hash.update(chunk);
    });
    request.on('end', () => {
      const echo: Echo = {
        upstream: name,
        method: request.method!,
        url: request.url!,
        headers: request.headers,
        bodyBytes,
        bodySha256: hash.digest('hex'),
      };
      const status = Number(request.headers['x-echo-status'] ?? 200);
      response.writeHead(status, { 'content-type': 'application/json', 'content-range': '0-9/100' });
      response.end(JSON.stringify(echo));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * An upstream that refuses a body over `limitBytes` as the data plane's
 * Fastify does: 413 with `Connection: close` as soon as the headers say so;
 * node's server then closes the connection without reading the body, and
 * the rest of the upload meets a reset.
 */
async function startLimited(limitBytes: number): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (Number(request.headers['content-length'] ?? 0) > limitBytes) {
      response.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      response.end(JSON.stringify(apiError('payload_too_large', 'request body is too large')));
      return;
    }
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * An upstream that refuses every body at once, as the data plane refuses an
 * upload to a bad path: 400 on the headers, the connection kept alive, and
 * the body then read to its declared end and dropped (node's server does
 * that). Anything else is answered 200 with its URL.
 */
async function startEarly(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (request.method === 'POST') {
      response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(apiError('invalid_request', 'bad path')));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: request.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** One request with its path sent as given (fetch() would resolve `..` and `%2e` segments first). */
function rawRequest(port: number, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const request = http.request({ host: '127.0.0.1', port, method, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** The flat error body of API.md → Conventions. */
function apiError(code: string, message: unknown) {
  return { code, message, details: null, hint: null };
}

let gateway: Gateway;
let downGateway: Gateway;
let controlPlane: Awaited<ReturnType<typeof startEcho>>;
let dataPlane: Awaited<ReturnType<typeof startEcho>>;
let limited: Awaited<ReturnType<typeof startLimited>>;
let limitedGateway: Gateway;
let early: Awaited<ReturnType<typeof startEarly>>;
let earlyGateway: Gateway;
let base: string;

beforeAll(async () => {
  controlPlane = await startEcho('control-plane');
  dataPlane = await startEcho('data-plane');
  const checkHealth = async () => nothingReady();
  gateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    controlPlaneUrl: controlPlane.url,
    dataPlaneUrl: dataPlane.url,
    checkHealth,
  });
  base = `http://127.0.0.1:${gateway.port}`;
  // Nothing listens on these ports: the services behind this gateway are down.
  const nowhere = `http://127.0.0.1:${await findFreePort()}`;
  downGateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    controlPlaneUrl: nowhere,
    dataPlaneUrl: nowhere,
    checkHealth,
  });
  limited = await startLimited(1024 * 1024);
  limitedGateway = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: controlPlane.url, dataPlaneUrl: limited.url, checkHealth });
  early = await startEarly();
  earlyGateway = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: controlPlane.url, dataPlaneUrl: early.url, checkHealth });
});

afterAll(async () => {
  await Promise.all([gateway?.close(), downGateway?.close(), limitedGateway?.close(), earlyGateway?.close(), controlPlane?.close(), dataPlane?.close(), limited?.close(), early?.close()]);
});

const routes = [
  { name: 'data API', path: '/rest/v1/todos?select=id,title&done=is.false', upstream: 'data-plane' },
  { name: 'data API alias under /api', path: '/api/rest/v1/todos?id=eq.1', upstream: 'data-plane' },
  { name: 'end-user auth', path: '/rest/v1/auth/signup', upstream: 'data-plane' },
  { name: 'storage', path: '/storage/v1/object/public/avatars/a.png', upstream: 'data-plane' },
  { name: 'social-login broker', path: '/auth/v1/callback?code=x', upstream: 'data-plane' },
  { name: 'operator API', path: '/api/projects/123/tables', upstream: 'control-plane' },
  { name: 'operator API root', path: '/api', upstream: 'control-plane' },
];

describe('gateway routing', () => {
  it.each(routes)('$name: $path reaches the $upstream with its path unchanged', async ({ path, upstream }) => {
    const response = await fetch(base + path);
    const echo = (await response.json()) as Echo;
    expect(echo.upstream).toBe(upstream);
    expect(echo.url).toBe(path);
  });

  it('passes request headers, status and response headers through, and adds x-forwarded-for', async () => {
    const sent = { apikey: 'anon-key', authorization: 'Bearer user-token', prefer: 'count=exact', range: '0-9' };
    const response = await fetch(`${base}/rest/v1/todos`, { headers: { ...sent, 'x-echo-status': '206' } });
    expect(response.status).toBe(206);
    expect(response.headers.get('content-range')).toBe('0-9/100');
    const echo = (await response.json()) as Echo;
    expect(echo.headers).toMatchObject(sent);
    expect(echo.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(echo.headers['x-forwarded-host']).toBe(`127.0.0.1:${gateway.port}`);
  });

  it('streams a request body through byte for byte, whatever its type', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, 'abcdefgh');
    const response = await fetch(`${base}/storage/v1/object/files/big.bin`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
    const echo = (await response.json()) as Echo;
    expect(echo.bodyBytes).toBe(body.length);
    expect(echo.bodySha256).toBe(createHash('sha256').update(body).digest('hex'));
  });

  it('passes on the 413 a data plane answers before taking the body, though it then closes the connection', async () => {
    const url = `http://127.0.0.1:${limitedGateway.port}/rest/v1/auth/signup`;
    for (const megabytes of [2, 11, 40]) {
      for (let i = 0; i < 5; i++) {
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.alloc(megabytes * 1024 * 1024, 'x') });
        expect([megabytes, response.status]).toEqual([megabytes, 413]);
        expect(await response.json()).toEqual(apiError('payload_too_large', expect.any(String)));
      }
    }
    // The connections left mid-body are not reused: the next request is served whole.
    const small = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(small.status).toBe(200);
  });

  it('does not reuse a connection whose body was cut short by an early answer: the next request arrives whole', async () => {
    const base = `http://127.0.0.1:${earlyGateway.port}/storage/v1/object`;
    const next: Array<[number, number | string]> = [];
    for (let i = 0; i < 40; i++) {
      // Bodies of a few chunks: the answer comes while some of them are still on their way up.
      const refused = await fetch(`${base}/up`, { method: 'POST', body: Buffer.alloc(1 + (i % 10) * 20_000, 'x'), signal: AbortSignal.timeout(5000) });
      expect(refused.status).toBe(400);
      await refused.text();
      const answer = await fetch(`${base}/next-${i}`, { signal: AbortSignal.timeout(5000) }).then((r) => r.status, (error: Error) => error.name);
      next.push([i, answer]);
    }
    expect(next.filter(([, status]) => status !== 200)).toEqual([]);
  });

  it('passes a control-plane path with an encoded slash, a backslash or dot segments through byte for byte, body too', async () => {
    // The proxy plugin refused each of these with its own 400, or resolved its dot segments, whatever the
    // control plane would have answered; clients like fetch() normalise `..` themselves, so the bytes go raw.
    const paths = ['/api/projects/a%2F..%2Fb/tables', '/api/projects/..%2f..%2fetc%2fpasswd', '/api/projects/%2e%2e/tables', '/api/projects/..', '/api/projects/%2e/tables', '/api/projects/..%5Cx?q=1', '/api/../healthz'];
    for (const path of paths) {
      const answer = await rawRequest(gateway.port, 'GET', path);
      expect([path, answer.status]).toEqual([path, 200]);
      expect(JSON.parse(answer.text)).toMatchObject({ upstream: 'control-plane', url: path, method: 'GET' });
    }
    const body = JSON.stringify({ name: 'x' });
    const posted = JSON.parse((await rawRequest(gateway.port, 'POST', '/api/projects/a%2F..%2Fb/tables', body)).text) as Echo;
    expect(posted).toMatchObject({ upstream: 'control-plane', url: '/api/projects/a%2F..%2Fb/tables', bodyBytes: body.length, bodySha256: createHash('sha256').update(body).digest('hex') });
    expect(posted.headers['x-forwarded-for']).toBe('127.0.0.1');
  });

  it('does not retry a GET the service answered 503 (the caller decides)', async () => {
    const before = dataPlane.hits();
    const response = await fetch(`${base}/rest/v1/todos`, { headers: { 'x-echo-status': '503' } });
    expect(response.status).toBe(503);
    expect(dataPlane.hits() - before).toBe(1);
  });
});

describe('data-plane fleet', () => {
  it('sends a safe request the replica reset on a kept-alive connection to the next replica, and nothing else', async () => {
    // A replica that went down leaves connections idle in the proxy; one taken before its closing is seen fails at
    // once. This one answers each connection's first request, then resets the connection on the next.
    const served = new WeakMap<object, number>();
    const dying = http.createServer((request, response) => {
      const count = (served.get(request.socket) ?? 0) + 1;
      served.set(request.socket, count);
      if (count > 1) request.socket.resetAndDestroy();
      else response.end('dying');
    });
    const steady = http.createServer((_request, response) => response.end('steady'));
    await Promise.all([dying, steady].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const urls = [dying, steady].map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const proxy = createDataPlaneProxy(urls, ['/rest/v1']);
    const front = http.createServer((request, response) => proxy.forward(request, response));
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const port = (front.address() as AddressInfo).port;
    try {
      const answers: Array<[number, string]> = [];
      for (const method of ['GET', 'GET', 'GET', 'GET', 'GET', 'POST']) {
        const { status, text } = await rawRequest(port, method, '/rest/v1/items');
        answers.push([status, status === 200 ? text : JSON.parse(text).code]);
      }
      expect(answers).toEqual([
        [200, 'dying'], [200, 'steady'],
        // Sent again on the kept connection and reset: given to the next replica.
        [200, 'steady'],
        [200, 'dying'], [200, 'steady'],
        // A POST, even without a body, may have been acted on: not sent twice.
        [503, 'service_unavailable'],
      ]);
    } finally {
      proxy.close();
      await Promise.all([front, dying, steady].map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });
});

describe("gateway's own answers", () => {
  it('404 in the API error shape for a path no part serves', async () => {
    const response = await fetch(`${base}/nothing/here`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual(apiError('not_found', expect.any(String)));
  });

  it('503 service_unavailable naming the part when a service is down', async () => {
    const cases = [
      { path: '/api/projects', part: 'control plane' },
      { path: '/rest/v1/todos', part: 'data plane' },
    ];
    for (const { path, part } of cases) {
      const response = await fetch(`http://127.0.0.1:${downGateway.port}${path}`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual(apiError('service_unavailable', expect.stringContaining(part)));
    }
  });

  it('/healthz is 503 with every part listed while parts are not ready', async () => {
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      status: 'unavailable',
      parts: {
        platformDatabase: 'unavailable',
        temporal: 'unavailable',
        controlPlane: 'unavailable',
        worker: 'unavailable',
        dataPlane: 'unavailable',
      },
    });
  });
});
