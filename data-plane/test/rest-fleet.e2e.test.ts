/**
 * The data plane as a fleet: the harness runs two identical replicas behind
 * the gateway; a key rotation and a schema change reach each of them, asked
 * directly on its internal port, within a second.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { startGateway } from '../../deploy/local/src/gateway';
import { bearer, call } from '../../deploy/test/http';
import { createTable, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
const replicas = () => inject('servicePorts').dataPlanes.map((port) => `http://127.0.0.1:${port}`);

async function direct(base: string, path: string, key: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, { headers: { apikey: key } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Polls `check` on every replica until all pass; the time it took. */
async function everywhereWithin(ms: number, check: (base: string) => Promise<boolean>): Promise<number> {
  const started = Date.now();
  await Promise.all(replicas().map((base) => expect.poll(() => check(base), { timeout: ms, interval: 20 }).toBe(true)));
  return Date.now() - started;
}

beforeAll(async () => {
  p = await restProject('fleet');
  await createTable(p, { name: 'items', columns: [{ name: 'label', type: 'text' }] });
});

describe('a fleet of data planes', () => {
  it('runs two replicas, separate processes, both serving the project', async () => {
    expect(replicas()).toHaveLength(2);
    const pids = new Set<number>();
    for (const base of replicas()) {
      expect((await direct(base, '/rest/v1/items', p.project.anonKey)).status).toBe(200);
      pids.add(((await (await fetch(`${base}/healthz`)).json()) as { pid: number }).pid);
    }
    expect(pids.size).toBe(2);
  });

  it('has the gateway take the replicas in turn', async () => {
    // The real gateway in front of two stand-ins that say who they are.
    const standIns = await Promise.all(['a', 'b'].map(async (name) => {
      const server = http.createServer((_request, response) => response.end(name));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    }));
    const gateway = await startGateway({ host: '127.0.0.1', port: 0, controlPlaneUrl: standIns[0]!.url, dataPlaneUrl: standIns.map((s) => s.url), checkHealth: async () => ({ status: 'ok' }) as never });
    try {
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) seen.push(await (await fetch(`http://127.0.0.1:${gateway.port}/rest/v1/x`)).text());
      expect(seen).toEqual(['a', 'b', 'a', 'b']);
    } finally {
      await gateway.close();
      for (const s of standIns) s.server.close();
    }
  });

  it('stops accepting a rotated key on every replica within a second', async () => {
    const rotated = await call('POST', `/api/projects/${p.project.id}/keys/rotate`, { headers: bearer(p.operator.token), body: { kind: 'anon' } });
    expect(rotated.status).toBe(200);
    const took = await everywhereWithin(1000, async (base) => (await direct(base, '/rest/v1/items', p.project.anonKey)).status === 401);
    expect(took).toBeLessThan(1000);
    p.project.anonKey = rotated.body.anonKey;
    p.anon = { apikey: p.project.anonKey };
    for (const base of replicas()) expect((await direct(base, '/rest/v1/items', p.project.anonKey)).status).toBe(200);
  });

  it('shows a schema change on every replica’s schema cache within a second', async () => {
    // Warm both caches, so that only the event stream can tell them about the change.
    for (const base of replicas()) expect((await direct(base, '/rest/v1/', p.project.anonKey)).body.paths['/items']).toBeDefined();
    await sql(p, 'create table gadgets (id int primary key)');
    const took = await everywhereWithin(1000, async (base) => (await direct(base, '/rest/v1/', p.project.anonKey)).body.paths['/gadgets'] !== undefined);
    expect(took).toBeLessThan(1000);
    const added = await call('POST', `/api/projects/${p.project.id}/tables/items/columns`, { headers: bearer(p.operator.token), body: { name: 'price', type: 'int4' } });
    expect(added.status).toBe(201);
    await everywhereWithin(1000, async (base) => 'price' in (await direct(base, '/rest/v1/', p.project.anonKey)).body.definitions.items.properties);
  });

  it('follows the last of a burst of rotations within a second of its recording, on every replica', async () => {
    // Rotations of many projects at once: a replica is often catching up when the last one is recorded, and must
    // not leave it for its next poll. Measured from the event's recording (recorded_at), per key and replica.
    const platform = new pg.Client({ connectionString: inject('databaseUrl') });
    await platform.connect();
    try {
      const projects: RestProject[] = [];
      for (let i = 0; i < 12; i++) projects.push(await restProject(`burst ${i}`));
      const streams = projects.map((q) => `project-${q.project.id}`);
      for (let round = 0; round < 30; round++) {
        const old = projects.map((q) => q.project.anonKey);
        const rotated = await Promise.all(projects.map((q) => call('POST', `/api/projects/${q.project.id}/keys/rotate`, { headers: bearer(q.operator.token), body: { kind: 'anon' } })));
        rotated.forEach((answer, i) => {
          expect(answer.status, answer.text).toBe(200);
          projects[i]!.project.anonKey = answer.body.anonKey;
        });
        const refusedAt = await Promise.all(replicas().map((base) => Promise.all(old.map(async (key) => {
          const deadline = Date.now() + 5000;
          while ((await direct(base, '/rest/v1/', key)).status !== 401 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
          return Date.now();
        }))));
        const { rows } = await platform.query<{ stream_id: string; at: number }>(
          `select stream_id, extract(epoch from max(recorded_at)) * 1000 as at from events where type = 'ApiKeyRotated' and stream_id = any($1) group by stream_id`,
          [streams],
        );
        const recordedAt = new Map(rows.map((r) => [r.stream_id, Number(r.at)]));
        for (const times of refusedAt) {
          times.forEach((at, i) => expect(at - recordedAt.get(streams[i]!)!, `round ${round}, project ${i}`).toBeLessThan(1000));
        }
      }
    } finally {
      await platform.end();
    }
  }, 180_000);

  it('answers through the gateway while a replica is down and restarting', async () => {
    const [first] = replicas();
    const { pid } = (await (await fetch(`${first!}/healthz`)).json()) as { pid: number };
    process.kill(pid, 'SIGKILL');
    try {
      // The supervisor starts it again after 200 ms; until it listens, its port refuses connections.
      await expect.poll(() => fetch(`${first!}/healthz`).then(() => 'up', () => 'down'), { timeout: 5000, interval: 10 }).toBe('down');
      const answers = [];
      for (let i = 0; i < 20; i++) answers.push(await call('GET', '/rest/v1/items', { headers: p.anon }));
      // What any other answer said (the gateway's service_unavailable, or a replica's own 503) goes into the failure.
      expect(answers.map((a) => a.status), answers.filter((a) => a.status !== 200).map((a) => a.text).join(' | ')).toEqual(Array(20).fill(200));
    } finally {
      // Back (a new process serving, caught up) for the tests after this one.
      await expect.poll(async () => {
        const health = await fetch(`${first!}/healthz`).then((r) => r.json() as Promise<{ status: string; pid: number }>, () => null);
        return health?.status === 'ok' && health.pid !== pid;
      }, { timeout: 60_000, interval: 200 }).toBe(true);
    }
  }, 90_000);
});
