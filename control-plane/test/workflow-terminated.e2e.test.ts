/**
 * A project's workflow that ended without the project being deleted (an
 * operator terminated it in Temporal's UI, say) is started again by the next
 * command, and the new run applies only what was never applied: the change
 * waiting when it ended and the new one, not the history again (a change that
 * failed stays failed; nothing records a second outcome).
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { projectWorkflowId } from '@baseplane/contracts';
import { bearer, call, createProject, projectEventTypes, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  operator = await signUpOperator('Terminated');
  project = await createProject(operator, 'terminated workflow');
  tenant = await connectTenant(project.id);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  temporal = new Client({ connection });
});
afterAll(async () => {
  await Promise.all([tenant?.end(), connection?.close()]);
});

it('starts the workflow again and applies only what was never applied', { timeout: 180_000 }, async () => {
  const h = bearer(operator.token);
  const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: h, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(created.status, created.text).toBe(201);
  await tenant.asOwner(`insert into notes (body) values ('not a number')`);
  const refused = await call('PUT', `/api/projects/${project.id}/tables/notes/columns/body`, { headers: h, body: { type: 'integer', using: 'body::integer' } });
  expect(refused.status, refused.text).toBe(422);
  const history = await projectEventTypes(project.id);

  // A change waits for a lock when the workflow is terminated under it.
  await tenant.client.query('begin');
  await tenant.client.query('lock table public.notes in access share mode');
  let waiting: string;
  try {
    const accepted = await call('POST', `/api/projects/${project.id}/tables/notes/columns`, { headers: { ...h, prefer: 'respond-async' }, body: { name: 'tag', type: 'text' } });
    expect(accepted.status, accepted.text).toBe(202);
    waiting = accepted.body.operation.id;
    await expect.poll(() => projectEventTypes(project.id), { timeout: 30_000 }).toEqual([...history, 'ColumnAdded']);
    await temporal.workflow.getHandle(projectWorkflowId(project.id)).terminate('test: ended by an operator');
  } finally {
    await tenant.client.query('rollback');
  }

  const next = await call('POST', `/api/projects/${project.id}/tables`, { headers: h, body: { name: 'after', columns: [{ name: 'body', type: 'text' }] } });
  expect(next.status, next.text).toBe(201);
  const operation = await call('GET', `/api/projects/${project.id}/operations/${waiting}`, { headers: h });
  expect(operation.body.status).toBe('succeeded');
  const columns = await tenant.client.query(`select attname from pg_attribute where attrelid = 'public.notes'::regclass and attnum > 0 and not attisdropped order by attnum`);
  expect(columns.rows.map((r) => r.attname)).toEqual(['id', 'body', 'tag']);
  // One outcome each for the two changes (the old run's attempt may record its own after the lock goes, in any order
  // with the new command), none for anything before them: the failed type change did not become "applied".
  const after = (await projectEventTypes(project.id)).slice(history.length);
  expect(after[0]).toBe('ColumnAdded');
  expect([...after].sort()).toEqual(['ColumnAdded', 'SchemaChangeApplied', 'SchemaChangeApplied', 'TableCreated']);
  expect(await streamVersion(project.id)).toBe(history.length + 4);
});
