/**
 * A change is applied in the tenant (committed with its applied-version
 * marker) before its success is recorded in the platform database. When that
 * recording fails for good, the workflow comes to record a failure: the
 * failure's recorder finds the marker past the change and records the
 * success instead, so the history says what the tenant holds. The platform
 * database refuses the success once, through a trigger on its events table
 * for this project alone.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bearer, call, createProject, projectEventTypes, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let platform: pg.Client;
let tenant: TenantDatabase;

beforeAll(async () => {
  operator = await signUpOperator('Outcomes');
  project = await createProject(operator, 'outcome after commit');
  tenant = await connectTenant(project.id);
  platform = new pg.Client({ connectionString: inject('databaseUrl') });
  await platform.connect();
  // nextval is not undone with the refused insert: only the first SchemaChangeApplied of this project is refused.
  await platform.query(`create sequence test_refuse_once;
    create function test_refuse_applied_once() returns trigger language plpgsql as $$
    begin
      if new.type = 'SchemaChangeApplied' and new.data->>'projectId' = '${project.id}' and nextval('test_refuse_once') = 1 then
        raise exception 'the test refuses this success once';
      end if;
      return new;
    end $$;
    create trigger test_refuse_applied_once before insert on events for each row execute function test_refuse_applied_once();`);
});
afterAll(async () => {
  await platform?.query('drop trigger if exists test_refuse_applied_once on events; drop function if exists test_refuse_applied_once(); drop sequence if exists test_refuse_once');
  await platform?.end();
  await tenant?.end();
});

it('records the success of a change its tenant committed, not a failure, when recording it failed first', async () => {
  const answer = await call('POST', `/api/projects/${project.id}/tables`, {
    headers: bearer(operator.token),
    body: { name: 'kept', columns: [{ name: 'title', type: 'text' }] },
  });
  expect(answer.status, answer.text).toBe(201);
  expect((await platform.query('select last_value, is_called from test_refuse_once')).rows[0]).toMatchObject({ is_called: true });
  const types = await projectEventTypes(project.id);
  expect(types.slice(-2)).toEqual(['TableCreated', 'SchemaChangeApplied']);
  expect(types).not.toContain('SchemaChangeFailed');
  expect((await tenant.client.query(`select to_regclass('public.kept') is not null as present`)).rows[0].present).toBe(true);
});
