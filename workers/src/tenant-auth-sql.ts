/**
 * The end-user directory of a tenant database, schema `auth`: users,
 * sessions with their refresh tokens (stored hashed). Owned by the installing
 * superuser; the data plane works on it as the project's owner role.
 */

import { ident } from '@baseplane/contracts';

export function authSchemaSql(ownerRole: string): string[] {
  const owner = ident(ownerRole);
  return [
    `create table if not exists auth.users (
       id uuid primary key default gen_random_uuid(),
       email text not null,
       encrypted_password text,
       email_verified_at timestamptz,
       username text,
       first_name text,
       last_name text,
       avatar_url text,
       created_at timestamptz not null default now(),
       updated_at timestamptz not null default now(),
       last_sign_in_at timestamptz
     )`,
    'create unique index if not exists users_email_key on auth.users (lower(email))',
    `create table if not exists auth.sessions (
       id uuid primary key default gen_random_uuid(),
       user_id uuid not null references auth.users on delete cascade,
       created_at timestamptz not null default now(),
       revoked_at timestamptz,
       -- Last verified reauthentication (POST /reauth/verify): sensitive changes need a recent one.
       reauthenticated_at timestamptz,
       -- The session's refresh token: which one is current (each rotation counts one up), the
       -- SHA-256 of it (the token itself is never stored), when it was last rotated, until when it is good.
       refresh_generation int not null default 0,
       refresh_hash text not null,
       rotated_at timestamptz not null default now(),
       refresh_expires_at timestamptz not null
     )`,
    'create index if not exists sessions_user on auth.sessions (user_id)',
    // One-time codes: only a keyed hash is kept; unique among the live ones (of a purpose here, of all since
    // revision 7: liveCodesUniqueSql).
    `create table if not exists auth.one_time_codes (
       id uuid primary key default gen_random_uuid(),
       purpose text not null,
       email text not null,
       user_id uuid references auth.users on delete cascade,
       code_hash text not null,
       expires_at timestamptz not null,
       attempts int not null default 0,
       used_at timestamptz,
       created_at timestamptz not null default now()
     )`,
    'create unique index if not exists one_time_codes_live on auth.one_time_codes (purpose, code_hash) where used_at is null',
    'create index if not exists one_time_codes_address on auth.one_time_codes (purpose, lower(email)) where used_at is null',
    // Fixed-window counters for issuing and verifying codes, per address and per client IP.
    `create table if not exists auth.rate_limits (
       bucket text primary key,
       window_start timestamptz not null,
       hits int not null
     )`,
    `grant select, insert, update, delete on all tables in schema auth to ${owner}`,
  ];
}

/**
 * Tenant schema revision 7: live codes are unique across all purposes, not
 * per purpose. A code given without its address is looked up among several
 * purposes at once (`/magic-link/verify`: sign-in and invitation codes), so
 * an invitation that drew the digits of someone's live sign-in code let that
 * someone sign in as the invitee. Live codes sharing their digits now are all
 * retired, not only the older: whoever holds one knows the other's digits.
 * The table is locked against writes first, so no duplicate lands between
 * the retiring and the index.
 */
export function liveCodesUniqueSql(): string[] {
  return [
    'lock table auth.one_time_codes in share row exclusive mode',
    `update auth.one_time_codes c set used_at = now()
     where c.used_at is null
       and exists (select from auth.one_time_codes o where o.used_at is null and o.code_hash = c.code_hash and o.id <> c.id)`,
    'create unique index if not exists one_time_codes_live_any_purpose on auth.one_time_codes (code_hash) where used_at is null',
    'drop index if exists auth.one_time_codes_live',
  ];
}
