/**
 * The gateway against slow clients, over real sockets: clients that send a
 * request's headers and then trickle its body, or stop sending it, must hold
 * no more than their own connections, and not for ever. Small servers stand
 * in for the control and data planes, reading bodies as they come.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../local/src/gateway';
import { nothingReady } from '../local/src/health';

interface Upstream {
  url: string;
  /** Requests whose body ended, and requests that were cut (their connection closed before the body ended). */
  ended: () => number;
  cut: () => number;
  close: () => Promise<void>;
}

/** Answers 200 once a request's body has ended. */
async function startUpstream(): Promise<Upstream> {
  let ended = 0;
  let cut = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      ended += 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: request.url }));
    });
    request.on('close', () => {
      if (!request.complete) cut += 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    ended: () => ended,
    cut: () => cut,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

let controlPlane: Upstream;
let dataPlane: Upstream;
let gateway: Gateway;
let base: string;
const BODY_IDLE_MS = 800;
const ANSWER_IDLE_MS = 800;
const sockets: net.Socket[] = [];

/** A client that sends `path`'s headers for a 1 MB body and its first bytes, then (when `trickle`) a byte every 300 ms. */
function slowClient(path: string, trickle: boolean): { socket: net.Socket; answer: Promise<string> } {
  const socket = net.connect(gateway.port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.on('data', (chunk: Buffer) => { received += chunk.toString(); });
  socket.on('error', () => undefined);
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(`POST ${path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n[`);
  if (trickle) {
    const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(' ')), 300);
    socket.on('close', () => clearInterval(timer));
  }
  return { socket, answer };
}

beforeAll(async () => {
  controlPlane = await startUpstream();
  dataPlane = await startUpstream();
  gateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    controlPlaneUrl: controlPlane.url,
    dataPlaneUrl: dataPlane.url,
    checkHealth: async () => nothingReady(),
    bodyIdleTimeoutMs: BODY_IDLE_MS,
    answerIdleTimeoutMs: ANSWER_IDLE_MS,
  });
  base = `http://127.0.0.1:${gateway.port}`;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await gateway?.close();
  await Promise.all([controlPlane?.close(), dataPlane?.close()]);
});

describe('gateway and slow clients', () => {
  it.each([
    // The data plane's replicas were reached through an agent of 512 sockets each; the control plane through reply-from's pool of 128.
    { part: 'data plane', slowPath: '/rest/v1/todos', probe: '/rest/v1/todos?select=id', clients: 600 },
    { part: 'control plane', slowPath: '/api/auth/signin', probe: '/api/projects', clients: 200 },
  ])('$clients clients trickling bodies to the $part do not hold up another client', async ({ slowPath, probe, clients }) => {
    const slow = Array.from({ length: clients }, () => slowClient(slowPath, true));
    // Every slow request has reached the upstream: the gateway's connections to it are taken.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Before, this waited for a connection until the slow ones went (the test's 5 s, or node's 300 s request timeout).
    const answer = await fetch(`${base}${probe}`, { signal: AbortSignal.timeout(5_000) });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ url: probe });
    for (const { socket } of slow) socket.destroy();
  }, 10_000);

  it.each([
    { part: 'data plane', path: '/rest/v1/todos', upstream: () => dataPlane },
    { part: 'control plane', path: '/api/auth/signin', upstream: () => controlPlane },
  ])('a body that stops coming to the $part is answered 408 request_timeout, and its upstream request is cut', async ({ path, upstream }) => {
    const cutBefore = upstream().cut();
    const started = Date.now();
    const { answer } = slowClient(path, false);
    const text = await answer;
    // Checked every BODY_IDLE_MS: silent for one to two of them.
    expect(Date.now() - started).toBeLessThan(4 * BODY_IDLE_MS);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ code: 'request_timeout', message: expect.stringContaining('did not move'), details: null, hint: null });
    await expect.poll(() => upstream().cut(), { timeout: 2_000 }).toBeGreaterThan(cutBefore);
  }, 10_000);

  it('a body that keeps coming, slowly, is not cut', async () => {
    // 5 bytes every 300 ms for 3 s: longer than the idle timeout, never idle for it.
    const body = 'x'.repeat(50);
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = http.request(`${base}/rest/v1/slow`, { method: 'POST', headers: { 'content-length': String(body.length) } }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => { text += chunk.toString(); });
        response.on('end', () => resolve({ status: response.statusCode!, text }));
      });
      request.on('error', reject);
      let sent = 0;
      const timer = setInterval(() => {
        request.write(body.slice(sent, sent + 5));
        sent += 5;
        if (sent >= body.length) {
          clearInterval(timer);
          request.end();
        }
      }, 300);
    });
    expect(answer).toEqual({ status: 200, text: JSON.stringify({ url: '/rest/v1/slow' }) });
  });

  it("a body the upstream is slow to read is not cut: what waits on the gateway's side is not the client's silence", async () => {
    // An upstream that starts reading 4 idle timeouts late: 32 MB sent at once fill every buffer on the way.
    let resumeAt = 0;
    const server = http.createServer((request, response) => {
      setTimeout(() => {
        resumeAt = Date.now();
        request.resume();
      }, 4 * BODY_IDLE_MS);
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"read":true}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const lazy = await startGateway({
      host: '127.0.0.1',
      port: 0,
      controlPlaneUrl: controlPlane.url,
      dataPlaneUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      checkHealth: async () => nothingReady(),
      bodyIdleTimeoutMs: BODY_IDLE_MS,
    });
    try {
      const answer = await fetch(`http://127.0.0.1:${lazy.port}/storage/v1/upload`, { method: 'POST', body: Buffer.alloc(32 * 1024 * 1024, 1) });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ read: true });
      expect(resumeAt).toBeGreaterThan(0);
    } finally {
      await lazy.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.each([
    { part: 'data plane', path: '/rest/v1/big' },
    { part: 'control plane', path: '/api/big' },
  ])('a client that never reads a large answer from the $part has its connection closed, and the upstream answer is let go', async ({ path }) => {
    // 64 MB: more than every socket buffer on the way holds, so the upstream's answer waits in its memory.
    // The upstream's connection closing is what lets its answer go (kept alive, it would stay open, the answer written or not).
    let upstreamClosed = false;
    const server = http.createServer((_request, response) => {
      response.socket!.on('close', () => { upstreamClosed = true; });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
      response.end(Buffer.alloc(64 * 1024 * 1024, 0x20));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const big = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: url, dataPlaneUrl: url, checkHealth: async () => nothingReady(), answerIdleTimeoutMs: ANSWER_IDLE_MS });
    try {
      const socket = net.connect(big.port, '127.0.0.1');
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.pause();
      const started = Date.now();
      socket.write(`GET ${path} HTTP/1.1\r\nhost: localhost\r\n\r\n`);
      // Before, the upstream's answer stayed in its memory as long as the client kept the connection.
      await expect.poll(() => upstreamClosed, { timeout: 6 * ANSWER_IDLE_MS, interval: 50 }).toBe(true);
      expect(Date.now() - started).toBeLessThan(5 * ANSWER_IDLE_MS);
    } finally {
      await big.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 10_000);

  it('an answer read slowly, but read, is not cut', async () => {
    const server = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(16 * 1024 * 1024) });
      response.end(Buffer.alloc(16 * 1024 * 1024, 1));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const slowReader = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: url, dataPlaneUrl: url, checkHealth: async () => nothingReady(), answerIdleTimeoutMs: ANSWER_IDLE_MS });
    try {
      const received = await new Promise<number>((resolve, reject) => {
        http.get(`http://127.0.0.1:${slowReader.port}/storage/v1/object/big`, (response) => {
          let bytes = 0;
          // 4 MB every 400 ms, pausing in between: about 1.6 s for the whole answer, twice the idle timeout.
          response.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes % (4 * 1024 * 1024) < chunk.length) {
              response.pause();
              setTimeout(() => response.resume(), 400);
            }
          });
          response.on('end', () => resolve(bytes));
          response.on('error', reject);
        }).on('error', reject);
      });
      expect(received).toBe(16 * 1024 * 1024);
    } finally {
      await slowReader.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 15_000);

  it('many answers on one kept-alive connection leave nothing behind on its socket', async () => {
    const server = http.createServer((_request, response) => response.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const gateway = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: url, dataPlaneUrl: url, checkHealth: async () => nothingReady() });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<net.Socket>();
      for (let i = 0; i < 50; i++) {
        await new Promise<void>((resolve, reject) => {
          const request = http.get(`http://127.0.0.1:${gateway.port}/rest/v1/items`, { agent }, (response) => {
            response.resume();
            response.on('end', () => resolve());
          });
          request.on('socket', (socket) => sockets.add(socket));
          request.on('error', reject);
        });
      }
      expect(sockets.size, 'one connection carried every request').toBe(1);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      agent.destroy();
      await gateway.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
