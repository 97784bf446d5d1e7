/**
 * One-time codes of the auth flows: 6 digits, stored as a keyed hash (a
 * leaked table does not give the codes away), valid for the project's
 * `otpTtl`, single use, burned after 5 wrong tries, unique among all live
 * codes whatever their purpose (a code given alone may be looked up among
 * several purposes: tenant schema revision 7). Issuing a new code for an
 * address retires its older ones. A code is never logged.
 */
import { createHmac, randomInt } from 'node:crypto';
import type { PoolClient } from 'pg';
import { ApiError, deriveSecret, emailKey } from '@baseplane/contracts';
import type { CodePurpose } from '../mail/templates';

export const MAX_WRONG_TRIES = 5;

/** Whose code is being redeemed: the address it went to, the signed-in user it is for, or any live one. */
export type CodeOwner = { email: string } | { userId: string } | undefined;

export interface RedeemedCode {
  email: string;
  userId: string | null;
}

export class CodeBook {
  constructor(private readonly platformSecret: string) {}

  private hash(projectId: string, code: string): string {
    return createHmac('sha256', deriveSecret(this.platformSecret, `one-time-codes:${projectId}`)).update(code).digest('hex');
  }

  /** Issues a fresh code for `email`; the previous live ones of that purpose and address stop working. */
  async issue(tx: PoolClient, projectId: string, purpose: CodePurpose, email: string, userId: string | null, ttlSeconds: number): Promise<string> {
    await tx.query(
      `update auth.one_time_codes set used_at = now()
       where used_at is null and purpose = $1
         and (lower(email) = $2 or user_id = $3 or expires_at <= now())`,
      [purpose, emailKey(email), userId],
    );
    for (let attempt = 0; attempt < 10; attempt++) {
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      await tx.query('savepoint issue_code');
      try {
        await tx.query(
          `insert into auth.one_time_codes (purpose, email, user_id, code_hash, expires_at)
           values ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
          [purpose, email, userId, this.hash(projectId, code), ttlSeconds],
        );
        await tx.query('release savepoint issue_code');
        return code;
      } catch (error) {
        // Another live code, of any purpose, has the same digits: draw again.
        await tx.query('rollback to savepoint issue_code');
        if ((error as { code?: string }).code !== '23505') throw error;
      }
    }
    throw new ApiError(503, 'service_unavailable', 'could not issue a code; try again');
  }

  /** Retires a code that never reached its address (its mail failed). */
  async withdraw(tx: PoolClient, projectId: string, purpose: CodePurpose, code: string): Promise<void> {
    await tx.query('update auth.one_time_codes set used_at = now() where used_at is null and purpose = $1 and code_hash = $2', [purpose, this.hash(projectId, code)]);
  }

  /**
   * Spends a code of one of `purposes`. With an owner (an address, or the
   * signed-in user), a wrong code counts against that owner's live code
   * (burned at the fifth); without, the code is looked up among the live
   * codes of those purposes and a wrong one burns nothing (the caller bounds
   * those tries: code-flow's code-only budget). Answers what the code was for, or a refusal that
   * the caller raises after commit (so tries and burns are kept).
   */
  async redeem(tx: PoolClient, projectId: string, purposes: CodePurpose[], otp: string, owner: CodeOwner): Promise<RedeemedCode | ApiError> {
    const hash = this.hash(projectId, otp);
    const [match, value] = owner === undefined ? ['code_hash = $2', hash] : 'email' in owner ? ['lower(email) = $2', emailKey(owner.email)] : ['user_id = $2::uuid', owner.userId];
    const { rows } = await tx.query<{ id: string; email: string; user_id: string | null; code_hash: string; expired: boolean; attempts: number }>(
      `select id, email, user_id, code_hash, expires_at <= now() as expired, attempts from auth.one_time_codes
       where used_at is null and purpose = any($1::text[]) and ${match}
       order by created_at desc limit 1 for update`,
      [purposes, value],
    );
    const code = rows[0];
    if (!code) return new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
    if (code.expired) {
      await tx.query('update auth.one_time_codes set used_at = now() where id = $1', [code.id]);
      return new ApiError(422, 'otp_expired', 'the code has expired; ask for a new one');
    }
    if (code.code_hash !== hash) {
      const tries = code.attempts + 1;
      const burned = tries >= MAX_WRONG_TRIES;
      await tx.query(`update auth.one_time_codes set attempts = $2, used_at = case when $3::boolean then now() end where id = $1`, [code.id, tries, burned]);
      return new ApiError(422, 'otp_invalid', burned ? 'too many wrong tries; the code is burned, ask for a new one' : 'the code is invalid');
    }
    await tx.query('update auth.one_time_codes set used_at = now() where id = $1', [code.id]);
    return { email: code.email, userId: code.user_id };
  }

  /**
   * The email change pending to `email`, if any: a user whose latest change
   * asked is to that address and has not completed (their email is not yet
   * it). Its code may have expired or been burned (the change stays pending,
   * as GoTrue's `email_change` does); a change the user has since replaced
   * by another, or completed, is not pending.
   */
  async pendingEmailChange(tx: PoolClient, email: string): Promise<{ userId: string; email: string } | null> {
    const { rows } = await tx.query<{ user_id: string; email: string }>(
      `select c.user_id, c.email from auth.one_time_codes c join auth.users u on u.id = c.user_id
       where c.purpose = 'email_change' and lower(c.email) = $1 and lower(u.email) <> lower(c.email)
         and c.id = (select o.id from auth.one_time_codes o where o.purpose = 'email_change' and o.user_id = c.user_id
                     order by o.created_at desc, o.id desc limit 1)
       order by c.created_at desc limit 1`,
      [emailKey(email)],
    );
    return rows[0] ? { userId: rows[0].user_id, email: rows[0].email } : null;
  }
}
