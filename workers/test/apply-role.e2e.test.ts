/**
 * The rights of changes the project's workflow applies. A schema or bucket
 * change runs the owner's own code inside the workflow's transaction (a
 * trigger on the owner's `storage.buckets`, a function called from a column
 * change's `using`). That code may `reset role`: it must land on the
 * project's apply role, which holds none of the owner's rights by itself and
 * none of anyone else's, never on the superuser the workflow once logged in as.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { applyPasswordPurpose, deriveSecret, tenantApplyRole, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole, tenantOwnerUrl } from '@baseplane/contracts';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;

const api = () => `/api/projects/${project.id}`;
const console_ = (query: string) => call('POST', '/api/sql/execute', { headers: bearer(operator.token), body: { projectId: project.id, query } });

/**
 * A plpgsql body that resets the role, notes who it then is, whether that is
 * a superuser, and whether it can become one or read what only superusers
 * read; then takes the owner's role back to write that down.
 */
const escalate = (at: string) => `
  declare who text; su boolean; set_postgres text; read_authid text;
  begin
    begin reset role; exception when others then null; end;
    select current_user, r.rolsuper into who, su from pg_roles r where r.rolname = current_user;
    begin execute 'set local role postgres'; set_postgres := 'allowed'; exception when others then set_postgres := sqlstate; end;
    begin perform count(*) from pg_authid; read_authid := 'allowed'; exception when others then read_authid := sqlstate; end;
    execute format('set local role %I', '${tenantOwnerRole(project.id)}');
    insert into public.evidence values ('${at}', who, su, set_postgres, read_authid);`;

beforeAll(async () => {
  operator = await signUpOperator('Apply role');
  project = await createProject(operator, 'apply role app');
  tenant = await connectTenant(project.id);
  const setup = await console_(`
    create table public.evidence (at text, who text, su boolean, set_postgres text, read_authid text);
    create function public.on_bucket() returns trigger language plpgsql as $$ ${escalate('bucket trigger')} return new; end $$;
    create trigger on_bucket before insert on storage.buckets for each row execute function public.on_bucket();
    create function public.in_using(value text) returns int language plpgsql as $$ ${escalate('using')} return length(value); end $$;`);
  expect(setup.status, setup.text).toBe(200);
});
afterAll(async () => {
  await tenant?.end();
});

describe('owner code run by a workflow-applied change', () => {
  it('a trigger on storage.buckets that resets its role is the apply role, no superuser, when a bucket is created', async () => {
    const created = await call('POST', `${api()}/storage/buckets`, { headers: bearer(operator.token), body: { name: 'trap' } });
    expect(created.status, created.text).toBe(201);
    const { rows } = await tenant.client.query(`select who, su, set_postgres, read_authid from public.evidence where at = 'bucket trigger'`);
    // 42501: permission denied (to set role postgres, to read pg_authid).
    expect(rows).toEqual([{ who: tenantApplyRole(project.id), su: false, set_postgres: '42501', read_authid: '42501' }]);
  });

  it('a function in a column change\'s "using" that resets its role is the apply role, and the change applies', async () => {
    const table = await call('POST', `${api()}/tables`, { headers: bearer(operator.token), body: { name: 'victim', columns: [{ name: 'c', type: 'text' }] } });
    expect(table.status, table.text).toBe(201);
    await tenant.asOwner(`insert into victim (c) values ('four')`);
    const changed = await call('PUT', `${api()}/tables/victim/columns/c`, { headers: bearer(operator.token), body: { type: 'int4', using: 'public.in_using(c)' } });
    expect(changed.status, changed.text).toBe(200);
    const { rows } = await tenant.client.query(`select who, su, set_postgres, read_authid from public.evidence where at = 'using'`);
    expect(rows).toEqual([{ who: tenantApplyRole(project.id), su: false, set_postgres: '42501', read_authid: '42501' }]);
    expect((await tenant.client.query('select c from victim')).rows).toEqual([{ c: 4 }]);
  });

  it('the apply role alone may read and move the applied-version marker, and nothing of the owner\'s', async () => {
    const role = tenantApplyRole(project.id);
    const url = tenantOwnerUrl(inject('tenantDatabaseUrl'), role, deriveSecret(inject('platformSecret'), applyPasswordPurpose(project.id)), tenantDatabaseName(project.id));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const attempt = (sql: string) => client.query(sql).then(() => 'allowed', (error: { code?: string }) => error.code);
      expect(await attempt('select version from baseplane_meta.applied')).toBe('allowed');
      expect(await attempt('select count(*) from public.victim')).toBe('42501');
      expect(await attempt('select count(*) from storage.buckets')).toBe('42501');
      expect(await attempt('create table public.mine (n int)')).toBe('42501');
      expect(await attempt('select count(*) from baseplane_meta.ddl_log')).toBe('42501');
      // It may take the owner's role, as the workflow does for a change, and no other.
      expect(await attempt(`set role "${tenantOwnerRole(project.id)}"`)).toBe('allowed');
      expect(await attempt('reset role')).toBe('allowed');
      expect(await attempt(`set role "${tenantAuthenticatorRole(project.id)}"`)).toBe('42501');
    } finally {
      await client.end();
    }
  });

  it('goes with its project: a deleted project leaves no apply role (nor owner, nor data-API login) behind', async () => {
    const doomed = await createProject(operator, 'apply role doomed');
    expect((await call('POST', `/api/projects/${doomed.id}/storage/buckets`, { headers: bearer(operator.token), body: { name: 'bin' } })).status).toBe(201);
    const roleCount = async () => (await tenant.client.query('select count(*)::int as n from pg_roles where rolname = any($1)', [[tenantApplyRole(doomed.id), tenantOwnerRole(doomed.id), tenantAuthenticatorRole(doomed.id)]])).rows[0].n;
    expect(await roleCount()).toBe(3);
    expect((await call('DELETE', `/api/projects/${doomed.id}`, { headers: bearer(operator.token) })).status).toBe(200);
    expect(await roleCount()).toBe(0);
  });
});
