/**
 * Tenant schema revision 5: a change the project's history would not hold is
 * refused in the tenant. DDL goes through the SQL console (recorded as
 * SqlDdlRecorded) or the management API (the workflow's apply); a function
 * of the owner's run with SECURITY DEFINER through the data API, or an owner
 * trigger firing under the rows API, ran DDL and bucket changes that no event
 * recorded. Temporary objects are not the project's schema and stay allowed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, createProject, projectEventTypes, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;

async function consoleSql(query: string) {
  const answer = await call('POST', '/api/sql/execute', { headers: bearer(operator.token), body: { projectId: project.id, query } });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}
const rpc = (fn: string) => call('POST', `/rest/v1/rpc/${fn}`, { headers: { apikey: project.serviceKey, 'content-type': 'application/json' }, raw: '{}' });
const exists = async (name: string) => (await tenant.client.query(`select to_regclass($1) is not null as present`, [name])).rows[0].present as boolean;

beforeAll(async () => {
  operator = await signUpOperator('Unrecorded');
  project = await createProject(operator, 'unrecorded ddl');
  tenant = await connectTenant(project.id);
  await consoleSql(`
    create table victim (id int primary key);
    create function make_table() returns void language plpgsql security definer as $$ begin create table public.made_by_rpc (id int); end $$;
    create function drop_victim() returns void language plpgsql security definer as $$ begin drop table public.victim; end $$;
    create function make_bucket() returns void language plpgsql security definer as $$ begin insert into storage.buckets (name) values ('from-rpc'); end $$;
    create function scratch() returns int language plpgsql security definer as $$
      declare n int;
      begin
        create temp table scratch_rows (v int) on commit drop;
        insert into scratch_rows values (1), (2);
        select count(*) into n from scratch_rows;
        return n;
      end $$;
    create table notes (id int primary key);
    create function ddl_on_insert() returns trigger language plpgsql as $$ begin create table public.made_by_trigger (id int); return new; end $$;
    create trigger notes_ddl before insert on notes for each row execute function ddl_on_insert();`);
});
afterAll(async () => {
  await tenant?.end();
});

describe('DDL no event would record', () => {
  it('is refused in a function the data API runs: 403 with SQLSTATE 42501, nothing made or dropped, nothing recorded', async () => {
    const before = await streamVersion(project.id);
    for (const fn of ['make_table', 'drop_victim']) {
      const answer = await rpc(fn);
      expect(answer.status, answer.text).toBe(403);
      expect(answer.body).toMatchObject({ code: '42501', message: expect.stringContaining('schema changes go through the SQL console or the management API') });
    }
    expect(await exists('public.made_by_rpc')).toBe(false);
    expect(await exists('public.victim')).toBe(true);
    expect(await streamVersion(project.id)).toBe(before);
  });

  it('is refused when an owner trigger runs it under the rows API, and the row is not written', async () => {
    const answer = await call('POST', `/api/projects/${project.id}/tables/notes/rows`, { headers: bearer(operator.token), body: { data: { id: 1 } } });
    expect(answer.status, answer.text).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect(answer.text).toContain('42501');
    expect(await exists('public.made_by_trigger')).toBe(false);
    expect((await tenant.client.query('select count(*)::int as n from public.notes')).rows[0].n).toBe(0);
    // Nothing waits in the DDL log for an event that would never come.
    expect((await tenant.client.query('select count(*)::int as n from baseplane_meta.ddl_log')).rows[0].n).toBe(0);
  });

  it('lets a data-API function use a temporary table', async () => {
    const answer = await rpc('scratch');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toBe(2);
  });

  it('is still recorded from the SQL console', async () => {
    await consoleSql('create table via_console (id int primary key)');
    expect(await exists('public.via_console')).toBe(true);
    expect((await projectEventTypes(project.id)).at(-1)).toBe('SqlDdlRecorded');
  });
});

describe('a bucket change from a data-API function', () => {
  it('is refused as the console\'s is: buckets change through the storage API', async () => {
    const answer = await rpc('make_bucket');
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body).toMatchObject({ code: '42501', message: expect.stringContaining('buckets change through the storage API') });
    const buckets = await call('GET', `/api/projects/${project.id}/storage/buckets`, { headers: bearer(operator.token) });
    expect(buckets.body).toEqual([]);
  });
});
