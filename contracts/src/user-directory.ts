/**
 * The SQL of the end-user directory in a tenant's `auth` schema: users and
 * sessions with their refresh tokens (only the SHA-256 of a session's current
 * one is stored; each is spent on use, and a spent one presented again
 * revokes its whole session). Shared by
 * the data plane (the auth API) and the control plane (the operators' users
 * API); it runs on a client passed in, so contracts opens no connection.
 */
import { emailKey, type EndUser } from './auth';
import { ApiError } from './errors';

/** What these functions need of a database client (pg's PoolClient is one). */
export interface SqlClient {
  query<R extends Record<string, any> = any>(text: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
  /** A named statement: each connection parses and plans it once (pg's QueryConfig). */
  query<R extends Record<string, any> = any>(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[]; rowCount: number | null }>;
}

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

/**
 * The columns of {@link UserRow}, named in every statement rather than `*`:
 * a prepared statement whose `*` grew a column fails on every connection
 * that prepared it ("cached plan must not change result type"), so a column
 * added to auth.users would end every signed-in request until restart.
 */
const USER_COLUMNS = ['id', 'email', 'encrypted_password', 'email_verified_at', 'username', 'first_name', 'last_name', 'avatar_url', 'created_at', 'updated_at', 'last_sign_in_at'] as const;
const USER = USER_COLUMNS.join(', ');
const U_USER = USER_COLUMNS.map((column) => `u.${column}`).join(', ');

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

/** A new user; the address is stored lowercased (by the data plane's flows and the operators' users API alike). */
export async function createUser(tx: SqlClient, input: NewUser): Promise<StoredUser> {
  return (await writeUser(
    tx,
    `insert into auth.users (email, encrypted_password, first_name, last_name, username, email_verified_at, last_sign_in_at)
     values ($1, $2, $3, $4, $5, case when $6::boolean then now() end, case when $7::boolean then now() end) returning ${USER}`,
    [emailKey(input.email), input.passwordHash, input.firstName ?? null, input.lastName ?? null, input.username ?? null, input.emailVerified ?? false, input.signingIn ?? false],
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
  // Stored in its normal form, as GoTrue stores them (lookups lower the column, so rows stored as typed before still match).
  if (change.email !== undefined) set('email', emailKey(change.email));
  if (change.emailVerified !== undefined) {
    values.push(change.emailVerified);
    sets.push(`email_verified_at = case when $${values.length}::boolean then coalesce(email_verified_at, now()) end`);
  }
  return writeUser(tx, `update auth.users set ${[...sets, 'updated_at = now()'].join(', ')} where id = $1 returning ${USER}`, values);
}

export async function deleteUser(tx: SqlClient, userId: string): Promise<StoredUser | undefined> {
  // Sessions and refresh tokens go with the user (on delete cascade): they die at once.
  const { rows } = await tx.query<UserRow>(`delete from auth.users where id = $1 returning ${USER}`, [userId]);
  return rows[0] && toUser(rows[0]);
}

/** One page of users, newest first; `search` matches email, username and names, case-insensitively. */
export async function listUsers(tx: SqlClient, search: string | undefined, limit: number, offset: number): Promise<{ users: StoredUser[]; total: number }> {
  const where = `$1::text is null or email ilike $1 or username ilike $1 or first_name ilike $1 or last_name ilike $1`;
  // The search is a substring: LIKE's own wildcards in it are taken literally.
  const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const { rows } = await tx.query<UserRow>(`select ${USER} from auth.users where ${where} order by created_at desc, id limit $2 offset $3`, [pattern, limit, offset]);
  const counted = await tx.query<{ total: string }>(`select count(*) as total from auth.users where ${where}`, [pattern]);
  return { users: rows.map(toUser), total: Number(counted.rows[0]!.total) };
}

export async function markEmailVerified(tx: SqlClient, userId: string): Promise<StoredUser> {
  const { rows } = await tx.query<UserRow>(
    `update auth.users set email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = $1 returning ${USER}`,
    [userId],
  );
  if (!rows[0]) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
  return toUser(rows[0]);
}

/**
 * Marks the address verified by a code that signs its holder in (a magic
 * link, an invitation). When it was not verified before, whoever made the
 * account never proved the address was theirs (anyone may sign up someone
 * else's): the password they set is cleared and every session of the user
 * ends, so the address's owner takes over an account nobody else can enter
 * (they may set a password by reset or PATCH /me). A user already verified
 * keeps both. True when the address was verified just now.
 */
export async function verifyBySignInCode(tx: SqlClient, userId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update auth.users set email_verified_at = now(), encrypted_password = null, updated_at = now()
     where id = $1 and email_verified_at is null`,
    [userId],
  );
  if ((rowCount ?? 0) === 0) return false;
  await revokeAllSessions(tx, userId);
  return true;
}

export async function setPassword(tx: SqlClient, userId: string, passwordHash: string): Promise<void> {
  await tx.query('update auth.users set encrypted_password = $2, updated_at = now() where id = $1', [userId, passwordHash]);
}

export async function findUserByEmail(tx: SqlClient, email: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>(`select ${USER} from auth.users where lower(email) = $1`, [emailKey(email)]);
  return rows[0] && toUser(rows[0]);
}

export async function findUser(tx: SqlClient, id: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>(`select ${USER} from auth.users where id = $1`, [id]);
  return rows[0] && toUser(rows[0]);
}

/** Records a sign-in; answers the user as it now is (undefined: no such user), so the session shows this sign-in. */
export async function touchSignIn(tx: SqlClient, userId: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>(`update auth.users set last_sign_in_at = now() where id = $1 returning ${USER}`, [userId]);
  return rows[0] && toUser(rows[0]);
}

/**
 * Records a sign-in by password if the password checked is still the
 * user's; undefined when it is not (changed or cleared since it was read: a
 * reset, or an address its owner took over), so that a sign-in on its way
 * then opens nothing. Waits for a change of the row under way and judges by
 * what it left.
 */
export async function touchPasswordSignIn(tx: SqlClient, userId: string, checkedHash: string): Promise<StoredUser | undefined> {
  const { rows } = await tx.query<UserRow>(`update auth.users set last_sign_in_at = now() where id = $1 and encrypted_password = $2 returning ${USER}`, [userId, checkedHash]);
  return rows[0] && toUser(rows[0]);
}

/**
 * Takes the user's row for a password change by a session, and answers
 * whether that session is still live once it has it: what ends sessions
 * for a reason (a reset, an address taken over) takes the row first, so a
 * change whose session it ended while the change was on its way finds it
 * ended here, rather than setting a password after it.
 */
export async function holdForSessionChange(tx: SqlClient, userId: string, sessionId: string): Promise<boolean> {
  await tx.query('select 1 from auth.users where id = $1 for update', [userId]);
  // A statement of its own: it sees what committed while the row was waited for.
  const { rowCount } = await tx.query('select 1 from auth.sessions where id = $1 and user_id = $2 and revoked_at is null', [sessionId, userId]);
  return (rowCount ?? 0) > 0;
}

/** Where a new session starts: its id and its first refresh token's hash, both made by the caller (the token names its session). */
export interface NewSession {
  id: string;
  refreshHash: string;
  ttlSeconds: number;
}

export async function startSession(tx: SqlClient, userId: string, session: NewSession): Promise<void> {
  await tx.query(
    'insert into auth.sessions (id, user_id, refresh_hash, refresh_expires_at) values ($1, $2, $3, now() + make_interval(secs => $4))',
    [session.id, userId, session.refreshHash, session.ttlSeconds],
  );
}

/** A refresh token as presented: the session and generation it names (its MAC already checked by the caller) and its hash. */
export interface PresentedRefreshToken {
  sessionId: string;
  generation: number;
  hash: string;
}

export type RotatedRefreshToken = { kind: 'renewed'; user: StoredUser } | { kind: 'reused' } | { kind: 'invalid' } | { kind: 'unverified' };

/**
 * Spends the session's current refresh token (generation n) for the next
 * one (n + 1, whose hash the caller passes), in one primary-key update of
 * the session row; the user when it did, undefined otherwise (then
 * `judgeRefreshToken` says why).
 */
export async function renewRefreshToken(
  client: SqlClient,
  presented: PresentedRefreshToken,
  nextHash: string,
  ttlSeconds: number,
  requireVerified: boolean,
): Promise<StoredUser | undefined> {
  const { rows } = await client.query<UserRow>({
    // Named: each connection plans it once.
    name: 'auth_renew_refresh_token',
    text: `update auth.sessions s set refresh_generation = s.refresh_generation + 1, refresh_hash = $4, rotated_at = now(),
              refresh_expires_at = now() + make_interval(secs => $5)
           from auth.users u
           where s.id = $1 and s.refresh_generation = $2 and s.refresh_hash = $3 and s.revoked_at is null and s.refresh_expires_at > now()
             and u.id = s.user_id and (u.email_verified_at is not null or not $6::boolean)
           returning ${U_USER}`,
    values: [presented.sessionId, presented.generation, presented.hash, nextHash, ttlSeconds, requireVerified],
  });
  return rows[0] && toUser(rows[0]);
}

/**
 * Why a refresh token did not renew, decided under the session's row lock
 * (a concurrent rotation has committed by then): generation n − 1 within
 * the grace of its rotation is the same client refreshing twice at once and
 * is answered like the winner (renewed, the same next token); any older
 * generation is a reuse and revokes the session; with `requireVerified`, an
 * unverified user's token is refused and stays unspent.
 */
export async function judgeRefreshToken(client: SqlClient, presented: PresentedRefreshToken, nextHash: string, requireVerified: boolean): Promise<RotatedRefreshToken> {
  const { rows } = await client.query<UserRow & { outcome: 'renewed' | 'reused' | 'invalid' | 'unverified' }>({
    name: 'auth_judge_refresh_token',
    text: `with s as (
             select s.id, s.user_id, s.refresh_generation as current, s.refresh_hash,
                    s.revoked_at is null and s.refresh_expires_at > now() as live,
                    s.rotated_at > now() - make_interval(secs => $3) as recent
             from auth.sessions s where s.id = $1 for update
           ),
           judged as (
             select s.*, u.email_verified_at is not null or not $5::boolean as allowed,
                    case
                      when not s.live or $2 > s.current then 'invalid'
                      -- The winner's rotation of this very token, moments ago: the same answer it got.
                      when $2 = s.current - 1 and s.recent and s.refresh_hash = $4 then 'grace'
                      when $2 = s.current then 'current'
                      else 'reused'
                    end as verdict
             from s join auth.users u on u.id = s.user_id
           ),
           revoke as (
             update auth.sessions t set revoked_at = now() from judged j where t.id = j.id and j.verdict = 'reused'
           )
           select case
                    when j.verdict is null or j.verdict = 'invalid' then 'invalid'
                    when j.verdict = 'reused' then 'reused'
                    when not j.allowed then 'unverified'
                    when j.verdict = 'grace' then 'renewed'
                    -- The current generation with another hash: not a token this session issued.
                    else 'invalid'
                  end as outcome, ${U_USER}
           from (select 1) one left join judged j on true left join auth.users u on u.id = j.user_id`,
    values: [presented.sessionId, presented.generation, REFRESH_REUSE_GRACE_SECONDS, nextHash, requireVerified],
  });
  const row = rows[0]!;
  return row.outcome === 'renewed' ? { kind: 'renewed', user: toUser(row) } : { kind: row.outcome };
}

/** The user of a live session, in one statement (the check every signed-in request makes). */
export async function findSessionUser(client: SqlClient, sessionId: string, userId: string): Promise<StoredUser | undefined> {
  const { rows } = await client.query<UserRow>({
    name: 'auth_find_session_user',
    text: `select ${U_USER} from auth.sessions s join auth.users u on u.id = s.user_id where s.id = $1 and u.id = $2 and s.revoked_at is null`,
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

/** How long a verified reauthentication lets a session make one sensitive change. */
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

/**
 * Spends a session's recent reauthentication on one sensitive change, as
 * Supabase's single-use nonce is: true when there was one, which no other
 * change can then use. Two changes at once take the row in turn, and the
 * second finds it spent. In the change's transaction, so a change that fails
 * gives it back.
 */
export async function spendReauthentication(tx: SqlClient, sessionId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `update auth.sessions set reauthenticated_at = null
     where id = $1 and reauthenticated_at > now() - make_interval(secs => $2)`,
    [sessionId, REAUTH_WINDOW_SECONDS],
  );
  return (rowCount ?? 0) > 0;
}
