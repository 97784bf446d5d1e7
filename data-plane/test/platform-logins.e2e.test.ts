/**
 * A project's owner cannot lock the platform out of their project.
 * PostgreSQL lets any role change its own password, and owner code reaches
 * the project's platform logins: the SQL console is the owner, and an invoker
 * function called through the data API may `reset role` to the data-API
 * login, and a trigger run by a workflow's change to the apply role. Each
 * service then sets such a login's password back to the one it derives from
 * PLATFORM_SECRET when the login is refused (28P01), and tries again. Every
 * backend of the role is ended first, so the next request has to log in anew.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { HEAL_INTERVAL_MS, applyPasswordPurpose, authenticatorPasswordPurpose, deriveSecret, ownerPasswordPurpose, tenantApplyRole, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole, tenantOwnerUrl } from '@baseplane/contracts';
import { bearer, call } from '../../deploy/test/http';
import { restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let cluster: pg.Client;

beforeAll(async () => {
  cluster = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await cluster.connect();
});
afterAll(async () => {
  await cluster.end();
});

/** Ends every connection logged in as `role`: pools then open new ones, which log in with the derived password. */
async function endBackends(role: string): Promise<void> {
  await cluster.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [role]);
  // Pools drop their idle clients when the termination reaches them.
  await new Promise((resolve) => setTimeout(resolve, 300));
}

/** Whether `role` logs in to the project's database with `password`: 'ok' or the SQLSTATE refusing it. */
async function login(projectId: string, role: string, password: string): Promise<string> {
  const client = new pg.Client({ connectionString: tenantOwnerUrl(inject('tenantDatabaseUrl'), role, password, tenantDatabaseName(projectId)) });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('the owner changes the owner login’s password in the SQL console', () => {
  let p: RestProject;

  beforeAll(async () => {
    p = await restProject('locked owner');
    const bucket = await call('POST', `/api/projects/${p.project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'docs' } });
    expect(bucket.status, bucket.text).toBe(201);
  });

  it('the console, end-user sign-up and storage still answer, and the login has its derived password again', async () => {
    const owner = tenantOwnerRole(p.project.id);
    const password = deriveSecret(inject('platformSecret'), ownerPasswordPurpose(p.project.id));
    await sql(p, `alter role current_user password 'x'`);
    expect(await login(p.project.id, owner, password)).toBe('28P01');
    await endBackends(owner);

    const console_ = await call('POST', '/api/sql/execute', { headers: bearer(p.operator.token), body: { projectId: p.project.id, query: 'select current_user as who' } });
    expect(console_.status, console_.text).toBe(200);
    expect(JSON.stringify(console_.body)).toContain(owner);
    expect(await login(p.project.id, owner, password)).toBe('ok');

    // Again, with the data plane's owner connections ended too: auth logs in as the owner.
    await sql(p, `alter role current_user password 'y'`);
    await endBackends(owner);
    await signUpUser(p);
    expect(await login(p.project.id, owner, password)).toBe('ok');

    const buckets = await call('GET', `/api/projects/${p.project.id}/storage/buckets`, { headers: p.service });
    expect(buckets.status, buckets.text).toBe(200);
    const objects = await call('GET', `/api/projects/${p.project.id}/storage/buckets/docs/objects?prefix=`, { headers: p.service });
    expect(objects.status, objects.text).toBe(200);
  });
});

describe('an rpc function resets its role to the data-API login and changes its password', () => {
  let p: RestProject;

  beforeAll(async () => {
    p = await restProject('locked data api');
    await sql(p, `
      create function lock_out() returns text language plpgsql as $$
      begin
        reset role;
        alter role current_user password 'x';
        return current_user;
      end $$;
    `);
  });

  it('PostgreSQL lets it, and the data API and storage still answer after', async () => {
    const role = tenantAuthenticatorRole(p.project.id);
    const password = deriveSecret(inject('platformSecret'), authenticatorPasswordPurpose(tenantDatabaseName(p.project.id)));
    const answer = await call('POST', '/rest/v1/rpc/lock_out', { headers: p.service, body: {} });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toBe(role);
    expect(await login(p.project.id, role, password)).toBe('28P01');
    await endBackends(role);

    const again = await call('GET', '/rest/v1/', { headers: p.anon });
    expect(again.status, again.text).toBe(200);
    expect(await login(p.project.id, role, password)).toBe('ok');

    // Storage logs in as the same login; a replica heals a login at most once per interval.
    await new Promise((resolve) => setTimeout(resolve, HEAL_INTERVAL_MS));
    await call('POST', '/rest/v1/rpc/lock_out', { headers: p.service, body: {} });
    await endBackends(role);
    const bucket = await call('POST', `/api/projects/${p.project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'docs' } });
    expect(bucket.status, bucket.text).toBe(201);
    const objects = await call('GET', `/api/projects/${p.project.id}/storage/buckets/docs/objects?prefix=`, { headers: p.service });
    expect(objects.status, objects.text).toBe(200);
  });
});

// The worker heals its apply role itself: a change refused at login (28xxx) makes the activity's retry set the
// role and its password again (activities.ts, ensureApplyRole). This passed before PlatformLogins too; it stays to keep it so.
describe('a trigger run by a workflow-applied change resets its role to the apply role and changes its password', () => {
  let p: RestProject;

  beforeAll(async () => {
    p = await restProject('locked apply');
    await sql(p, `
      create function public.lock_out_apply() returns trigger language plpgsql as $$
      begin
        reset role;
        alter role current_user password 'x';
        execute format('set local role %I', '${tenantOwnerRole(p.project.id)}');
        return new;
      end $$;
      create trigger lock_out_apply before insert on storage.buckets for each row execute function public.lock_out_apply();
    `);
  });

  it('PostgreSQL lets it, and the next change still applies', async () => {
    const role = tenantApplyRole(p.project.id);
    const password = deriveSecret(inject('platformSecret'), applyPasswordPurpose(p.project.id));
    const first = await call('POST', `/api/projects/${p.project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'one' } });
    expect(first.status, first.text).toBe(201);
    expect(await login(p.project.id, role, password)).toBe('28P01');
    await endBackends(role);

    const second = await call('POST', `/api/projects/${p.project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'two' } });
    expect(second.status, second.text).toBe(201);
  });
});
