/**
 * Requests sharing pipelined connections (one-sync.ts, pipelines.ts): each
 * batch is its own transaction with its own role and claims, a failure rolls
 * back only its batch, a statement whose Parse is still on the way elsewhere
 * does not make a batch depend on it, and a slow statement does not hold up
 * the requests after it.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { call } from '../../deploy/test/http';
import { OneSyncBatch, type BatchStep } from '../src/rest/one-sync';
import { createTable, restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

describe('one batch under one Sync, on a pipelined connection of PostgreSQL', () => {
  const database = `pipelines_${randomUUID().replace(/-/g, '')}`;
  let admin: pg.Client;
  let client: pg.Client;
  const send = (steps: BatchStep[]) => {
    const batch = new OneSyncBatch(steps);
    void client.query(batch);
    return batch.done;
  };
  const wireOf = () => (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
    await admin.connect();
    await admin.query(`create database ${database}`);
    const url = new URL(inject('tenantDatabaseUrl'));
    url.pathname = `/${database}`;
    client = new pg.Client({ connectionString: url.toString(), pipeline: true } as pg.ClientConfig);
    await client.connect();
    await client.query('create table t (v int)');
  });

  afterAll(async () => {
    await client?.end();
    await admin?.query(`drop database if exists ${database} with (force)`);
    await admin?.end();
  });

  it('does not make a batch depend on a Parse that an earlier, failing batch never reached', async () => {
    const plusOne: BatchStep = { name: 'plus_one', text: 'select $1::int + 1 as v', values: ['1'], describe: true };
    // Sent back to back: the first fails before its Parse of plus_one, the others were written while that Parse was pending.
    const [first, second, third] = await Promise.allSettled([
      send([{ name: '', text: 'select 1/0', values: [] }, plusOne]),
      send([{ ...plusOne, values: ['2'] }]),
      send([{ ...plusOne, values: ['3'] }]),
    ]);
    expect(first.status).toBe('rejected');
    expect((first as PromiseRejectedResult).reason.code).toBe('22012');
    expect(second).toMatchObject({ status: 'fulfilled', value: [{ rows: [{ v: '3' }] }] });
    expect(third).toMatchObject({ status: 'fulfilled', value: [{ rows: [{ v: '4' }] }] });
    // The next batch parsed it for good; the one after that uses it without a Parse.
    expect(await send([{ ...plusOne, values: ['4'] }])).toMatchObject([{ rows: [{ v: '5' }] }]);
    expect(wireOf().parsedStatements.plus_one).toBe(plusOne.text);
    expect(await send([{ ...plusOne, values: ['5'] }])).toMatchObject([{ rows: [{ v: '6' }] }]);
  });

  it('keeps SET LOCAL to its own batch and rolls back only the batch that failed', async () => {
    const [setter, reader, failed, kept] = await Promise.allSettled([
      send([{ name: '', text: "select set_config('request.jwt.claims', 'ada', true)", values: [] }, { name: '', text: "select current_setting('request.jwt.claims') as c", values: [], describe: true }]),
      send([{ name: '', text: "select coalesce(current_setting('request.jwt.claims', true), '') as c", values: [], describe: true }]),
      send([{ name: '', text: 'insert into t values (1)', values: [] }, { name: '', text: 'select 1/0', values: [] }]),
      send([{ name: '', text: 'insert into t values (2)', values: [] }]),
    ]);
    expect(setter).toMatchObject({ status: 'fulfilled', value: [{}, { rows: [{ c: 'ada' }] }] });
    expect(reader).toMatchObject({ status: 'fulfilled', value: [{ rows: [{ c: '' }] }] });
    expect(failed.status).toBe('rejected');
    expect(kept.status).toBe('fulfilled');
    expect((await client.query('select array_agg(v order by v) as vs from t')).rows[0].vs).toEqual([2]);
  });
});

describe('the data API on pipelined connections', () => {
  let p: RestProject;
  let users: Array<{ token: string; id: string }>;
  const replica = () => `http://127.0.0.1:${inject('servicePorts').dataPlanes[0]}`;
  const direct = (path: string, headers: Record<string, string>) => fetch(`${replica()}/rest/v1/${path}`, { headers });

  beforeAll(async () => {
    p = await restProject('rest pipelines');
    await createTable(p, { name: 'diary', access: 'owner', columns: [{ name: 'body', type: 'text' }] });
    users = await Promise.all([signUpUser(p), signUpUser(p), signUpUser(p)]);
    for (const user of users) {
      const answer = await call('POST', '/rest/v1/diary', { headers: { ...p.anon, authorization: `Bearer ${user.token}` }, body: { body: `by ${user.id}` } });
      expect(answer.status, answer.text).toBe(201);
    }
    await sql(p, `create function slow_answer() returns int language sql as $$ select 42 from pg_sleep(1.5) $$;`);
  });

  it('gives each of many concurrent callers their own role and claims', async () => {
    const callers = [...users.map((user) => ({ user, headers: { ...p.anon, authorization: `Bearer ${user.token}` } })), { user: null, headers: p.anon }];
    const answers = await Promise.all(Array.from({ length: 120 }, async (_, i) => {
      const caller = callers[i % callers.length]!;
      const response = await direct('diary?select=body', caller.headers);
      return { caller, status: response.status, body: (await response.json()) as Array<{ body: string }> };
    }));
    for (const { caller, status, body } of answers) {
      expect(status).toBe(200);
      expect(body).toEqual(caller.user ? [{ body: `by ${caller.user.id}` }] : []);
    }
  });

  it('answers quick requests while a slow statement runs on the same replica', async () => {
    const slowDone = direct('rpc/slow_answer', p.anon).then(async (response) => ({ status: response.status, at: performance.now(), body: await response.json() }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const quick = await Promise.all(Array.from({ length: 30 }, async () => {
      const response = await direct('diary?select=body', p.anon);
      return { status: response.status, at: performance.now() };
    }));
    const slow = await slowDone;
    expect(slow).toMatchObject({ status: 200, body: 42 });
    for (const answer of quick) {
      expect(answer.status).toBe(200);
      expect(answer.at).toBeLessThan(slow.at);
    }
  });
});
