/**
 * The SQL console's DDL outbox across a control-plane stop: a batch taken in
 * a tenant's log and committed, whose event the stopped process never
 * recorded, is recorded by the next control plane as it starts, with no
 * console call for that project.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { servicePid } from '../../deploy/local/src/services';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;

const controlPlanePid = () => servicePid(inject('servicePorts').controlPlane);

/** Backends logged in as some project's owner role: the control plane's (the workers and the data plane log in otherwise). */
const ownerBackends = async () =>
  (await tenant.client.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where usename like 'p\\_%\\_owner'")).rows[0]!.n;

beforeAll(async () => {
  operator = await signUpOperator('Outbox');
  // Projects beside it, whose outboxes the starting control plane reads too.
  [project] = await Promise.all([createProject(operator, 'ddl outbox'), createProject(operator, 'ddl outbox 2'), createProject(operator, 'ddl outbox 3')]);
  tenant = await connectTenant(project.id);
});
afterAll(async () => {
  await tenant?.end();
});

it('records, as the control plane starts, a DDL batch the stopped one left in a tenant\'s log', async () => {
  // What a console call leaves when its process dies between the tenant's commit and the event: the DDL applied,
  // its rows taken into a batch.
  const batch = randomUUID();
  const actor = `operator:${operator.accountId}`;
  await tenant.asOwner('create table left_behind (id int)');
  await tenant.client.query(
    `insert into baseplane_meta.ddl_log (command_tag, object_type, object_identity, statement, batch, actor)
     values ('CREATE TABLE', 'table', 'public.left_behind', 'create table left_behind (id int)', $1, $2)`,
    [batch, actor],
  );
  const recorded = async () => {
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: bearer(operator.token) });
    return (events.body.events as Array<{ type: string; metadata: { correlationId: string } }>).filter((e) => e.type === 'SqlDdlRecorded' && e.metadata.correlationId === batch);
  };
  expect(await recorded()).toEqual([]);

  const pid = await controlPlanePid();
  process.kill(pid, 'SIGKILL');
  await expect.poll(() => controlPlanePid().catch(() => pid), { timeout: 60_000, interval: 250 }).not.toBe(pid);

  await expect.poll(async () => (await recorded()).length, { timeout: 20_000, interval: 250 }).toBe(1);
  expect((await recorded())[0]).toMatchObject({
    data: { projectId: project.id, statement: 'create table left_behind (id int)', commands: [{ commandTag: 'CREATE TABLE', objectType: 'table', objectIdentity: 'public.left_behind' }] },
    metadata: { actor, correlationId: batch },
  });
  expect((await tenant.client.query('select count(*)::int as n from baseplane_meta.ddl_log')).rows[0].n).toBe(0);
  // Each project was read over a connection closed after it: none stays idle behind the sweep.
  await expect.poll(ownerBackends, { timeout: 5_000 }).toBe(0);
}, 120_000);
