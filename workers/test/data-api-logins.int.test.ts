/**
 * The worker's start-up pass over the tenant cluster (data-api-logins.ts): a
 * database provisioned when every project's data API logged in as the one
 * shared `authenticator` gets a data-API login of its own, and the shared
 * login is left with no database, no API role and no login.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { authenticatorPasswordPurpose, deriveSecret, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerUrl } from '@baseplane/contracts';
import { ensureDataApiLogins } from '../src/data-api-logins';
import { apiRolesSql } from '../src/tenant-sql';

const projectId = randomUUID();
const database = tenantDatabaseName(projectId);
let admin: pg.Pool;

beforeAll(async () => {
  admin = new pg.Pool({ connectionString: inject('tenantDatabaseUrl'), max: 2 });
  for (const sql of apiRolesSql()) await admin.query(sql);
  // The cluster as it was: one shared login with CONNECT on the project's database.
  await admin.query(`do $$ begin
      if not exists (select from pg_roles where rolname = 'authenticator') then create role authenticator login noinherit password 'old'; end if;
    end $$`);
  await admin.query('grant anon, authenticated, service_role to authenticator');
  await admin.query(`create database "${database}"`);
  await admin.query(`revoke all on database "${database}" from public`);
  await admin.query(`grant connect, temporary on database "${database}" to authenticator`);
});

afterAll(async () => {
  await admin.query(`drop database if exists "${database}" with (force)`);
  await admin.query(`drop role if exists "${tenantAuthenticatorRole(projectId)}"`);
  await admin.query('drop role if exists authenticator');
  await admin.end();
});

describe('at worker start', () => {
  it('gives an older tenant database its own data-API login, retires the shared one, and leaves existing logins alone', async () => {
    await ensureDataApiLogins(admin, inject('platformSecret'));
    // Idempotent, and a login that exists is left alone: a stack with another secret on this cluster changes nothing.
    await ensureDataApiLogins(admin, 'another stack’s platform secret');
    const role = tenantAuthenticatorRole(projectId);
    const { rows } = await admin.query(
      `select has_database_privilege($1, $2, 'connect') as own_connects,
              pg_has_role($1, 'service_role', 'set') as own_takes_service,
              has_database_privilege('authenticator', $2, 'connect') as shared_connects,
              pg_has_role('authenticator', 'service_role', 'set') as shared_takes_service,
              (select rolcanlogin from pg_roles where rolname = 'authenticator') as shared_logs_in`,
      [role, database],
    );
    expect(rows[0]).toEqual({ own_connects: true, own_takes_service: true, shared_connects: false, shared_takes_service: false, shared_logs_in: false });
    // The data plane logs in with the derived password and takes the API roles.
    const client = new pg.Client({ connectionString: tenantOwnerUrl(inject('tenantDatabaseUrl'), role, deriveSecret(inject('platformSecret'), authenticatorPasswordPurpose(database)), database) });
    await client.connect();
    try {
      await client.query(`select set_config('role', 'anon', false)`);
      expect((await client.query('select current_user as who')).rows[0].who).toBe('anon');
    } finally {
      await client.end();
    }
  });
});
