/**
 * The benchmarks' wrk driver (deploy/local/src/bench/wrk.ts) against real
 * wrk and two small HTTP servers that check every request: the figures it
 * prints are only as honest as the requests it really sent. `{n}` stays in
 * range, a chain of refresh-like tokens spends each token exactly once and
 * never runs dry, answers of another status are counted as errors, and the
 * connections are spread over the servers.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wrkLoad } from '../local/src/bench/wrk';

interface TokenServer {
  url: string;
  /** Answers per status and path. */
  counts: Map<string, number>;
  ids: Set<number>;
  /** Tokens answered and not spent yet, and tokens presented twice or never issued. */
  live: Set<string>;
  refused: string[];
  close(): Promise<void>;
}

async function startServer(): Promise<TokenServer> {
  const counts = new Map<string, number>();
  const ids = new Set<number>();
  const live = new Set<string>();
  const refused: string[] = [];
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const url = new URL(request.url!, 'http://x');
      if (url.pathname === '/item') {
        ids.add(Number(url.searchParams.get('id')));
        count('200 item');
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        return;
      }
      // A rotation: the presented token is spent, and the answer carries its successor.
      const token = (JSON.parse(body) as { refreshToken: string }).refreshToken;
      if (request.headers.apikey !== 'key' || !live.delete(token)) {
        refused.push(token);
        count('401 refresh');
        response.writeHead(401).end('{"code":"refresh_token_invalid"}');
        return;
      }
      const next = randomBytes(12).toString('base64url');
      live.add(next);
      count('200 refresh');
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ accessToken: 'a', refreshToken: next, expiresIn: 3600 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    ids,
    live,
    refused,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('bench wrk driver', () => {
  let servers: TokenServer[] = [];

  beforeAll(async () => {
    servers = await Promise.all([startServer(), startServer()]);
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('sends {n} within 1..rows to every server and counts what it sent', async () => {
    const result = await wrkLoad(servers.map((s) => s.url), { method: 'GET', path: '/item?id={n}', headers: {}, status: 200 }, { concurrency: 4, seconds: 1, warmUpSeconds: 0, rows: 50 });
    expect(result.errors).toBe(0);
    const answered = servers.reduce((sum, s) => sum + (s.counts.get('200 item') ?? 0), 0);
    // wrk counts the answers it read in its measured second; a request in flight at the end may be answered unread,
    // and one more was the status probe sent before the load.
    expect(result.requests).toBeGreaterThan(100);
    expect(answered).toBeGreaterThanOrEqual(result.requests);
    expect(answered - result.requests).toBeLessThanOrEqual(4 + 1);
    for (const server of servers) {
      expect(server.counts.get('200 item') ?? 0).toBeGreaterThan(0);
      for (const id of server.ids) expect(id >= 1 && id <= 50).toBe(true);
    }
    expect(new Set([...servers[0]!.ids, ...servers[1]!.ids]).size).toBeGreaterThan(40);
    expect(result.p50).toBeGreaterThan(0);
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);
  });

  it('spends each chained token once, hands on the answer, and never runs dry', async () => {
    // Tokens valid on either server, as refresh tokens are on every replica.
    const tokens = Array.from({ length: 2 * 2 * (2 * 2 + 1) }, () => randomBytes(12).toString('base64url'));
    for (const server of servers) for (const token of tokens) server.live.add(token);
    const result = await wrkLoad(
      servers.map((s) => s.url),
      { method: 'POST', path: '/refresh', headers: { apikey: 'key' }, body: '{"refreshToken":"{state}"}', states: tokens, nextState: 'refreshToken', status: 200 },
      { concurrency: 4, seconds: 1, warmUpSeconds: 1 },
    );
    expect(result.errors).toBe(0);
    for (const server of servers) expect(server.refused).toEqual([]);
    // Far more rotations than tokens given: the chains went on.
    expect(result.requests).toBeGreaterThan(10 * tokens.length);
  });

  it('refuses to start a chain that would run dry', async () => {
    await expect(
      wrkLoad(servers.map((s) => s.url), { method: 'POST', path: '/refresh', headers: {}, body: '{}', states: ['a', 'b'], nextState: 'refreshToken', status: 200 }, { concurrency: 4, seconds: 1, warmUpSeconds: 0 }),
    ).rejects.toThrow(/needs 10 states, got 2/);
  });

  it('fails a load whose answers are another 2xx than the one expected, which wrk alone lets pass', async () => {
    const result = await wrkLoad(servers.map((s) => s.url), { method: 'GET', path: '/item?id={n}', headers: {}, status: 201 }, { concurrency: 2, seconds: 1, warmUpSeconds: 0, rows: 5 });
    expect(result.requests).toBeGreaterThan(0);
    expect(result.errors).toBeGreaterThan(0);
    expect(result.firstError).toMatch(/^200 /);
  });

  it('counts answers of another status as errors, with the first one', async () => {
    const result = await wrkLoad([servers[0]!.url], { method: 'POST', path: '/refresh', headers: { apikey: 'wrong' }, body: '{"refreshToken":"x"}', status: 200 }, { concurrency: 2, seconds: 1, warmUpSeconds: 0 });
    expect(result.requests).toBeGreaterThan(0);
    expect(result.errors).toBe(result.requests);
    expect(result.firstError).toContain('401');
  });
});
