/**
 * The SQL of the end-user directory in a tenant's `auth` schema: users,
 * sessions and refresh tokens (only their SHA-256 is stored; each is spent on
 * use, and a spent one presented again revokes its whole session). Shared by
 * the data plane (the auth API) and the control plane (the operators' users
 * API); it runs on a client passed in, so contracts opens no connection.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { EndUser } from './auth';
import { ApiError } from './errors';

/** What these functions need of a database client (pg's PoolClient is one). */
export interface SqlClient {
  query<R extends Record<string, any> = any>(text: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
  /** A named statement: each connection parses and plans it once (pg's QueryConfig). */
  query<R extends Record<string, any> = any>(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[]; rowCount: number | null }>;
}

export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
/** A client refreshing twice at once (two tabs) is not a thief: a spent token may be used again this soon. */
export const REFRESH_REUSE_GRACE_SECONDS = 10;

interface UserRow {
  id: string;
  email: string;
  encrypted_password: string | null;
  email_verified_at: Date | null;
  username: string | null;
  first_name: string | null;
  last_name: string | null;
  avatar_url: string | null;
  created_at: Date;
  updated_at: Date;
  last_sign_in_at: Date | null;
}

export type StoredUser = EndUser & { passwordHash: string | null };

function toUser(row: UserRow): StoredUser {
  return {
    id: row.id,
    email: row.email,
    username: row.username,
    emailVerified: row.email_verified_at !== null,
    firstName: row.first_name,
    lastName: row.last_name,
    avatarUrl: row.avatar_url,
    providers: row.encrypted_password === null ? [] : ['email'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    lastSignInAt: row.last_sign_in_at?.toISOString() ?? null,
    passwordHash: row.encrypted_password,
  };
}

/** The user as the API shows it: never the password hash. */
export function publicUser({ passwordHash: _, ...user }: StoredUser): EndUser {
  return user;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

const alreadyExists = () => new ApiError(409, 'user_already_exists', 'a user with this email already exists');

/** Runs an insert or update of a user; a taken email (any case) is 409 `user_already_exists`. */
async function writeUser(tx: SqlClient, text: string, values: unknown[]): Promise<StoredUser | undefined> {
  try {
    const { rows } = await tx.query<UserRow>(text, values);
    return rows[0] && toUser(rows[0]);
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw alreadyExists();
    throw error;
  }
}

export interface NewUser {
  email: string;
  /** null: the user signs in by emailed code only (magic link, invite). */
  passwordHash: string | null;
  firstName?: string | undefined;
  lastName?: string | undefined;
  username?: string | undefined;
  emailVerified?: boolean | undefined;
  /** True when the user is signing in as they are created (sign-up). */
  signingIn?: boolean | undefined;
}

export async function createUser(tx: SqlClient, input: NewUser): Promise<StoredUser> {
  return (await writeUser(
    tx,
    `insert into auth.users (email, encrypted_password, first_name, last_name, username, email_verified_at, last_sign_in_at)
     values ($1, $2, $3, $4, $5, case when $6::boolean then now() end, case when $7::boolean then now() end) returning *`,
    [input.email, input.passwordHash, input.firstName ?? null, input.lastName ?? null, input.username ?? null, input.emailVerified ?? false, input.signingIn ?? false],
  ))!;
}

/** A user who signs in by emailed code only (magic link, invite): no password. */
export function createPasswordlessUser(tx: SqlClient, email: string): Promise<StoredUser> {
  return createUser(tx, { email, passwordHash: null });
}

/** The profile fields a user or an operator may change; `undefined` leaves a field as it is. */
export interface ProfileChange {
  firstName?: string | null | undefined;
  lastName?: string | null | undefined;
  username?: string | null | undefined;
  email?: string | undefined;
  emailVerified?: boolean | undefined;
}

/** Applies a profile change; a new email is 409 when taken. Undefined ⇒ no such user. */
export function updateUser(tx: SqlClient, userId: string, change: ProfileChange): Promise<StoredUser | undefined> {
  const sets: string[] = [];
  const values: unknown[] = [userId];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (change.firstName !== undefined) set('first_name', change.firstName);
  if (change.lastName !== undefined) set('last_name', change.lastName);
  if (change.username !== undefined) set('username', change.username);
  if (change.email !== undefined) set('email', change.email);
  if (change.emailVerified !== undefined) {
    values.push(change.emailVerified);
    sets.push(`email_verified_at = case when $${values.length}::boolean then coalesce(email_verified_at, now()) end`);
  }
  return writeUser(tx, `update auth.users set ${[...sets, 'updated_at = now()'].join(', ')} where id = $1 returning *`, values);
}

export async function deleteUser(tx: SqlClient, userId: string): Promise<StoredUser | undefined> {
  // Sessions and refresh tokens go with the user (on delete cascade): they die at once.
  const { rows } = await tx.query<UserRow>('delete from auth.users where id = $1 returning *', [userId]);
  return rows[0] && toUser(rows[0]);
}

/** One page of users, newest first; `search` matches email, username and names, case-insensitively. */
export async function listUsers(tx: SqlClient, search: string | undefined, limit: number, offset: number): Promise<{ users: StoredUser[]; total: number }> {
  const where = `$1::text is null or email ilike $1 or username ilike $1 or first_name ilike $1 or last_name ilike $1`;
  // The search is a substring: LIKE's own wildcards in it are taken literally.
  const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const { rows } = await tx.query<UserRow>(`select * from auth.users where ${where} order by created_at desc, id limit $2 offset $3`, [pattern, limit, offset]);
  const counted = await tx.query<{ total: string }>(`select count(*) as total from auth.users where ${where}`, [pattern]);
  return { users: rows.map(toUser), total: Number(counted.rows[0]!.total) };
}

export async function markEmailVerified(tx: SqlClient, userId: string): Promise<StoredUser> {
  const { rows } = await tx.query<UserRow>(
    'update auth.users set email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = $1 returning *',
    [userId],
  );
  if (!rows[0]) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
  return toUser(rows[0]);
}

export async function setPassword(tx: SqlClient, userId: string, passwordHash: string): Promise<void> {
  await tx.query('update auth.users set encrypted_password = $2, updated_at = now() where id = $1', [userId, passwordHash]);
}

export async function findUserByEmail(tx: SqlClient, email: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>('select * from auth.users where lower(email) = lower($1)', [email]);
  return rows[0] && toUser(rows[0]);
}

export async function findUser(tx: SqlClient, id: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>('select * from auth.users where id = $1', [id]);
  return rows[0] && toUser(rows[0]);
}

export async function touchSignIn(tx: SqlClient, userId: string): Promise<void> {
  await tx.query('update auth.users set last_sign_in_at = now() where id = $1', [userId]);
}

export async function startSession(tx: SqlClient, userId: string): Promise<string> {
  const { rows } = await tx.query<{ id: string }>('insert into auth.sessions (user_id) values ($1) returning id', [userId]);
  return rows[0]!.id;
}

export async function issueRefreshToken(tx: SqlClient, sessionId: string, userId: string, ttlSeconds = REFRESH_TOKEN_TTL_SECONDS): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await tx.query(
    `insert into auth.refresh_tokens (token_hash, session_id, user_id, expires_at) values ($1, $2, $3, now() + make_interval(secs => $4))`,
    [hashToken(token), sessionId, userId, ttlSeconds],
  );
  return token;
}

export type RotatedRefreshToken =
  | { kind: 'renewed'; user: StoredUser; sessionId: string; refreshToken: string }
  | { kind: 'reused' }
  | { kind: 'invalid' }
  | { kind: 'unverified' };

/**
 * Spends a refresh token and issues the next one on the same session, in one
 * statement (atomic on its own, one round trip). A token spent before, outside
 * the grace, revokes its whole session instead; with `requireVerified`, the
 * token of a user whose email is unverified is refused and stays unspent.
 */
export async function rotateRefreshToken(client: SqlClient, token: string, ttlSeconds: number, requireVerified: boolean): Promise<RotatedRefreshToken> {
  const next = randomBytes(32).toString('base64url');
  const { rows } = await client.query<UserRow & { outcome: 'renewed' | 'reused' | 'invalid' | 'unverified'; session_id: string | null }>({
    // Named: planning this statement costs more than running it, so each connection plans it once.
    name: 'auth_rotate_refresh_token',
    text: `with old as (
       select t.token_hash, t.session_id, t.user_id, t.revoked_at, t.expires_at <= now() as expired,
              t.revoked_at > now() - make_interval(secs => $2) as in_grace, s.revoked_at is not null as session_revoked
       from auth.refresh_tokens t join auth.sessions s on s.id = t.session_id
       where t.token_hash = $1 for update of t
     ),
     usable as (
       select o.*, u.email_verified_at is not null as verified from old o join auth.users u on u.id = o.user_id
       where not o.expired and not o.session_revoked and (o.revoked_at is null or o.in_grace)
     ),
     renewable as (select * from usable where verified or not $5::boolean),
     spend as (
       update auth.refresh_tokens t set revoked_at = now() from renewable r
       where t.token_hash = r.token_hash and r.revoked_at is null
     ),
     issue as (
       insert into auth.refresh_tokens (token_hash, session_id, user_id, expires_at)
       select $3, r.session_id, r.user_id, now() + make_interval(secs => $4) from renewable r
     ),
     reuse as (
       update auth.sessions s set revoked_at = coalesce(s.revoked_at, now()) from old o
       where s.id = o.session_id and not o.expired and not o.session_revoked and o.revoked_at is not null and not o.in_grace
     ),
     outcome as (
       select case
         when exists (select from old where revoked_at is not null and not in_grace and not expired and not session_revoked) then 'reused'
         when exists (select from renewable) then 'renewed'
         when exists (select from usable) then 'unverified'
         else 'invalid' end as outcome
     )
     select o.outcome, r.session_id, u.* from outcome o
     left join renewable r on o.outcome = 'renewed'
     left join auth.users u on u.id = r.user_id`,
    values: [hashToken(token), REFRESH_REUSE_GRACE_SECONDS, hashToken(next), ttlSeconds, requireVerified],
  });
  const row = rows[0]!;
  if (row.outcome !== 'renewed') return { kind: row.outcome };
  return { kind: 'renewed', user: toUser(row), sessionId: row.session_id!, refreshToken: next };
}

/** The user of a live session, in one statement (the check every signed-in request makes). */
export async function findSessionUser(client: SqlClient, sessionId: string, userId: string): Promise<StoredUser | undefined> {
  const { rows } = await client.query<UserRow>({
    name: 'auth_find_session_user',
    text: 'select u.* from auth.sessions s join auth.users u on u.id = s.user_id where s.id = $1 and u.id = $2 and s.revoked_at is null',
    values: [sessionId, userId],
  });
  return rows[0] && toUser(rows[0]);
}

export async function revokeSession(tx: SqlClient, sessionId: string): Promise<void> {
  await tx.query('update auth.sessions set revoked_at = coalesce(revoked_at, now()) where id = $1', [sessionId]);
}

export async function revokeAllSessions(tx: SqlClient, userId: string): Promise<void> {
  await tx.query('update auth.sessions set revoked_at = coalesce(revoked_at, now()) where user_id = $1', [userId]);
}

/** Ends every session of a user but one (a password change keeps the session that made it). */
export async function revokeOtherSessions(tx: SqlClient, userId: string, keepSessionId: string): Promise<void> {
  await tx.query('update auth.sessions set revoked_at = coalesce(revoked_at, now()) where user_id = $1 and id <> $2', [userId, keepSessionId]);
}

/** How long a verified reauthentication lets a session make a sensitive change. */
export const REAUTH_WINDOW_SECONDS = 300;

/** Marks a session as just reauthenticated; answers until when that counts. */
export async function markReauthenticated(tx: SqlClient, sessionId: string): Promise<Date> {
  const { rows } = await tx.query<{ until: Date }>(
    `update auth.sessions set reauthenticated_at = now() where id = $1
     returning reauthenticated_at + make_interval(secs => $2) as until`,
    [sessionId, REAUTH_WINDOW_SECONDS],
  );
  if (!rows[0]) throw new ApiError(401, 'invalid_token', 'the session of this token has ended');
  return rows[0].until;
}

export async function recentlyReauthenticated(tx: SqlClient, sessionId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'select 1 from auth.sessions where id = $1 and reauthenticated_at > now() - make_interval(secs => $2)',
    [sessionId, REAUTH_WINDOW_SECONDS],
  );
  return (rowCount ?? 0) > 0;
}
