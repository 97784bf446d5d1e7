/**
 * A tenant database that is away for half a minute (a failover, a restart)
 * does not fail the changes that come meanwhile: the workflow's activities
 * retry what PostgreSQL did not refuse for about six minutes, and the change
 * is applied once the database is back. (The database is made to refuse
 * connections, SQLSTATE 55000, as one that is shutting down does.)
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { tenantDatabaseName } from '@baseplane/contracts';
import { bearer, call, createProject, projectEventTypes, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

/** Longer than the 8 attempts the activities used to get (about 23 s). */
const OUTAGE_MS = 30_000;

let operator: Operator;
let project: ProjectAnswer;
let admin: pg.Client;

beforeAll(async () => {
  operator = await signUpOperator('Outage');
  project = await createProject(operator, 'tenant outage');
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
  admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await admin.connect();
});
afterAll(async () => {
  await admin?.query(`alter database "${tenantDatabaseName(project.id)}" allow_connections true`).catch(() => undefined);
  await admin?.end();
});

it('applies a change made while the tenant database was away for longer than the old retries lasted', { timeout: 120_000 }, async () => {
  const database = tenantDatabaseName(project.id);
  // The change is recorded and its ALTER waits for the app's lock when the database goes away under it.
  const locker = await connectTenant(project.id);
  locker.client.on('error', () => undefined); // ended below with the rest of the database's backends
  await locker.client.query('begin');
  await locker.client.query('lock table public.notes in access share mode');
  const accepted = await call('POST', `/api/projects/${project.id}/tables/notes/columns`, { headers: { ...bearer(operator.token), prefer: 'respond-async' }, body: { name: 'tag', type: 'text' } });
  expect(accepted.status, accepted.text).toBe(202);
  const operationId: string = accepted.body.operation.id;
  await expect.poll(async () => (await admin.query(`select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'`, [database])).rows[0].n, { timeout: 30_000 }).toBe(1);
  await admin.query(`alter database "${database}" allow_connections false`);
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [database]);
  await locker.end().catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  const during = await call('GET', `/api/projects/${project.id}/operations/${operationId}`, { headers: bearer(operator.token) });
  expect(during.body.status, JSON.stringify(during.body)).not.toBe('failed');
  await admin.query(`alter database "${database}" allow_connections true`);

  await expect.poll(async () => (await call('GET', `/api/projects/${project.id}/operations/${operationId}`, { headers: bearer(operator.token) })).body.status, { timeout: 30_000, interval: 500 }).toBe('succeeded');
  const tenant: TenantDatabase = await connectTenant(project.id);
  try {
    const { rows } = await tenant.client.query(`select attname from pg_attribute where attrelid = 'public.notes'::regclass and attnum > 0 and not attisdropped order by attnum`);
    expect(rows.map((row) => row.attname)).toEqual(['id', 'body', 'tag']);
  } finally {
    await tenant.end();
  }
  expect((await projectEventTypes(project.id)).filter((type) => type === 'SchemaChangeFailed')).toEqual([]);
});
