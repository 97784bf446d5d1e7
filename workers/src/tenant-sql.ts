/**
 * The SQL that shapes a tenant database: API roles (once per cluster), the
 * project's owner, apply and data-API logins, the `auth` and `storage`
 * schemas with `auth.uid()`, `auth.role()`, `auth.jwt()`, grants as Supabase
 * sets them, and the applied-version marker.
 */
import { ACK_DDL_LOG_STATEMENT, REVISION_1_TAKE_DDL_LOG_STATEMENT, TAKE_DDL_LOG_STATEMENT, ident, literal, scramVerifier } from '@baseplane/contracts';

/** A password in a role statement: only its SCRAM verifier, never the password, goes into the statement's text. */
const passwordLiteral = (password: string) => literal(scramVerifier(password));

/** API roles, one set per cluster, which each project's data-API login takes per request ({@link authenticatorRoleSql}). */
export function apiRolesSql(): string[] {
  return [
    `do $$ begin
       if not exists (select from pg_roles where rolname = 'anon') then create role anon nologin noinherit; end if;
       if not exists (select from pg_roles where rolname = 'authenticated') then create role authenticated nologin noinherit; end if;
       if not exists (select from pg_roles where rolname = 'service_role') then create role service_role nologin noinherit bypassrls; end if;
     end $$`,
  ];
}

/** A login holding no right of the roles it is granted until it takes one (NOINHERIT), with `password`; made or brought back to that. */
function noinheritLoginSql(role: string, password: string): string[] {
  return [
    `do $$ begin
       if not exists (select from pg_roles where rolname = ${literal(role)}) then
         create role ${ident(role)} login noinherit nosuperuser nocreatedb nocreaterole noreplication password ${passwordLiteral(password)};
       end if;
     end $$`,
    `alter role ${ident(role)} with login noinherit password ${passwordLiteral(password)}`,
  ];
}

/**
 * The project's data-API login (`tenantAuthenticatorRole`), on the cluster:
 * it may take the API roles (SET, not INHERIT) and connect to the project's
 * database only. Owner code in a request can reset its role to this login,
 * so it is the project's own: altering it (its password, its settings) or
 * signalling its backends reaches no other project. Idempotent.
 */
export function authenticatorRoleSql(role: string, databaseName: string, password: string): string[] {
  return [
    ...noinheritLoginSql(role, password),
    `grant anon, authenticated, service_role to ${ident(role)}`,
    `grant connect, temporary on database ${ident(databaseName)} to ${ident(role)}`,
  ];
}

/**
 * Retires the one `authenticator` login that every project's data API once
 * shared (owner code resetting its role there could alter it for every
 * project, and see and end every project's data-API connections): no
 * database, no API role, no login. Idempotent; nothing when it never existed.
 */
export function retireSharedAuthenticatorSql(databaseNames: readonly string[]): string[] {
  return [
    ...databaseNames.map((name) => `revoke connect, temporary on database ${ident(name)} from authenticator`),
    'revoke anon, authenticated, service_role from authenticator',
    'alter role authenticator with nologin password null',
  ];
}

export function createOwnerRoleSql(ownerRole: string, password: string): string {
  return `create role ${ident(ownerRole)} login nosuperuser nocreatedb nocreaterole noreplication password ${passwordLiteral(password)}`;
}

/**
 * The project's apply role (`tenantApplyRole`), on the cluster: a login that
 * may take the owner's role but holds none of its rights itself (NOINHERIT),
 * and may connect to the project's database only. Idempotent: projects made
 * before it existed get it at their next change.
 */
export function applyRoleSql(applyRole: string, ownerRole: string, databaseName: string, password: string): string[] {
  return [
    ...noinheritLoginSql(applyRole, password),
    `grant ${ident(ownerRole)} to ${ident(applyRole)}`,
    `grant connect on database ${ident(databaseName)} to ${ident(applyRole)}`,
  ];
}

/** The apply role's rights inside the project's database: reading and moving the applied-version marker, nothing else. */
export function applyRoleGrantsSql(applyRole: string): string[] {
  return [
    `grant usage on schema baseplane_meta to ${ident(applyRole)}`,
    `grant select, update on baseplane_meta.applied to ${ident(applyRole)}`,
  ];
}

export function createDatabaseSql(databaseName: string, ownerRole: string): string {
  return `create database ${ident(databaseName)} owner ${ident(ownerRole)}`;
}

export const dropDatabaseSql = (databaseName: string) => `drop database if exists ${ident(databaseName)} with (force)`;
export const dropRoleSql = (role: string) => `drop role if exists ${ident(role)}`;
/** What is left of a role that cannot be dropped: no login, no password, so nothing can act as it. */
export const disableRoleSql = (role: string) => `alter role ${ident(role)} with nologin password null`;

export function databaseAccessSql(databaseName: string, ownerRole: string): string[] {
  return [
    `revoke all on database ${ident(databaseName)} from public`,
    `grant connect, temporary on database ${ident(databaseName)} to ${ident(ownerRole)}`,
  ];
}

/**
 * Runs inside one transaction in the tenant database, as a superuser: the
 * first revision of tenant-schema.ts. `baseplane_meta.applied` is where the
 * workflow marks the last event it applied; provisioning writes its first row.
 */
export function installSchemaSql(ownerRole: string): string[] {
  const owner = ident(ownerRole);
  return [
    'create schema if not exists baseplane_meta',
    'create table if not exists baseplane_meta.applied (id boolean primary key default true check (id), version int not null)',
    `alter schema public owner to ${owner}`,
    'revoke all on schema public from public',
    `grant usage on schema public to anon, authenticated, service_role`,
    `alter default privileges for role ${owner} in schema public grant all on tables to anon, authenticated, service_role`,
    `alter default privileges for role ${owner} in schema public grant all on sequences to anon, authenticated, service_role`,
    `alter default privileges for role ${owner} in schema public grant execute on functions to anon, authenticated, service_role`,
    'create schema if not exists auth',
    'create schema if not exists storage',
    `grant usage on schema auth, storage to anon, authenticated, service_role, ${owner}`,
    `create or replace function auth.jwt() returns jsonb language sql stable as $$
       select coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
     $$`,
    `create or replace function auth.uid() returns uuid language sql stable as $$
       select nullif(auth.jwt() ->> 'sub', '')::uuid
     $$`,
    `create or replace function auth.role() returns text language sql stable as $$
       select coalesce(auth.jwt() ->> 'role', nullif(current_setting('role', true), 'none'))
     $$`,
    `grant execute on function auth.jwt(), auth.uid(), auth.role() to anon, authenticated, service_role, ${owner}`,
    // DDL capture (ARCHITECTURE.md: everything an operator changes is in the
    // history): the log the console takes its rows from, and the event
    // triggers of ddlCaptureSql that fill it.
    `create table if not exists baseplane_meta.ddl_log (
       id bigint generated always as identity primary key,
       txid xid8 not null default pg_current_xact_id(),
       pid int not null default pg_backend_pid(),
       command_tag text not null,
       object_type text,
       object_identity text,
       statement text,
       at timestamptz not null default now()
     )`,
    // Tables whose RLS the capture is switching on right now: that ALTER TABLE fires the capture again.
    'create table if not exists baseplane_meta.rls_switching (txid xid8 not null, relid oid not null)',
    ...ddlCaptureSql(ownerRole),
    // The rows of this session since `since`: the console's transaction, and any its query committed itself.
    `create or replace function baseplane_meta.take_ddl_log(since xid8)
       returns table (command_tag text, object_type text, object_identity text)
       language plpgsql volatile security definer set search_path = pg_catalog as $$
       begin
         if current_query() is distinct from ${literal(REVISION_1_TAKE_DDL_LOG_STATEMENT)} then
           raise exception 'baseplane_meta.take_ddl_log is for the SQL console only' using errcode = '42501';
         end if;
         return query
           with taken as (
             delete from baseplane_meta.ddl_log l where l.pid = pg_backend_pid() and l.txid >= since
             returning l.id, l.command_tag, l.object_type, l.object_identity)
           select t.command_tag, t.object_type, t.object_identity from taken t order by t.id;
       end
     $$`,
    'revoke all on function baseplane_meta.take_ddl_log(xid8) from public',
    `grant usage on schema baseplane_meta to ${owner}`,
    `grant execute on function baseplane_meta.take_ddl_log(xid8) to ${owner}`,
  ];
}

/**
 * The DDL capture's functions and event triggers (revision 1, made again by
 * revisions 5 and 8). Event triggers log the DDL of the SQL console's sessions (the
 * owner's, marked `baseplane.console = on` by the console) into
 * baseplane_meta.ddl_log, whose rows the console records as a SqlDdlRecorded
 * event; a table created in public, or in any schema of the owner's (one the
 * data API may expose), gets RLS enabled, with no policies (not in the
 * platform's `auth`, `storage` and `baseplane_meta`).
 * Changes the workflow applies (baseplane.source = 'workflow', from a session
 * other than the owner's) are in the history already and are left alone, as
 * is what a superuser runs (provisioning, upgrades, an operator's repair).
 * DDL from anywhere else (a function the data API calls, a trigger of the
 * owner's firing under the rows API or auth) would be in no event, and is
 * refused (42501); temporary objects are not DDL of the project and pass.
 * Safe to run again.
 */
export function ddlCaptureSql(ownerRole: string): string[] {
  return [
    // Anyone may set the GUC; the owner's own sessions (the console's) are never the workflow.
    `create or replace function baseplane_meta.applied_by_workflow() returns boolean
       language sql stable set search_path = pg_catalog as $$
       select coalesce(current_setting('baseplane.source', true), '') = 'workflow' and session_user <> ${literal(ownerRole)}
     $$`,
    // Whether DDL of this session can be in the history: the console's (which records it) or a superuser's.
    `create or replace function baseplane_meta.ddl_recorded_here() returns boolean
       language sql stable set search_path = pg_catalog as $$
       select (session_user = ${literal(ownerRole)} and coalesce(current_setting('baseplane.console', true), '') = 'on')
           or coalesce((select r.rolsuper from pg_roles r where r.rolname = session_user), false)
     $$`,
    `create or replace function baseplane_meta.refuse_unrecorded_ddl(tag text) returns void
       language plpgsql stable set search_path = pg_catalog as $$
       begin
         raise exception '% is not allowed here: schema changes go through the SQL console or the management API, so that each is in the project''s history', tag
           using errcode = '42501', hint = 'run it with POST /api/sql/execute, or as a table, column or bucket command of /api/projects/<id>';
       end
     $$`,
    `create or replace function baseplane_meta.capture_ddl_commands() returns event_trigger
       language plpgsql security definer set search_path = pg_catalog as $$
       declare
         command record;
       begin
         if baseplane_meta.applied_by_workflow() then return; end if;
         for command in select * from pg_event_trigger_ddl_commands() loop
           continue when command.schema_name = 'pg_temp';
           continue when command.command_tag = 'ALTER TABLE' and exists (
             select from baseplane_meta.rls_switching s where s.txid = pg_current_xact_id() and s.relid = command.objid);
           if not baseplane_meta.ddl_recorded_here() then perform baseplane_meta.refuse_unrecorded_ddl(command.command_tag); end if;
           if session_user = ${literal(ownerRole)} then
             insert into baseplane_meta.ddl_log (command_tag, object_type, object_identity, statement)
             values (command.command_tag, command.object_type, command.object_identity, current_query());
           end if;
           if command.command_tag in ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
              and command.object_type = 'table' and command.schema_name not in ('auth', 'storage', 'baseplane_meta') then
             insert into baseplane_meta.rls_switching (txid, relid) values (pg_current_xact_id(), command.objid);
             execute format('alter table %s enable row level security', command.objid::regclass);
             delete from baseplane_meta.rls_switching where txid = pg_current_xact_id() and relid = command.objid;
           end if;
         end loop;
       end
     $$`,
    `create or replace function baseplane_meta.capture_dropped_objects() returns event_trigger
       language plpgsql security definer set search_path = pg_catalog as $$
       begin
         if baseplane_meta.applied_by_workflow() then return; end if;
         if not baseplane_meta.ddl_recorded_here()
            and exists (select from pg_event_trigger_dropped_objects() d where (d.original or d.normal) and not d.is_temporary) then
           perform baseplane_meta.refuse_unrecorded_ddl(tg_tag);
         end if;
         if session_user <> ${literal(ownerRole)} then return; end if;
         insert into baseplane_meta.ddl_log (command_tag, object_type, object_identity, statement)
         select tg_tag, d.object_type, d.object_identity, current_query()
         from pg_event_trigger_dropped_objects() d
         where (d.original or d.normal) and not d.is_temporary;
       end
     $$`,
    'revoke all on function baseplane_meta.applied_by_workflow(), baseplane_meta.ddl_recorded_here(), baseplane_meta.refuse_unrecorded_ddl(text), baseplane_meta.capture_ddl_commands(), baseplane_meta.capture_dropped_objects() from public',
    'drop event trigger if exists baseplane_capture_ddl_commands',
    'create event trigger baseplane_capture_ddl_commands on ddl_command_end execute function baseplane_meta.capture_ddl_commands()',
    'drop event trigger if exists baseplane_capture_dropped_objects',
    'create event trigger baseplane_capture_dropped_objects on sql_drop execute function baseplane_meta.capture_dropped_objects()',
  ];
}

/**
 * Revision 3: the DDL log becomes an outbox. The console used to take (delete)
 * its rows in the transaction that ran the query and then record the event, so
 * a platform database failing in between lost that DDL from the history. Now
 * `take_ddl_log` marks the rows with the console's batch and actor, they are
 * committed with the query, and `ack_ddl_log` removes them only once the
 * event is recorded; `pending_ddl_log` shows what is still to record (the
 * control plane records it before the project's next console call). Safe to
 * run again.
 */
export function ddlOutboxSql(ownerRole: string): string[] {
  const owner = ident(ownerRole);
  return [
    'alter table baseplane_meta.ddl_log add column if not exists batch uuid, add column if not exists actor text',
    'drop function if exists baseplane_meta.take_ddl_log(xid8)',
    `create or replace function baseplane_meta.take_ddl_log(since xid8, p_batch uuid, p_actor text)
       returns table (command_tag text, object_type text, object_identity text)
       language plpgsql volatile security definer set search_path = pg_catalog as $$
       begin
         if current_query() is distinct from ${literal(TAKE_DDL_LOG_STATEMENT)} then
           raise exception 'baseplane_meta.take_ddl_log is for the SQL console only' using errcode = '42501';
         end if;
         return query
           with taken as (
             update baseplane_meta.ddl_log l set batch = p_batch, actor = p_actor
             where l.pid = pg_backend_pid() and l.txid >= since and l.batch is null
             returning l.id, l.command_tag, l.object_type, l.object_identity)
           select t.command_tag, t.object_type, t.object_identity from taken t order by t.id;
       end
     $$`,
    `create or replace function baseplane_meta.ack_ddl_log(p_batch uuid) returns void
       language plpgsql volatile security definer set search_path = pg_catalog as $$
       begin
         if current_query() is distinct from ${literal(ACK_DDL_LOG_STATEMENT)} then
           raise exception 'baseplane_meta.ack_ddl_log is for the SQL console only' using errcode = '42501';
         end if;
         delete from baseplane_meta.ddl_log l where l.batch = p_batch;
       end
     $$`,
    `create or replace function baseplane_meta.pending_ddl_log()
       returns table (batch uuid, actor text, statement text, command_tag text, object_type text, object_identity text)
       language sql stable security definer set search_path = pg_catalog as $$
       select l.batch, l.actor, l.statement, l.command_tag, l.object_type, l.object_identity
       from baseplane_meta.ddl_log l where l.batch is not null order by l.id
     $$`,
    'revoke all on function baseplane_meta.take_ddl_log(xid8, uuid, text), baseplane_meta.ack_ddl_log(uuid), baseplane_meta.pending_ddl_log() from public',
    `grant execute on function baseplane_meta.take_ddl_log(xid8, uuid, text), baseplane_meta.ack_ddl_log(uuid), baseplane_meta.pending_ddl_log() to ${owner}`,
  ];
}
