/**
 * The tenant schema's revisions (tenant-schema.ts): a project is provisioned
 * at the latest, and a database an earlier release made gets the revisions it
 * lacks from the worker's start-up pass, without undoing what its owner
 * changed since, and without one unreachable database holding the rest back.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantDatabaseName } from '@baseplane/contracts';
import { PlatformStore } from '../src/platform-store';
import { TENANT_SCHEMA_REVISION, upgradeTenantSchemas } from '../src/tenant-schema';
import { TenantPools } from '../src/tenant-pools';
import { createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

const REVISION_2_INDEXES = ['one_time_codes_created_at', 'rate_limits_window_start', 'sessions_refresh_expires_at'];

let project: ProjectAnswer;
let tenant: TenantDatabase;
let platformDb: pg.Pool;
let tenants: TenantPools;
const logged: Array<{ msg: string; projectId?: string }> = [];

const indexes = async () =>
  (await tenant.client.query<{ name: string }>(`select indexname as name from pg_indexes where schemaname = 'auth' and indexname = any($1) order by 1`, [REVISION_2_INDEXES])).rows.map((row) => row.name);
/** What revision 3 adds to the DDL log: its batch and actor columns, and the functions that take, list and remove batches. */
const outbox = async () => (await tenant.client.query<{ batch: boolean; actor: boolean; functions: string[] }>(
  `select exists (select from information_schema.columns where table_schema = 'baseplane_meta' and table_name = 'ddl_log' and column_name = 'batch') as batch,
          exists (select from information_schema.columns where table_schema = 'baseplane_meta' and table_name = 'ddl_log' and column_name = 'actor') as actor,
          (select array_agg(distinct proname::text order by proname::text) from pg_proc where pronamespace = 'baseplane_meta'::regnamespace and proname like '%ddl_log') as functions`,
)).rows[0];
/** Whether revision 4's trigger guards storage.buckets. */
const bucketGuard = async () =>
  (await tenant.client.query(`select exists (select from pg_trigger where tgrelid = 'storage.buckets'::regclass and tgname = 'buckets_change_through_api') as guarded`)).rows[0].guarded;
/** Whether revision 6's column names the version each object's bytes are stored as, with its check. */
const objectVersions = async () => (await tenant.client.query<{ column: boolean; checked: boolean }>(
  `select exists (select from information_schema.columns where table_schema = 'storage' and table_name = 'objects' and column_name = 'version') as column,
          exists (select from pg_constraint where conrelid = 'storage.objects'::regclass and contype = 'c' and pg_get_constraintdef(oid) like '%version%') as checked`,
)).rows[0];
/** The unique indexes of live one-time codes: revision 7's across purposes, or the per-purpose one it replaces. */
const liveCodeIndexes = async () =>
  (await tenant.client.query<{ name: string }>(`select indexname as name from pg_indexes where schemaname = 'auth' and indexname like 'one_time_codes_live%' order by 1`)).rows.map((row) => row.name);
const marker = async () => (await tenant.client.query<{ revision: number }>('select revision from baseplane_meta.schema_revision')).rows[0]?.revision;
const recorded = async (projectId: string) =>
  (await platformDb.query<{ revision: number }>('select revision from tenant_schema_revisions where project_id = $1', [projectId])).rows[0]?.revision;

const upgrade = () =>
  upgradeTenantSchemas({
    platform: new PlatformStore(platformDb),
    transaction: (projectId, work) => tenants.transaction(projectId, work),
    log: pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
  });

beforeAll(async () => {
  const operator = await signUpOperator('Tenant schema');
  project = await createProject(operator, 'tenant schema app');
  tenant = await connectTenant(project.id);
  platformDb = new pg.Pool({ connectionString: inject('databaseUrl'), max: 2 });
  tenants = TenantPools.asAdmin(inject('tenantDatabaseUrl'));
});
afterAll(async () => {
  await tenants.closeAll();
  await platformDb.end();
  await tenant.end();
});

describe('tenant schema revisions', () => {
  it('provisions a project at the latest revision, noted in its database and the platform', async () => {
    expect(TENANT_SCHEMA_REVISION).toBeGreaterThanOrEqual(4);
    expect(await bucketGuard()).toBe(true);
    expect(await outbox()).toEqual({ batch: true, actor: true, functions: ['ack_ddl_log', 'pending_ddl_log', 'take_ddl_log'] });
    expect(await objectVersions()).toEqual({ column: true, checked: true });
    expect(await liveCodeIndexes()).toEqual(['one_time_codes_live_any_purpose']);
    expect(await marker()).toBe(TENANT_SCHEMA_REVISION);
    expect(await recorded(project.id)).toBe(TENANT_SCHEMA_REVISION);
    expect(await indexes()).toEqual(REVISION_2_INDEXES);
  });

  it('brings a database an earlier release made up to the latest at worker start, keeping its owner\'s changes and data', async () => {
    // The database as release 1 left it: no revision marker, no revision-2 indexes, no platform row.
    for (const name of REVISION_2_INDEXES) await tenant.client.query(`drop index auth.${name}`);
    // Nor the DDL outbox of revision 3.
    await tenant.client.query(`drop function baseplane_meta.pending_ddl_log(); drop function baseplane_meta.ack_ddl_log(uuid);
      drop function baseplane_meta.take_ddl_log(xid8, uuid, text); alter table baseplane_meta.ddl_log drop column batch, drop column actor`);
    // Nor the bucket guard of revision 4.
    await tenant.client.query('drop trigger buckets_change_through_api on storage.buckets; drop function baseplane_meta.buckets_change_through_api()');
    // Nor revision 6's object versions; it holds an object (a row, whose bytes would be at its path's own key).
    await tenant.client.query('alter table storage.objects drop column version');
    await tenant.client.query(`insert into storage.buckets (name) values ('before-versions')`);
    await tenant.client.query(`insert into storage.objects (bucket, path, size, content_type, etag) values ('before-versions', 'old.txt', 3, 'text/plain', 'e')`);
    // Nor revision 7's live codes unique across purposes: the per-purpose index it replaces, and a sign-in code and an
    // invitation live with the same digits (whoever holds one could sign in with the other), beside a code of its own.
    await tenant.client.query('drop index if exists auth.one_time_codes_live_any_purpose');
    await tenant.client.query('create unique index if not exists one_time_codes_live on auth.one_time_codes (purpose, code_hash) where used_at is null');
    await tenant.client.query(
      `insert into auth.one_time_codes (purpose, email, code_hash, expires_at, created_at) values
         ('magiclink', 'holder@example.com', 'same digits', now() + interval '10 minutes', now() - interval '1 minute'),
         ('invite', 'invitee@example.com', 'same digits', now() + interval '10 minutes', now()),
         ('signup', 'alone@example.com', 'digits of its own', now() + interval '10 minutes', now())`,
    );
    await tenant.client.query('drop table baseplane_meta.schema_revision');
    await platformDb.query('delete from tenant_schema_revisions where project_id = $1', [project.id]);
    // Since then its owner locked anon out of public, and the app has data.
    await tenant.asOwner('create table kept (id int primary key, note text)');
    await tenant.asOwner(`insert into kept values (1, 'still here')`);
    await tenant.asOwner('revoke usage on schema public from anon');
    // And an active project whose database cannot be reached (here: gone) comes first.
    const unreachable = randomUUID();
    await platformDb.query(
      `insert into projects (id, name, team_id, status, database_name, anon_key_hash, anon_key_cipher, service_key_hash, service_key_cipher, version, created_at, updated_at)
       values ($1, 'unreachable', $2, 'active', $3, $4, 'x', $5, 'x', 1, now() - interval '1 day', now())`,
      [unreachable, randomUUID(), tenantDatabaseName(unreachable), `hash-${randomUUID()}`, `hash-${randomUUID()}`],
    );
    try {
      expect(await upgrade()).toBeGreaterThanOrEqual(1);
    } finally {
      await platformDb.query('delete from projects where id = $1', [unreachable]);
    }

    expect(await indexes()).toEqual(REVISION_2_INDEXES);
    expect(await outbox()).toEqual({ batch: true, actor: true, functions: ['ack_ddl_log', 'pending_ddl_log', 'take_ddl_log'] });
    expect(await bucketGuard()).toBe(true);
    expect(await objectVersions()).toEqual({ column: true, checked: true });
    // Both codes sharing their digits are retired (either one's holder knows the other's); the code of its own lives on.
    expect(await liveCodeIndexes()).toEqual(['one_time_codes_live_any_purpose']);
    const codes = await tenant.client.query(`select email, used_at is not null as retired from auth.one_time_codes where email like any($1) order by email`, [['holder@%', 'invitee@%', 'alone@%']]);
    expect(codes.rows).toEqual([
      { email: 'alone@example.com', retired: false },
      { email: 'holder@example.com', retired: true },
      { email: 'invitee@example.com', retired: true },
    ]);
    // The object stored before versions is kept, with none.
    expect((await tenant.client.query(`select path, version from storage.objects where bucket = 'before-versions'`)).rows).toEqual([{ path: 'old.txt', version: null }]);
    expect(await marker()).toBe(TENANT_SCHEMA_REVISION);
    expect(await recorded(project.id)).toBe(TENANT_SCHEMA_REVISION);
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'tenant schema upgraded', projectId: project.id, from: 1, to: TENANT_SCHEMA_REVISION }));
    expect(logged).toContainEqual(expect.objectContaining({ msg: expect.stringMatching(/upgrade failed/), projectId: unreachable }));
    expect(await recorded(unreachable)).toBeUndefined();
    // Revision 1, which grants the API roles usage on public, did not run again.
    const { rows } = await tenant.client.query(`select has_schema_privilege('anon', 'public', 'usage') as anon_uses_public, (select note from public.kept where id = 1) as note`);
    expect(rows[0]).toEqual({ anon_uses_public: false, note: 'still here' });
  });

  it('leaves databases the platform knows to be at the latest alone', async () => {
    const behind = await new PlatformStore(platformDb).projectsBehind(TENANT_SCHEMA_REVISION);
    expect(behind).not.toContain(project.id);
    logged.length = 0;
    await upgrade();
    expect(logged.filter((line) => line.projectId === project.id)).toEqual([]);
  });
});
