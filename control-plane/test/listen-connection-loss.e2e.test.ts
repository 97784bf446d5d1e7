/**
 * The control plane keeps two LISTEN connections to the platform database:
 * the operation waiter's and the subscription's (which also holds its
 * leadership lock), and the subscription holds a transaction open while it
 * hands an event to Temporal. PostgreSQL restarting, or an administrator
 * ending them, ends them all; the process must carry on and listen again,
 * not fall over with the requests it is answering, nor pump the
 * subscription unled.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bearer, call, createProject, projectEventTypes, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { servicePid } from '../../deploy/local/src/services';
import { processesMentioning } from '../../deploy/test/processes';

let db: pg.Client;
let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;

const controlPlanePid = () => servicePid(inject('servicePorts').controlPlane);

/** Backends listening on `channel`. */
async function listeners(channel: string): Promise<number[]> {
  const { rows } = await db.query<{ pid: number }>(`select pid from pg_stat_activity where query = $1 and state = 'idle'`, [`listen ${channel}`]);
  return rows.map((r) => r.pid);
}

/** The backend holding the control plane's subscription leadership (a session advisory lock on hashtext of its name). */
async function subscriptionLeader(): Promise<number | null> {
  const { rows } = await db.query<{ pid: number }>(
    `select pid from pg_locks where locktype = 'advisory' and granted and objid::bigint = (hashtext('subscription:control-plane')::bigint & 4294967295)`,
  );
  return rows[0]?.pid ?? null;
}

beforeAll(async () => {
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  operator = await signUpOperator('Listen');
  project = await createProject(operator, 'listen loss');
  tenant = await connectTenant(project.id);
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'held', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
});
afterAll(async () => {
  await Promise.all([db?.end(), tenant?.end()]);
});

it('answers a command waiting for its operation when the waiter loses its LISTEN connection', { timeout: 120_000 }, async () => {
  const pid = await controlPlanePid();
  const [waiter] = await listeners('baseplane_operations');
  expect(waiter, 'the operation waiter listens').toBeDefined();

  // The table is held, so the command is recorded and then waits for its operation.
  await tenant.client.query('begin');
  await tenant.client.query('lock table public.held in access share mode');
  const before = await streamVersion(project.id);
  const answer = call('POST', `/api/projects/${project.id}/tables/held/columns`, { headers: bearer(operator.token), body: { name: 'tag', type: 'text' } });
  try {
    await expect.poll(() => projectEventTypes(project.id, before), { timeout: 30_000, interval: 50 }).toEqual(['ColumnAdded']);
    await db.query('select pg_terminate_backend($1)', [waiter]);
    // The waiter listens again on a connection of its own.
    await expect.poll(async () => (await listeners('baseplane_operations')).filter((p) => p !== waiter).length, { timeout: 30_000, interval: 100 }).toBe(1);
  } finally {
    await tenant.client.query('rollback');
  }
  const answered = await answer;
  expect(answered.status, answered.text).toBe(201);
  expect(await controlPlanePid(), 'the control plane did not restart').toBe(pid);
});

it('leads its subscription again when the subscription loses its LISTEN connection', { timeout: 120_000 }, async () => {
  const pid = await controlPlanePid();
  const leader = await subscriptionLeader();
  expect(leader, 'the subscription has a leader').not.toBeNull();
  await db.query('select pg_terminate_backend($1)', [leader]);

  // The lock went with the session: the subscription takes it again on a new connection.
  await expect.poll(async () => [null, leader].includes(await subscriptionLeader()), { timeout: 30_000, interval: 100 }).toBe(false);
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'after_loss', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
  expect(await controlPlanePid(), 'the control plane did not restart').toBe(pid);
});

it('carries on when the subscription loses its transaction while it hands an event to Temporal', { timeout: 120_000 }, async () => {
  const pid = await controlPlanePid();
  const temporalDb = path.join(inject('dataDir'), 'temporal', 'temporal.db');
  const [temporal] = processesMentioning(temporalDb).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('start-dev'));
  expect(temporal, 'the Temporal dev server runs').toBeDefined();
  const before = await streamVersion(project.id);
  // Temporal not answering holds the subscription's transaction open around the signal.
  process.kill(temporal!, 'SIGSTOP');
  let answer: ReturnType<typeof call> | undefined;
  try {
    answer = call('POST', `/api/projects/${project.id}/tables`, { headers: { ...bearer(operator.token), prefer: 'respond-async' }, body: { name: 'while_held', columns: [{ name: 'body', type: 'text' }] } });
    const platform = new URL(inject('databaseUrl')).pathname.slice(1);
    // The subscription's transaction, idle after projecting the command's operation (its last statement), and no other.
    const held = async () =>
      (await db.query<{ pid: number }>(
        `select pid from pg_stat_activity where datname = $1 and state = 'idle in transaction' and query like '%pg_notify(''baseplane_operations''%'`,
        [platform],
      )).rows.map((r) => r.pid);
    await expect.poll(async () => (await held()).length, { timeout: 30_000, interval: 50 }).toBeGreaterThan(0);
    for (const backend of await held()) await db.query('select pg_terminate_backend($1)', [backend]);
    await new Promise((resolve) => setTimeout(resolve, 500));
  } finally {
    process.kill(temporal!, 'SIGCONT');
  }
  // Answered (202, or 201 when the table was made by then), not cut off.
  expect([201, 202]).toContain((await answer!).status);
  await expect.poll(async () => (await tenant.client.query(`select to_regclass('public.while_held') is not null as made`)).rows[0].made, { timeout: 60_000, interval: 250 }).toBe(true);
  await expect.poll(() => projectEventTypes(project.id, before), { timeout: 30_000 }).toEqual(['TableCreated', 'SchemaChangeApplied']);
  expect(await controlPlanePid(), 'the control plane did not restart').toBe(pid);
});
