/**
 * Makes sure, when the worker starts, that every tenant database has its own
 * data-API login (`tenantAuthenticatorRole`) and that the `authenticator`
 * login all projects once shared is retired: databases provisioned before
 * their login existed get it here, before their data API needs it.
 */
import type pg from 'pg';
import { authenticatorPasswordPurpose, deriveSecret, tenantAuthenticatorRole } from '@baseplane/contracts';
import { authenticatorRoleSql, retireSharedAuthenticatorSql } from './tenant-sql';

/** Tenant databases are `p_` and a project id without its dashes (`tenantDatabaseName`); which of them have no login yet. */
const TENANT_DATABASES = `select datname, not exists (select from pg_roles r where r.rolname = datname || '_authenticator') as without_login
  from pg_database where datname ~ '^p_[0-9a-f]{32}$' order by datname`;
/** A login another worker made meanwhile, a database dropped meanwhile: nothing left to do for it. */
const SETTLED = new Set(['42710', '23505', '3D000']);
const settled = (error: { code?: string }) => {
  if (!SETTLED.has(error.code ?? '')) throw error;
};

/** Idempotent: run at every start, and beside a provisioning that makes the same login. */
export async function ensureDataApiLogins(admin: pg.Pool, platformSecret: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string; without_login: boolean }>(TENANT_DATABASES);
  // A login that exists is left as it is: another stack sharing this cluster (another PLATFORM_SECRET) may own it.
  for (const { datname: name } of rows.filter((r) => r.without_login)) {
    // The database's name is `p_` and the project id without dashes, which names the same login.
    const role = tenantAuthenticatorRole(name.slice('p_'.length));
    for (const sql of authenticatorRoleSql(role, name, deriveSecret(platformSecret, authenticatorPasswordPurpose(name)))) await admin.query(sql).catch(settled);
  }
  const shared = await admin.query(`select 1 from pg_roles where rolname = 'authenticator'`);
  if ((shared.rowCount ?? 0) > 0) for (const sql of retireSharedAuthenticatorSql(rows.map((r) => r.datname))) await admin.query(sql).catch(settled);
}
