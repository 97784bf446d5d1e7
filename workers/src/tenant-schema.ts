/**
 * What the platform keeps in every tenant database (the `baseplane_meta`,
 * `auth` and `storage` schemas, the API roles' grants on `public`) as
 * numbered revisions. Provisioning runs them all; a database made by an
 * earlier release gets the revisions it lacks when the worker starts, before
 * it takes any workflow task, so the data plane and the workflows can count
 * on the latest.
 *
 * An upgrade runs only the revisions a database lacks, never revision 1 again:
 * revision 1 grants the API roles what Supabase grants them, and an owner may
 * have revoked some of it since. So a later revision adds what it needs and
 * touches nothing an owner may have changed. Its statements must be safe to
 * run twice (`if not exists`, `or replace`): a database provisioned before
 * revisions were numbered counts as revision 1 whatever it holds.
 *
 * Where each database stands is kept twice: in the database itself
 * (`baseplane_meta.schema_revision`, written in the transaction that applied
 * it, the truth) and in the platform database (`tenant_schema_revisions`),
 * so that a worker starting next to many projects connects only to those
 * behind. Platform upgrades are not project commands: they are not events in
 * a project's history, and replaying a history provisions at the latest
 * revision.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { tenantApplyRole, tenantOwnerRole } from '@baseplane/contracts';
import type { PlatformStore } from './platform-store';
import { authSchemaSql, liveCodesUniqueSql } from './tenant-auth-sql';
import { ddlCaptureSql, ddlOutboxSql, installSchemaSql } from './tenant-sql';
import { bucketGuardSql, objectVersionSql, storageSchemaSql } from './tenant-storage-sql';

/** The project's roles a revision's SQL names. */
interface TenantRoles {
  owner: string;
  apply: string;
}

interface Revision {
  revision: number;
  sql: (roles: TenantRoles) => string[];
}

const REVISIONS: readonly Revision[] = [
  { revision: 1, sql: ({ owner }) => [...installSchemaSql(owner), ...authSchemaSql(owner), ...storageSchemaSql(owner)] },
  // The auth housekeeping's sweeps (data-plane/src/auth/housekeeping.ts) find what they delete by these.
  {
    revision: 2,
    sql: () => [
      'create index if not exists rate_limits_window_start on auth.rate_limits (window_start)',
      'create index if not exists one_time_codes_created_at on auth.one_time_codes (created_at)',
      'create index if not exists sessions_refresh_expires_at on auth.sessions (refresh_expires_at)',
    ],
  },
  // The DDL log as an outbox: the SQL console's DDL stays in the tenant until its event is recorded.
  { revision: 3, sql: ({ owner }) => ddlOutboxSql(owner) },
  // Buckets change through commands only: the SQL console's INSERT, UPDATE, DELETE or TRUNCATE of them is refused.
  { revision: 4, sql: ({ apply }) => bucketGuardSql(apply) },
  // DDL the history would not have (a data-API function's, an owner trigger's under the rows API) is refused, and so
  // is a bucket change from any session but the workflow's (a SECURITY DEFINER function of the owner's got around 4).
  { revision: 5, sql: ({ owner, apply }) => [...ddlCaptureSql(owner), ...bucketGuardSql(apply)] },
  // Each stored version of an object has a key of its own, which the row names: nothing in the store is ever replaced.
  { revision: 6, sql: () => objectVersionSql() },
  // Live one-time codes are unique across purposes: a code given alone may be looked up among several.
  { revision: 7, sql: () => liveCodesUniqueSql() },
  // A table the SQL console creates in any schema of the owner's gets RLS, as one in public does: the data API may expose it.
  { revision: 8, sql: ({ owner }) => ddlCaptureSql(owner) },
];

export const TENANT_SCHEMA_REVISION = REVISIONS[REVISIONS.length - 1]!.revision;

/** Serialises whatever installs or upgrades one tenant database (provisioning attempts, starting workers). */
export const TENANT_SCHEMA_LOCK = 'select pg_advisory_xact_lock(7011002)';

/**
 * Brings the database of `client`'s transaction from where it stands to the
 * latest revision; the caller holds TENANT_SCHEMA_LOCK. A database without
 * `baseplane_meta` is new and gets every revision. Answers the revision it
 * was at (0: new).
 */
export async function applyTenantRevisions(client: pg.ClientBase, projectId: string): Promise<number> {
  const { rows } = await client.query<{ meta: boolean; marked: boolean }>(
    `select to_regclass('baseplane_meta.applied') is not null as meta, to_regclass('baseplane_meta.schema_revision') is not null as marked`,
  );
  let from = 0;
  if (rows[0]!.marked) from = (await client.query<{ revision: number }>('select revision from baseplane_meta.schema_revision')).rows[0]?.revision ?? 1;
  else if (rows[0]!.meta) from = 1;
  // What an upgrade creates is the platform's, not DDL for the history's SQL capture.
  await client.query(`set local baseplane.source = 'workflow'`);
  const roles = { owner: tenantOwnerRole(projectId), apply: tenantApplyRole(projectId) };
  for (const { revision, sql } of REVISIONS) {
    if (revision <= from) continue;
    for (const statement of sql(roles)) await client.query(statement);
  }
  await client.query('create table if not exists baseplane_meta.schema_revision (id boolean primary key default true check (id), revision int not null)');
  await client.query(
    'insert into baseplane_meta.schema_revision (revision) values ($1) on conflict (id) do update set revision = greatest(baseplane_meta.schema_revision.revision, excluded.revision)',
    [TENANT_SCHEMA_REVISION],
  );
  return from;
}

export interface TenantUpgradeDependencies {
  platform: PlatformStore;
  /** Runs `work` in one transaction on a project's database as the superuser. */
  transaction: <T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;
  log: Logger;
}

/**
 * At worker start: every active project whose database the platform does not
 * know to be at the latest revision is brought there. A database that cannot
 * be upgraded now (unreachable, an error) is logged and tried again at the
 * next start; it does not hold the worker back. Answers how many it upgraded.
 */
export async function upgradeTenantSchemas(deps: TenantUpgradeDependencies): Promise<number> {
  let upgraded = 0;
  for (const id of await deps.platform.projectsBehind(TENANT_SCHEMA_REVISION)) {
    try {
      const from = await deps.transaction(id, async (client) => {
        await client.query(TENANT_SCHEMA_LOCK);
        return applyTenantRevisions(client, id);
      });
      await deps.platform.recordTenantRevision(id, TENANT_SCHEMA_REVISION);
      if (from < TENANT_SCHEMA_REVISION) {
        upgraded++;
        deps.log.info({ projectId: id, from, to: TENANT_SCHEMA_REVISION }, 'tenant schema upgraded');
      }
    } catch (err) {
      deps.log.warn({ err, projectId: id }, 'tenant schema upgrade failed; tried again at the next start');
    }
  }
  return upgraded;
}
