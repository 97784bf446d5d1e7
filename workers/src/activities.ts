/**
 * Activities: the side effects of applying project events to the tenant
 * cluster. Each checks whether its effect already exists before acting, so a
 * retry after a crash is a no-op, and logs to the ledger what it performed.
 */
import { Context, heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import pg from 'pg';
import {
  APPLIED_BY_WORKFLOW,
  applyPasswordPurpose,
  authenticatorPasswordPurpose,
  deriveSecret,
  ownerPasswordPurpose,
  tenantApplyRole,
  tenantAuthenticatorRole,
  tenantDatabaseName,
  tenantOwnerRole,
  type BucketEvent,
  type ProjectEvent,
  type SchemaEvent,
} from '@baseplane/contracts';
import { bucketPrefix, projectPrefix, type ObjectStore } from '@baseplane/contracts/object-store';
import type { PlatformStore } from './platform-store';
import type { TenantPools } from './tenant-pools';
import { schemaChangeSql } from './schema-ddl';
import { TENANT_SCHEMA_LOCK, TENANT_SCHEMA_REVISION, applyTenantRevisions } from './tenant-schema';
import { applyBucketRows, bucketOf } from './storage-bucket-apply';
import { apiRolesSql, applyRoleGrantsSql, applyRoleSql, authenticatorRoleSql, createDatabaseSql, createOwnerRoleSql, databaseAccessSql, disableRoleSql, dropDatabaseSql, dropRoleSql } from './tenant-sql';

export interface ActivityDependencies {
  platform: PlatformStore;
  /** Superuser pools on the tenant databases: provisioning, and what no owner code can reach. */
  tenants: TenantPools;
  /**
   * Pools logging in as each project's apply role: changes that run owner
   * code (DDL on the owner's tables fires its triggers, a column's `using`
   * calls its functions) go here, never through a superuser session, where
   * a `reset role` in that code would make it the superuser.
   */
  appliers: TenantPools;
  /** Superuser pool on the tenant cluster's maintenance database. */
  tenantAdmin: pg.Pool;
  platformSecret: string;
  /** The object store of STORAGE_BACKEND, where bucket deletions empty the bucket's prefix. */
  objects: ObjectStore;
}

export interface EventRef {
  projectId: string;
  version: number;
}

export interface PendingEvent {
  version: number;
  type: ProjectEvent['type'];
  correlationId: string;
}

export type OutcomeType =
  | 'ProjectProvisioned' | 'ProjectProvisioningFailed' | 'ProjectDeleted' | 'ProjectDeletionFailed'
  | 'ProjectPingApplied' | 'ProjectPingFailed' | 'SchemaChangeApplied' | 'SchemaChangeFailed'
  | 'BucketChangeApplied' | 'BucketChangeFailed';
const FAILURE_OUTCOMES: ReadonlySet<OutcomeType> = new Set(['ProjectProvisioningFailed', 'ProjectDeletionFailed', 'ProjectPingFailed', 'SchemaChangeFailed', 'BucketChangeFailed']);
/** Failures that carry the database's (or the apply's) words in `error`. */
const FAILURES_WITH_ERROR: ReadonlySet<OutcomeType> = new Set(['SchemaChangeFailed', 'BucketChangeFailed']);

/**
 * A change's failure that its tenant may contradict: the apply commits the
 * change with the applied-version marker, then records the success, and a
 * recording that fails after that commit fails the activity too.
 */
const APPLIED_INSTEAD: Partial<Record<OutcomeType, OutcomeType>> = { SchemaChangeFailed: 'SchemaChangeApplied', BucketChangeFailed: 'BucketChangeApplied' };
/** How long the failure's recorder waits for the tenant to say where its marker is. */
const MARKER_READ_MS = 5_000;

/** PostgreSQL's words about a change it refused, carried into the failure event. */
export interface DatabaseErrorInfo {
  code: string | null;
  message: string;
  detail: string | null;
  hint: string | null;
}

export interface Outcome extends EventRef {
  type: OutcomeType;
  correlationId: string;
  reason?: string;
  error?: DatabaseErrorInfo;
}

/** Keeps Temporal informed while a statement runs, so a dead worker is noticed within the heartbeat timeout. */
export async function withHeartbeat<T>(work: () => Promise<T>): Promise<T> {
  heartbeat();
  const timer = setInterval(() => heartbeat(), 1000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** A query sent with the extended protocol, which runs exactly one statement. */
const extendedProtocol = (text: string) => ({ text, queryMode: 'extended' }) as pg.QueryConfig;

const DUPLICATE = new Set(['42710', '42P04', '23505']);

/**
 * SQLSTATE classes of errors the same statement meets again however often it
 * is retried: data (22), constraints (23), syntax and access (42), dependent
 * objects (2B), schema names (3F), features (0A), and what an app's triggers
 * and functions raise (09 triggered action, 20 case not found, 21
 * cardinality, 27 triggered data change, 2F routine, 38 and 39 external
 * routines, 44 check option, P0 PL/pgSQL's RAISE and ASSERT), roles (0L, 0P)
 * and program limits (54: too many columns, a statement too complex). The
 * rest (connections 08, resources 53, serialization and deadlocks 40, class
 * 55, cancels and shutdowns 57, system errors 58 and XX) may pass: 55000 is
 * also what a database not accepting connections answers, an outage.
 */
const PERMANENT_SQLSTATE = /^(22|23|42|2B|3F|0A|09|0L|0P|20|21|27|2F|38|39|44|54|P0)/;

/**
 * A database error that retrying cannot fix (bad SQL, a constraint, no
 * privilege, an app's trigger refusing) becomes a non-retryable failure
 * carrying PostgreSQL's words; anything else (connection lost, server
 * restarting) is retried.
 */
export function classifyError(error: unknown): unknown {
  const e = error as { code?: string; message?: string; detail?: string; hint?: string };
  if (typeof e.code === 'string' && PERMANENT_SQLSTATE.test(e.code)) {
    const info: DatabaseErrorInfo = { code: e.code, message: e.message ?? 'database error', detail: e.detail ?? null, hint: e.hint ?? null };
    return ApplicationFailure.nonRetryable(info.message, 'DatabaseError', info);
  }
  return error;
}

/** Wraps each activity so database errors are classified in one place. */
function classified<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: never[]) => {
        try {
          return await fn(...args);
        } catch (error) {
          throw classifyError(error);
        }
      },
    ]),
  ) as T;
}

export function createActivities(deps: ActivityDependencies) {
  const { platform, tenantAdmin, tenants, appliers, objects } = deps;
  /** Projects whose apply role this process has made sure of (see {@link ensureApplyRole}). */
  const applyRolesReady = new Map<string, Promise<void>>();

  /** Appends the success event of an applied change: the same activity, no extra round trip. */
  function recordSuccess(outcome: Outcome): Promise<void> {
    return platform.appendOutcome(outcome.projectId, { type: outcome.type, data: { projectId: outcome.projectId, causationVersion: outcome.version } } as ProjectEvent & { data: { causationVersion: number } }, outcome.correlationId);
  }

  /** Whether the project's applied-version marker has reached `version`; false when the tenant does not answer in time. */
  async function appliedInTenant(projectId: string, version: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const read = tenants.forProject(projectId).query<{ version: number }>('select version from baseplane_meta.applied');
    const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), MARKER_READ_MS); });
    try {
      const marker = await Promise.race([read, timeout]);
      return (marker?.rows[0]?.version ?? 0) >= version;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      read.catch(() => undefined);
    }
  }

  async function exists(sql: string, value: string): Promise<boolean> {
    return ((await tenantAdmin.query(sql, [value])).rowCount ?? 0) > 0;
  }

  /**
   * Makes sure the project's apply role exists with its grants, once per
   * process (idempotent, so projects provisioned before it existed get it at
   * their next change, and two workers doing it at once are fine).
   */
  function ensureApplyRole(projectId: string): Promise<void> {
    let ready = applyRolesReady.get(projectId);
    if (!ready) {
      ready = (async () => {
        const applyRole = tenantApplyRole(projectId);
        const password = deriveSecret(deps.platformSecret, applyPasswordPurpose(projectId));
        for (const sql of applyRoleSql(applyRole, tenantOwnerRole(projectId), tenantDatabaseName(projectId), password)) {
          await tenantAdmin.query(sql).catch((error: { code?: string }) => {
            if (!DUPLICATE.has(error.code ?? '')) throw error;
          });
        }
        for (const sql of applyRoleGrantsSql(applyRole)) await tenants.forProject(projectId).query(sql);
      })();
      applyRolesReady.set(projectId, ready);
      ready.catch(() => applyRolesReady.delete(projectId));
    }
    return ready;
  }

  /**
   * Runs `work` in one transaction on the project's database as its apply
   * role ({@link ActivityDependencies.appliers}).
   * When Temporal gives the attempt up meanwhile (its start-to-close passed,
   * its workflow ended: the cancellation comes with a heartbeat's answer), the
   * statement running is cancelled, so the attempt rolls back instead of going
   * on beside its retry and committing after the workflow recorded a failure.
   */
  async function asApplier<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    await ensureApplyRole(projectId);
    try {
      return await appliers.transaction(projectId, async (client) => {
        const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
        let running = true;
        Context.current().cancelled.catch(() => {
          if (running) void tenantAdmin.query('select pg_cancel_backend($1)', [rows[0]!.pid]).catch(() => undefined);
        });
        try {
          return await work(client);
        } finally {
          running = false;
        }
      });
    } catch (error) {
      // Refused at login (28xxx: the role or its password changed behind this process): made sure of again on the retry.
      if (/^28/.test((error as { code?: string }).code ?? '')) applyRolesReady.delete(projectId);
      throw error;
    }
  }

  /**
   * Drops a role of a deleted project. Another project's owner may have
   * granted it privileges on objects of that project's database (any role can
   * be named in a GRANT), and PostgreSQL keeps a role that holds privileges
   * anywhere (2BP01); only a session in that database could revoke them, and
   * its owner shapes such sessions (ALTER DATABASE … SET). Such a role is left
   * without login instead: nothing can act as it, and the deletion finishes.
   */
  async function dropRole(role: string): Promise<void> {
    try {
      await tenantAdmin.query(dropRoleSql(role));
    } catch (error) {
      if ((error as { code?: string }).code !== '2BP01') throw error;
      await tenantAdmin.query(disableRoleSql(role));
    }
  }

  /** Runs `perform` unless `done` says the effect is there, then ledgers the step. */
  async function step(ref: EventRef, name: string, done: () => Promise<boolean>, perform: () => Promise<unknown>): Promise<void> {
    const performed = !(await done());
    if (performed) await perform();
    await platform.recordStep(ref.projectId, ref.version, name, performed, Context.current().info.attempt);
  }

  return classified({
    /**
     * Which events between two stream versions need applying, in stream order:
     * not those with an outcome already, so a run started again after one that
     * ended early (terminated in Temporal) neither applies the history again
     * nor records a second outcome (a change that failed would be found
     * "applied" under a later marker).
     */
    async loadPendingEvents(input: { projectId: string; afterVersion: number; upToVersion: number }): Promise<PendingEvent[]> {
      const [events, done] = await Promise.all([
        platform.readStream(input.projectId, input.afterVersion, input.upToVersion),
        platform.causesWithOutcome(input.projectId, input.afterVersion),
      ]);
      return events
        .filter((e) => APPLIED_BY_WORKFLOW.has(e.type) && !done.has(e.version))
        .map((e) => ({ version: e.version, type: e.type, correlationId: e.metadata.correlationId }));
    },

    async ensureApiRoles(): Promise<void> {
      for (const sql of apiRolesSql()) {
        try {
          await tenantAdmin.query(sql);
        } catch (error) {
          // Two projects provisioning at once may both create a role: the loser is fine.
          if (!DUPLICATE.has((error as { code?: string }).code ?? '')) throw error;
        }
      }
    },

    async createOwnerRole(ref: EventRef): Promise<void> {
      const role = tenantOwnerRole(ref.projectId);
      await step(ref, 'createOwnerRole', () => exists('select 1 from pg_roles where rolname = $1', role), () =>
        tenantAdmin.query(createOwnerRoleSql(role, deriveSecret(deps.platformSecret, ownerPasswordPurpose(ref.projectId)))),
      );
    },

    async createDatabase(ref: EventRef): Promise<void> {
      const name = tenantDatabaseName(ref.projectId);
      const owner = tenantOwnerRole(ref.projectId);
      await withHeartbeat(async () => {
        await step(ref, 'createDatabase', () => exists('select 1 from pg_database where datname = $1', name), () =>
          tenantAdmin.query(createDatabaseSql(name, owner)),
        );
        for (const sql of databaseAccessSql(name, owner)) await tenantAdmin.query(sql);
        // The data API's login goes with the database (idempotent; two attempts at once are fine).
        for (const sql of authenticatorRoleSql(tenantAuthenticatorRole(ref.projectId), name, deriveSecret(deps.platformSecret, authenticatorPasswordPurpose(name)))) {
          await tenantAdmin.query(sql).catch((error: { code?: string }) => {
            if (!DUPLICATE.has(error.code ?? '')) throw error;
          });
        }
      });
    },

    /** Installs the tenant schema and, in the same activity, records `ProjectProvisioned`. */
    async installTenantSchema(ref: EventRef & { correlationId: string }): Promise<void> {
      const { projectId, version } = ref;
      const performed = await tenants.transaction(projectId, async (client) => {
        // Serialises concurrent attempts (and a starting worker's upgrade); the marker then tells whether this version is in.
        await client.query(TENANT_SCHEMA_LOCK);
        const { rows } = await client.query<{ installed: boolean }>(`select to_regclass('baseplane_meta.applied') is not null as installed`);
        if (rows[0]!.installed) {
          const marker = await client.query<{ version: number }>('select version from baseplane_meta.applied');
          if ((marker.rows[0]?.version ?? 0) >= version) return false;
        }
        // Every revision of the tenant schema (tenant-schema.ts); what it creates is not DDL for the history's SQL capture.
        await applyTenantRevisions(client, projectId);
        await client.query('insert into baseplane_meta.applied (version) values ($1) on conflict (id) do update set version = excluded.version', [version]);
        return true;
      });
      await platform.recordTenantRevision(projectId, TENANT_SCHEMA_REVISION);
      await platform.recordStep(projectId, version, 'installTenantSchema', performed, Context.current().info.attempt);
      await recordSuccess({ ...ref, type: 'ProjectProvisioned' });
    },

    /** Applies a no-op (moves the applied-version marker, proving the tenant answers) and records it. */
    async applyPing(ref: EventRef & { correlationId: string }): Promise<void> {
      await tenants.forProject(ref.projectId).query('update baseplane_meta.applied set version = greatest(version, $1)', [ref.version]);
      await recordSuccess({ ...ref, type: 'ProjectPingApplied' });
    },

    /** Drops the tenant database and its roles and records `ProjectDeleted`. */
    async dropDatabase(ref: EventRef & { correlationId: string }): Promise<void> {
      const name = tenantDatabaseName(ref.projectId);
      const role = tenantOwnerRole(ref.projectId);
      const applyRole = tenantApplyRole(ref.projectId);
      const authenticator = tenantAuthenticatorRole(ref.projectId);
      const gone = (sql: string, value: string) => async () => !(await exists(sql, value));
      await Promise.all([tenants.close(ref.projectId), appliers.close(ref.projectId)]);
      applyRolesReady.delete(ref.projectId);
      await withHeartbeat(async () => {
        await step(ref, 'dropDatabase', gone('select 1 from pg_database where datname = $1', name), () =>
          tenantAdmin.query(dropDatabaseSql(name)),
        );
        await step(ref, 'dropApplyRole', gone('select 1 from pg_roles where rolname = $1', applyRole), () => dropRole(applyRole));
        await step(ref, 'dropAuthenticatorRole', gone('select 1 from pg_roles where rolname = $1', authenticator), () => dropRole(authenticator));
        await step(ref, 'dropOwnerRole', gone('select 1 from pg_roles where rolname = $1', role), () => dropRole(role));
      });
      await recordSuccess({ ...ref, type: 'ProjectDeleted' });
    },

    /**
     * Applies one schema event as the project's owner (logged in as its apply
     * role, which takes the owner's role), in one transaction with
     * the applied-version marker (a retry after a crash finds it applied and
     * does nothing), then records `SchemaChangeApplied`.
     */
    async applySchemaChange(ref: EventRef & { correlationId: string }): Promise<void> {
      const [event] = await platform.readStream(ref.projectId, ref.version - 1, ref.version);
      if (!event) throw ApplicationFailure.nonRetryable(`no event at version ${ref.version}`);
      const statements = schemaChangeSql({ type: event.type, data: event.data } as SchemaEvent);
      // Heartbeats while it runs: a change may wait long for a lock an app's transaction holds, or rewrite a big
      // table, and an attempt taken for dead would be tried again beside it, then failed while it goes on to commit.
      await withHeartbeat(() =>
        asApplier(ref.projectId, async (client) => {
          const marker = await client.query<{ version: number }>('select version from baseplane_meta.applied for update');
          if ((marker.rows[0]?.version ?? 0) >= ref.version) return;
          await client.query(`set local role "${tenantOwnerRole(ref.projectId)}"`);
          // Tells the tenant's DDL capture that this change is already in the history.
          await client.query(`set local baseplane.source = 'workflow'`);
          // A date or time default is read in UTC, as the SQL console reads it, whatever the cluster's or the owner's setting.
          await client.query(`set local timezone = 'UTC'`);
          for (const text of statements) await client.query(extendedProtocol(text));
          await client.query('reset role');
          await client.query('update baseplane_meta.applied set version = $1', [ref.version]);
        }),
      );
      await recordSuccess({ ...ref, type: 'SchemaChangeApplied' });
    },

    /**
     * Applies one bucket event to the tenant's storage tables as the project's
     * owner, in one transaction with the applied-version marker (a retry finds
     * it applied and does nothing). A new bucket's key prefix is emptied before
     * the commit: objects a deleted bucket of that name left behind must not
     * show up in it. Creation and toggles record `BucketChangeApplied` here; a
     * deletion answers the prefix to empty, and `emptyBucket` records it.
     */
    async applyBucketChange(ref: EventRef & { correlationId: string }): Promise<{ emptyPrefix: string | null }> {
      const [event] = await platform.readStream(ref.projectId, ref.version - 1, ref.version);
      if (!event) throw ApplicationFailure.nonRetryable(`no event at version ${ref.version}`);
      const change = { type: event.type, data: event.data } as BucketEvent;
      const name = bucketOf(change);
      if (name === undefined) throw ApplicationFailure.nonRetryable(`${event.type} is not a bucket change`);
      const prefix = bucketPrefix(ref.projectId, name);
      await withHeartbeat(() =>
        asApplier(ref.projectId, async (client) => {
          const marker = await client.query<{ version: number }>('select version from baseplane_meta.applied for update');
          if ((marker.rows[0]?.version ?? 0) >= ref.version) return;
          await client.query(`set local role "${tenantOwnerRole(ref.projectId)}"`);
          await applyBucketRows(client, change);
          await client.query('reset role');
          if (change.type === 'BucketCreated') await objects.deletePrefix(prefix);
          await client.query('update baseplane_meta.applied set version = $1', [ref.version]);
        }),
      );
      if (change.type === 'BucketDeletionRequested') return { emptyPrefix: prefix };
      await recordSuccess({ ...ref, type: 'BucketChangeApplied' });
      return { emptyPrefix: null };
    },

    /**
     * Deletes every object under a deleted bucket's prefix (idempotent: a retry
     * deletes what is left), then records `BucketChangeApplied`. Its rows went
     * in the deletion's transaction, so nothing can reach these objects any more.
     */
    async emptyBucket(ref: EventRef & { correlationId: string; prefix: string }): Promise<void> {
      await withHeartbeat(() => objects.deletePrefix(ref.prefix));
      await platform.recordStep(ref.projectId, ref.version, 'emptyBucket', true, Context.current().info.attempt);
      await recordSuccess({ ...ref, type: 'BucketChangeApplied' });
    },

    /** Deletes every object of a deleted project (idempotent), once its database, and so every row naming them, is gone. */
    async emptyProjectStorage(ref: EventRef): Promise<void> {
      await withHeartbeat(() => objects.deletePrefix(projectPrefix(ref.projectId)));
      await platform.recordStep(ref.projectId, ref.version, 'emptyProjectStorage', true, Context.current().info.attempt);
    },

    /**
     * Records a failure outcome (successes are recorded by the activity that
     * applied them). A schema or bucket change whose apply committed (the
     * tenant's marker has reached it) failed only in recording its success:
     * that success is recorded instead, so the history says what the tenant
     * holds. A deleted bucket's bytes its workflow did not get to are left to
     * the storage sweep (bytes without a row). A tenant that does not answer
     * cannot say so, and the failure is recorded as before.
     */
    async recordOutcome(outcome: Outcome): Promise<void> {
      const instead = APPLIED_INSTEAD[outcome.type];
      if (instead && (await appliedInTenant(outcome.projectId, outcome.version))) {
        await recordSuccess({ ...outcome, type: instead });
        return;
      }
      const base = { projectId: outcome.projectId, causationVersion: outcome.version };
      const reason = outcome.reason ?? 'unknown error';
      const failure = FAILURES_WITH_ERROR.has(outcome.type)
        ? { ...base, reason, error: outcome.error ?? { code: null, message: reason, detail: null, hint: null } }
        : { ...base, reason };
      const event = (FAILURE_OUTCOMES.has(outcome.type)
        ? { type: outcome.type, data: failure }
        : { type: outcome.type, data: base }) as ProjectEvent & { data: { causationVersion: number } };
      await platform.appendOutcome(outcome.projectId, event, outcome.correlationId);
    },
  });
}

export type Activities = ReturnType<typeof createActivities>;
