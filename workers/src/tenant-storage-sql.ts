/**
 * The storage metadata of a tenant database, schema `storage`: buckets (only
 * ever changed by the project's workflow, applying bucket events; revision 4
 * refuses the SQL console's changes) and objects
 * (rows the storage API writes beside the bytes in the object store). Laid
 * out and granted as Supabase does, so apps write the same RLS policies.
 */

import { ident, literal } from '@baseplane/contracts';

/**
 * Runs inside the install transaction, as a superuser. The owner role owns both
 * tables: only a table's owner may create policies on it (the app writes them
 * through the SQL console, as the owner), and the owner's own reads are not
 * filtered by them. No policy is created: anon and authenticated see nothing
 * until the app says otherwise; service_role bypasses RLS.
 */
export function storageSchemaSql(ownerRole: string): string[] {
  const owner = ident(ownerRole);
  return [
    // The name check repeats contracts' checkBucketName: on the s3 backend a name is a key segment.
    `create table if not exists storage.buckets (
       name text primary key check (name ~ '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' and name not like '%..%'),
       public boolean not null default false,
       file_size_limit bigint check (file_size_limit > 0),
       allowed_mime_types text[],
       created_at timestamptz not null default now(),
       updated_at timestamptz not null default now()
     )`,
    `create table if not exists storage.objects (
       id uuid primary key default gen_random_uuid(),
       bucket text not null references storage.buckets (name) on delete cascade,
       path text not null,
       size bigint not null check (size >= 0),
       content_type text,
       etag text,
       owner uuid,
       created_at timestamptz not null default now(),
       updated_at timestamptz not null default now(),
       unique (bucket, path)
     )`,
    'create index if not exists objects_owner on storage.objects (owner)',
    // Supabase's helpers for policies: storage.foldername('<uid>/photos/me.png') is {<uid>,photos}.
    `create or replace function storage.foldername(path text) returns text[] language sql immutable strict
       as $$ select (string_to_array(path, '/'))[1:greatest(cardinality(string_to_array(path, '/')) - 1, 0)] $$`,
    `create or replace function storage.filename(path text) returns text language sql immutable strict
       as $$ select (string_to_array(path, '/'))[cardinality(string_to_array(path, '/'))] $$`,
    `create or replace function storage.extension(path text) returns text language sql immutable strict
       as $$ select case when storage.filename(path) like '%.%' then lower(regexp_replace(storage.filename(path), '^.*\\.', '')) else '' end $$`,
    `alter table storage.buckets owner to ${owner}`,
    `alter table storage.objects owner to ${owner}`,
    'alter table storage.buckets enable row level security',
    'alter table storage.objects enable row level security',
    // Buckets change through commands only; the API roles may read them where a policy lets them.
    'grant select on storage.buckets to anon, authenticated, service_role',
    'grant select, insert, update, delete on storage.objects to anon, authenticated, service_role',
  ];
}

/**
 * Revision 4 (made again by revision 5): buckets change through commands
 * only, so that each change is in the project's history (ARCHITECTURE.md:
 * everything an operator changes is). The owner owns `storage.buckets`
 * (policies need it), and the SQL console runs as the owner: an INSERT,
 * UPDATE, DELETE or TRUNCATE of buckets from any session but the workflow's
 * apply role (which applies bucket events as the owner, by SET ROLE) or a
 * superuser's is refused, with a hint to the storage API. Revision 4 refused
 * the owner's sessions only, which a function of the owner's with SECURITY
 * DEFINER, called through the data API, got around. The owner may still drop
 * the trigger: that is DDL, and the console records it. Safe to run again.
 */
export function bucketGuardSql(applyRole: string): string[] {
  return [
    `create or replace function baseplane_meta.buckets_change_through_api() returns trigger
       language plpgsql set search_path = pg_catalog as $$
       begin
         if session_user <> ${literal(applyRole)} and not coalesce((select r.rolsuper from pg_roles r where r.rolname = session_user), false) then
           raise exception 'buckets change through the storage API, so that each change is in the project''s history'
             using errcode = '42501', hint = 'create, update or delete buckets with POST, PATCH or DELETE /api/projects/<id>/storage/buckets';
         end if;
         return null;
       end
     $$`,
    'revoke all on function baseplane_meta.buckets_change_through_api() from public',
    `create or replace trigger buckets_change_through_api before insert or update or delete or truncate on storage.buckets
       for each statement execute function baseplane_meta.buckets_change_through_api()`,
  ];
}

/**
 * Revision 6: the version an object's bytes are stored as (`<path>\t<version>`
 * in the object store, contracts' object-keys.ts), null for objects stored
 * before it, whose bytes stay at the path's own key. An upload stores a new
 * version and names it in the row it commits; the version it replaced is
 * deleted after. The check keeps what the row names a key every store can
 * hold, whatever the SQL console writes. Adding a nullable column rewrites
 * nothing. Safe to run again.
 */
export function objectVersionSql(): string[] {
  return [`alter table storage.objects add column if not exists version text check (version ~ '^[0-9A-Za-z_-]{1,64}$')`];
}
