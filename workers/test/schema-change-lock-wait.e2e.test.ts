/**
 * A schema change that has to wait for a lock the app holds (a long
 * transaction reading the table) is still one change: while it waits, the
 * attempt in flight stays the only one, so the history says what happened
 * to the table, once, whenever the lock is let go.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, call, createProject, projectEventTypes, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;

/** Several heartbeat timeouts (3 s): an attempt that did not heartbeat would be given up and tried again meanwhile. */
const HOLD_MS = 15_000;

/** The backends of the project's database waiting for a lock, as `pid@query_start` (a new attempt is a new statement). */
async function waiters(observer: TenantDatabase): Promise<string[]> {
  const { rows } = await observer.client.query<{ who: string }>(
    `select pid || '@' || query_start as who from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' order by 1`,
  );
  return rows.map((row) => row.who);
}

beforeAll(async () => {
  operator = await signUpOperator('Lock wait');
  project = await createProject(operator, 'lock wait');
  tenant = await connectTenant(project.id);
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
});
afterAll(async () => {
  await tenant?.end();
});

it('adds a column once when it waited for a lock longer than a heartbeat timeout', { timeout: 240_000 }, async () => {
  // A long transaction of the app's holds the table: ALTER TABLE waits for it.
  await tenant.client.query('begin');
  await tenant.client.query('lock table public.notes in access share mode');
  const before = await streamVersion(project.id);
  const accepted = await call('POST', `/api/projects/${project.id}/tables/notes/columns`, { headers: { ...bearer(operator.token), prefer: 'respond-async' }, body: { name: 'tag', type: 'text' } });
  expect(accepted.status, accepted.text).toBe(202);
  const operationId: string = accepted.body.operation.id;
  const operation = async () => (await call('GET', `/api/projects/${project.id}/operations/${operationId}`, { headers: bearer(operator.token) })).body;

  // Hold the lock for a while, or until the command ends (it must not, while it cannot be applied). All along, the
  // one attempt's ALTER is the only statement waiting: no second attempt queues behind it, none is cancelled and redone.
  const observer = await connectTenant(project.id);
  let first: string[] = [];
  let seenWhileHeld: string[] = [];
  let statusWhileHeld = 'running';
  try {
    await expect.poll(async () => (first = await waiters(observer)), { timeout: 30_000 }).toHaveLength(1);
    const until = Date.now() + HOLD_MS;
    while (Date.now() < until && statusWhileHeld === 'running') {
      await new Promise((resolve) => setTimeout(resolve, 500));
      statusWhileHeld = (await operation()).status;
      seenWhileHeld = [...new Set([...seenWhileHeld, ...(await waiters(observer))])];
    }
  } finally {
    await observer.end();
  }
  await tenant.client.query('rollback');
  expect(seenWhileHeld, 'one attempt waited all along').toEqual(first);

  await expect.poll(async () => (await operation()).status, { timeout: 60_000, interval: 250 }).not.toBe('running');
  const columns = await tenant.client.query(`select 1 from information_schema.columns where table_schema = 'public' and table_name = 'notes' and column_name = 'tag'`);
  expect(columns.rowCount).toBe(1);
  // Every attempt that waited has ended: none records anything more.
  await expect.poll(async () => (await tenant.client.query(`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0].n, { timeout: 30_000 }).toBe(0);
  expect(await projectEventTypes(project.id, before)).toEqual(['ColumnAdded', 'SchemaChangeApplied']);
  expect(statusWhileHeld, 'the change was still waiting for the lock').toBe('running');
  expect((await operation()).status).toBe('succeeded');
});
