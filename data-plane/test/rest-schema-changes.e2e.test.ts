/**
 * A schema change answered right on every replica: what each replica's
 * connections prepared against the old catalog must not answer for the new
 * one. Each case first has both replicas run the request's statement on
 * their connections, then changes the schema, then asks each replica
 * directly (and the gateway) until the new answer comes, within a second of
 * the change's answer (the contract for a change through the SQL console).
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer, call } from '../../deploy/test/http';
import { createTable, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
const bases = () => [...inject('servicePorts').dataPlanes.map((port) => `http://127.0.0.1:${port}`), inject('baseUrl')];

async function get(base: string, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, { headers: { apikey: p.project.serviceKey } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Runs `path` on each replica, many at once, so that every connection it opens for the project has its statement. */
async function warm(path: string, expected: unknown): Promise<void> {
  for (let round = 0; round < 5; round++) {
    await Promise.all(bases().flatMap((base) => Array.from({ length: 10 }, async () => {
      const answer = await get(base, path);
      expect(answer.body).toEqual(expected);
    })));
  }
}

/** Polls `path` on every replica and the gateway until each answers 200 `expected`, then checks it goes on doing so; the time it took. */
async function everywhereWithin(ms: number, path: string, expected: unknown): Promise<number> {
  const started = Date.now();
  await Promise.all(bases().map((base) => expect.poll(() => get(base, path), { timeout: ms, interval: 20 }).toEqual({ status: 200, body: expected })));
  const took = Date.now() - started;
  await warm(path, expected);
  return took;
}

beforeAll(async () => {
  p = await restProject('schema-changes');
});

describe('a schema change and the statements prepared before it', () => {
  it('filters a column whose type changed through the SQL console', async () => {
    await sql(p, 'create table retyped (id int primary key, n int); insert into retyped values (1, 1), (2, 2)');
    await warm('/rest/v1/retyped?n=eq.1', [{ id: 1, n: 1 }]);
    await sql(p, "alter table retyped alter column n type text using n::text; insert into retyped values (3, 'three')");
    const took = await everywhereWithin(1000, '/rest/v1/retyped?n=eq.three', [{ id: 3, n: 'three' }]);
    expect(took).toBeLessThan(1000);
  });

  it('calls a function re-created with another argument type', async () => {
    await sql(p, 'create function shout(word int) returns text language sql as $$ select word::text || $q$!$q$ $$');
    await warm('/rest/v1/rpc/shout?word=1', '1!');
    await sql(p, 'drop function shout(int); create function shout(word text) returns text language sql as $$ select upper(word) || $q$!$q$ $$');
    const took = await everywhereWithin(1000, '/rest/v1/rpc/shout?word=hey', 'HEY!');
    expect(took).toBeLessThan(1000);
  });

  it('filters a column whose type changed through the management API', async () => {
    await createTable(p, { name: 'managed', columns: [{ name: 'n', type: 'int4' }] });
    await sql(p, 'insert into managed (n) values (1)');
    await warm('/rest/v1/managed?n=eq.1', [{ id: 1, n: 1 }]);
    const changed = await call('PUT', `/api/projects/${p.project.id}/tables/managed/columns/n`, { headers: bearer(p.operator.token), body: { type: 'text', using: "n::text || 'x'" } });
    expect(changed.status, changed.text).toBe(200);
    const took = await everywhereWithin(1000, '/rest/v1/managed?n=eq.1x', [{ id: 1, n: '1x' }]);
    expect(took).toBeLessThan(1000);
  });
});
