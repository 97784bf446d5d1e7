/**
 * An attempt Temporal gives up (its start-to-close timeout passed, or its
 * workflow ended) stops its statement: it must not go on waiting for the
 * app's lock beside its retry and commit after the workflow has moved on.
 * Ending the workflow in Temporal is the quick way to make Temporal give an
 * attempt up (its 5-minute timeout is the slow one; both reach the activity
 * as a cancellation in a heartbeat's answer).
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { projectWorkflowId } from '@baseplane/contracts';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
let connection: Connection;

/** Backends of the project's database running an ALTER TABLE that waits for a lock. */
async function waitingAlters(): Promise<number> {
  const { rows } = await tenant.client.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where datname = current_database() and wait_event_type = 'Lock' and query ilike 'alter table%'`,
  );
  return rows[0]!.n;
}

beforeAll(async () => {
  operator = await signUpOperator('Given up');
  project = await createProject(operator, 'given up attempt');
  tenant = await connectTenant(project.id);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
});
afterAll(async () => {
  await Promise.all([tenant?.end(), connection?.close()]);
});

it('cancels the statement of an attempt Temporal gave up', { timeout: 90_000 }, async () => {
  const locker = await connectTenant(project.id);
  try {
    // The app holds the table: the change's ALTER TABLE waits for it.
    await locker.client.query('begin');
    await locker.client.query('lock table public.notes in access share mode');
    const accepted = await call('POST', `/api/projects/${project.id}/tables/notes/columns`, { headers: { ...bearer(operator.token), prefer: 'respond-async' }, body: { name: 'tag', type: 'text' } });
    expect(accepted.status, accepted.text).toBe(202);
    await expect.poll(waitingAlters, { timeout: 30_000 }).toBe(1);

    await new Client({ connection }).workflow.getHandle(projectWorkflowId(project.id)).terminate('test: the attempt is given up');
    // The next heartbeat hears it (they go out about every 2.4 s): the ALTER is cancelled, while the app still holds its lock.
    await expect.poll(waitingAlters, { timeout: 20_000, interval: 250 }).toBe(0);
  } finally {
    await locker.client.query('rollback').catch(() => undefined);
    await locker.end();
  }
  // Nothing of the change is in the table: the attempt rolled back rather than committing once the lock went.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const { rows } = await tenant.client.query(`select attname from pg_attribute where attrelid = 'public.notes'::regclass and attnum > 0 and not attisdropped order by attnum`);
  expect(rows.map((row) => row.attname)).toEqual(['id', 'body']);
});
