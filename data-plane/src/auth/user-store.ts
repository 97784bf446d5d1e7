/**
 * The SQL of the end-user directory in a tenant's `auth` schema: users,
 * sessions and refresh tokens (only their SHA-256 is stored; each is spent on
 * use, and a spent one presented again revokes its whole session).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { PoolClient } from 'pg';
import { ApiError, type EndUser } from '@baseplane/contracts';

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

export async function createUser(
  tx: PoolClient,
  input: { email: string; passwordHash: string; firstName?: string; lastName?: string; username?: string },
): Promise<StoredUser> {
  try {
    const { rows } = await tx.query<UserRow>(
      `insert into auth.users (email, encrypted_password, first_name, last_name, username, last_sign_in_at)
       values ($1, $2, $3, $4, $5, now()) returning *`,
      [input.email, input.passwordHash, input.firstName ?? null, input.lastName ?? null, input.username ?? null],
    );
    return toUser(rows[0]!);
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new ApiError(409, 'user_already_exists', 'a user with this email already exists');
    throw error;
  }
}

/** A user who signs in by emailed code only (magic link, invite): no password. */
export async function createPasswordlessUser(tx: PoolClient, email: string): Promise<StoredUser> {
  const { rows } = await tx.query<UserRow>('insert into auth.users (email) values ($1) returning *', [email]);
  return toUser(rows[0]!);
}

export async function markEmailVerified(tx: PoolClient, userId: string): Promise<StoredUser> {
  const { rows } = await tx.query<UserRow>(
    'update auth.users set email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = $1 returning *',
    [userId],
  );
  if (!rows[0]) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
  return toUser(rows[0]);
}

export async function setPassword(tx: PoolClient, userId: string, passwordHash: string): Promise<void> {
  await tx.query('update auth.users set encrypted_password = $2, updated_at = now() where id = $1', [userId, passwordHash]);
}

export async function findUserByEmail(tx: PoolClient, email: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>('select * from auth.users where lower(email) = lower($1)', [email]);
  return rows[0] && toUser(rows[0]);
}

export async function findUser(tx: PoolClient, id: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>('select * from auth.users where id = $1', [id]);
  return rows[0] && toUser(rows[0]);
}

export async function touchSignIn(tx: PoolClient, userId: string): Promise<void> {
  await tx.query('update auth.users set last_sign_in_at = now() where id = $1', [userId]);
}

export async function startSession(tx: PoolClient, userId: string): Promise<string> {
  const { rows } = await tx.query<{ id: string }>('insert into auth.sessions (user_id) values ($1) returning id', [userId]);
  return rows[0]!.id;
}

export async function issueRefreshToken(tx: PoolClient, sessionId: string, userId: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await tx.query(
    `insert into auth.refresh_tokens (token_hash, session_id, user_id, expires_at) values ($1, $2, $3, now() + make_interval(secs => $4))`,
    [hashToken(token), sessionId, userId, REFRESH_TOKEN_TTL_SECONDS],
  );
  return token;
}

export type SpentRefreshToken = { kind: 'spent'; sessionId: string; userId: string } | { kind: 'reused' } | { kind: 'invalid' };

/**
 * Spends a refresh token: its session and user, for a new token on the same
 * session. A token spent before (outside the grace) revokes the session; the
 * caller commits that and then refuses.
 */
export async function spendRefreshToken(tx: PoolClient, token: string): Promise<SpentRefreshToken> {
  const { rows } = await tx.query<{ session_id: string; user_id: string; revoked_at: Date | null; expired: boolean; in_grace: boolean; session_revoked: boolean }>(
    `select t.session_id, t.user_id, t.revoked_at, t.expires_at <= now() as expired,
            t.revoked_at > now() - make_interval(secs => $2) as in_grace, s.revoked_at is not null as session_revoked
     from auth.refresh_tokens t join auth.sessions s on s.id = t.session_id
     where t.token_hash = $1 for update of t`,
    [hashToken(token), REFRESH_REUSE_GRACE_SECONDS],
  );
  const row = rows[0];
  if (!row || row.expired || row.session_revoked) return { kind: 'invalid' };
  if (row.revoked_at !== null && !row.in_grace) {
    await revokeSession(tx, row.session_id);
    return { kind: 'reused' };
  }
  if (row.revoked_at === null) await tx.query('update auth.refresh_tokens set revoked_at = now() where token_hash = $1', [hashToken(token)]);
  return { kind: 'spent', sessionId: row.session_id, userId: row.user_id };
}

export async function sessionIsLive(tx: PoolClient, sessionId: string): Promise<boolean> {
  const { rowCount } = await tx.query('select 1 from auth.sessions where id = $1 and revoked_at is null', [sessionId]);
  return (rowCount ?? 0) > 0;
}

export async function revokeSession(tx: PoolClient, sessionId: string): Promise<void> {
  await tx.query('update auth.sessions set revoked_at = coalesce(revoked_at, now()) where id = $1', [sessionId]);
}

export async function revokeAllSessions(tx: PoolClient, userId: string): Promise<void> {
  await tx.query('update auth.sessions set revoked_at = coalesce(revoked_at, now()) where user_id = $1', [userId]);
}
