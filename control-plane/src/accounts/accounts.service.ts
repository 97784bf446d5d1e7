/**
 * Platform accounts and teams: sign-up (with a personal team), login with the
 * same answer for an unknown email and a wrong password, membership lookups
 * and changes. Sign-ups and failed logins are rate limited per client IP
 * (login-limits.ts).
 */
import { randomUUID } from 'node:crypto';
import argon2 from 'argon2';
import type { Pool, PoolClient } from 'pg';
import { ApiError, PASSWORD_HASH_COST, inTransaction, notFound, type AddMemberBody } from '@baseplane/contracts';
import { RateLimitSweep, count, giveBackSlots, loginFailureBuckets, signupBuckets, takeLoginSlots } from './login-limits';
import type { PlatformTokenService, PlatformTokens } from './platform-tokens';

/** argon2id at OWASP's minimum (contracts' PASSWORD_HASH_COST). */
export const ARGON2_OPTIONS = { type: argon2.argon2id, ...PASSWORD_HASH_COST } as const;

type TeamRole = NonNullable<AddMemberBody['role']>;

export interface AccountView {
  id: string;
  email: string;
  name: string;
}
export interface TeamView {
  id: string;
  name: string;
  role: string;
}

export class AccountsService {
  private dummyHash: Promise<string> | undefined;
  private readonly sweep: RateLimitSweep;

  constructor(private readonly db: Pool, private readonly tokens: PlatformTokenService, report: (error: unknown) => void = () => undefined) {
    this.sweep = new RateLimitSweep(db, report);
  }

  /** `ip` is the caller's: every try counts against its sign-up limit, a refused one too. */
  async signup(email: string, password: string, name: string | undefined, ip: string): Promise<PlatformTokens & { user: AccountView; team: { id: string; name: string } }> {
    await count(this.db, signupBuckets(ip));
    this.sweep.touched();
    const passwordHash = await argon2.hash(password, ARGON2_OPTIONS);
    const accountId = randomUUID();
    const teamId = randomUUID();
    const displayName = name?.trim() || email.split('@')[0]!;
    const teamName = `${displayName}'s team`;
    const client = await this.db.connect();
    try {
      await client.query('begin');
      await client.query('insert into accounts (id, email, name, password_hash) values ($1, $2, $3, $4)', [accountId, email, displayName, passwordHash]);
      await client.query('insert into teams (id, name) values ($1, $2)', [teamId, teamName]);
      await client.query(`insert into team_members (team_id, account_id, role) values ($1, $2, 'owner')`, [teamId, accountId]);
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      if ((error as { code?: string }).code === '23505') throw new ApiError(409, 'user_already_exists', 'an account with this email already exists');
      throw error;
    } finally {
      client.release();
    }
    const tokens = await this.tokens.issue(accountId, email);
    return { ...tokens, user: { id: accountId, email, name: displayName }, team: { id: teamId, name: teamName } };
  }

  /**
   * Every try takes a failure slot of `ip`'s limits before its password is
   * checked, and a login that succeeds gives it back: past the limit the right
   * password is held back too, so guessing stops there however many tries come at once.
   */
  async login(email: string, password: string, ip: string): Promise<PlatformTokens & { user: AccountView; team: { id: string; name: string } | null }> {
    const { account, failures } = await inTransaction(this.db, async (tx: PoolClient) => {
      // The address as the lookup folds it, so its every spelling counts in one bucket.
      const { rows } = await tx.query<{ key: string; id: string | null; email: string; name: string; password_hash: string }>(
        `select lower($1) as key, a.id, a.email, a.name, a.password_hash
         from (select 1) as one left join accounts a on lower(a.email) = lower($1)`,
        [email],
      );
      const found = rows[0]!;
      const failures = loginFailureBuckets(ip, found.key);
      await takeLoginSlots(tx, failures);
      return { account: found.id === null ? undefined : { ...found, id: found.id }, failures };
    });
    this.sweep.touched();
    // Hash even when there is no account, so timing does not tell which emails exist.
    const ok = await argon2.verify(account?.password_hash ?? (await this.getDummyHash()), password);
    if (!account || !ok) throw new ApiError(400, 'invalid_credentials', 'invalid email or password');
    await giveBackSlots(this.db, failures);
    const tokens = await this.tokens.issue(account.id, account.email);
    const teams = await this.teamsOf(account.id);
    const team = teams.find((t) => t.role === 'owner') ?? teams[0] ?? null;
    return { ...tokens, user: { id: account.id, email: account.email, name: account.name }, team: team && { id: team.id, name: team.name } };
  }

  async me(accountId: string): Promise<AccountView & { teams: TeamView[] }> {
    const { rows } = await this.db.query<AccountView>('select id, email, name from accounts where id = $1', [accountId]);
    if (!rows[0]) throw new ApiError(401, 'invalid_token', 'account no longer exists');
    return { ...rows[0], teams: await this.teamsOf(accountId) };
  }

  async teamsOf(accountId: string): Promise<TeamView[]> {
    const { rows } = await this.db.query<TeamView>(
      `select t.id, t.name, m.role from team_members m join teams t on t.id = m.team_id
       where m.account_id = $1 order by t.created_at, t.id`,
      [accountId],
    );
    return rows;
  }

  async createTeam(accountId: string, name: string): Promise<TeamView> {
    const id = randomUUID();
    const client = await this.db.connect();
    try {
      await client.query('begin');
      await client.query('insert into teams (id, name) values ($1, $2)', [id, name]);
      await client.query(`insert into team_members (team_id, account_id, role) values ($1, $2, 'owner')`, [id, accountId]);
      await client.query('commit');
    } catch (error) {
      await client.query('rollback');
      // 23503: the token's account was deleted since it was issued (its token verifies until it expires).
      if ((error as { code?: string }).code === '23503') throw new ApiError(401, 'invalid_token', 'account no longer exists');
      throw error;
    } finally {
      client.release();
    }
    return { id, name, role: 'owner' };
  }

  /**
   * Adds an existing account to a team or changes its role, by Supabase's
   * rules: owners and admins add members and admins and change their roles;
   * only an owner makes an owner or changes an owner's role; the last owner
   * stays an owner (409 last_owner). The team's memberships are locked while
   * deciding, so two owners demoting each other cannot both succeed.
   */
  async addMember(accountId: string, teamId: string, email: string, role: TeamRole): Promise<{ teamId: string; accountId: string; email: string; role: string }> {
    const client = await this.db.connect();
    try {
      await client.query('begin');
      const { rows: members } = await client.query<{ account_id: string; role: TeamRole }>(
        'select account_id, role from team_members where team_id = $1 order by account_id for update',
        [teamId],
      );
      const mine = members.find((m) => m.account_id === accountId);
      if (!mine) throw notFound('team');
      if (mine.role === 'member') throw new ApiError(403, 'forbidden', 'only owners and admins add members');
      const { rows } = await client.query<{ id: string; email: string }>('select id, email from accounts where lower(email) = lower($1)', [email]);
      const member = rows[0];
      if (!member) throw notFound('account');
      const current = members.find((m) => m.account_id === member.id)?.role;
      if (mine.role !== 'owner' && (role === 'owner' || current === 'owner')) {
        throw new ApiError(403, 'forbidden', current === 'owner' ? "only an owner changes an owner's role" : 'only an owner makes an owner');
      }
      if (current === 'owner' && role !== 'owner' && members.filter((m) => m.role === 'owner').length === 1) {
        throw new ApiError(409, 'last_owner', 'the last owner of a team stays an owner', null, 'make another member an owner first');
      }
      await client.query(
        `insert into team_members (team_id, account_id, role) values ($1, $2, $3)
         on conflict (team_id, account_id) do update set role = excluded.role`,
        [teamId, member.id, role],
      );
      await client.query('commit');
      return { teamId, accountId: member.id, email: member.email, role };
    } catch (error) {
      await client.query('rollback');
      throw error;
    } finally {
      client.release();
    }
  }

  private getDummyHash(): Promise<string> {
    this.dummyHash ??= argon2.hash('not-a-real-password', ARGON2_OPTIONS);
    return this.dummyHash;
  }
}
