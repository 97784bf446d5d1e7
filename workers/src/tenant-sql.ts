/**
 * The SQL that shapes a tenant database: API roles (once per cluster), the
 * `auth` and `storage` schemas with `auth.uid()`, `auth.role()`, `auth.jwt()`,
 * grants as Supabase sets them, and the applied-version marker.
 */

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** API roles, one set per cluster; `authenticator` is the data plane's login. */
export function apiRolesSql(authenticatorPassword: string): string[] {
  return [
    `do $$ begin
       if not exists (select from pg_roles where rolname = 'anon') then create role anon nologin noinherit; end if;
       if not exists (select from pg_roles where rolname = 'authenticated') then create role authenticated nologin noinherit; end if;
       if not exists (select from pg_roles where rolname = 'service_role') then create role service_role nologin noinherit bypassrls; end if;
       if not exists (select from pg_roles where rolname = 'authenticator') then create role authenticator login noinherit; end if;
     end $$`,
    `alter role authenticator with login noinherit password ${literal(authenticatorPassword)}`,
    'grant anon, authenticated, service_role to authenticator',
  ];
}

export function createOwnerRoleSql(ownerRole: string, password: string): string {
  return `create role ${ident(ownerRole)} login nosuperuser nocreatedb nocreaterole noreplication password ${literal(password)}`;
}

export function createDatabaseSql(databaseName: string, ownerRole: string): string {
  return `create database ${ident(databaseName)} owner ${ident(ownerRole)}`;
}

export const dropDatabaseSql = (databaseName: string) => `drop database if exists ${ident(databaseName)} with (force)`;
export const dropRoleSql = (role: string) => `drop role if exists ${ident(role)}`;

export function databaseAccessSql(databaseName: string, ownerRole: string): string[] {
  return [
    `revoke all on database ${ident(databaseName)} from public`,
    `grant connect, temporary on database ${ident(databaseName)} to ${ident(ownerRole)}, authenticator`,
  ];
}

/** Runs inside one transaction in the tenant database, as a superuser. */
export function installSchemaSql(ownerRole: string, version: number): string[] {
  const owner = ident(ownerRole);
  return [
    'create schema if not exists baseplane_meta',
    'create table if not exists baseplane_meta.applied (id boolean primary key default true check (id), version int not null)',
    `insert into baseplane_meta.applied (version) values (${version}) on conflict (id) do update set version = excluded.version`,
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
  ];
}
