/**
 * Rate limits on the operators' own door (`/api/auth/signup` and `login`),
 * counted in the platform database's `platform_rate_limits` so every
 * control-plane replica counts together: the end users' limits
 * (data-plane/src/auth/rate-limits.ts) at the same figures. An operator's
 * account reaches every project of their teams, so a password must not be
 * guessable at the speed argon2 allows, nor sign-ups be made by the thousand.
 */
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '@baseplane/contracts';
import { giveBackAll, hitAll, sweepRateLimits, takeSlots, type Buckets, type Limit } from '@baseplane/contracts/rate-limits';

const TABLE = 'platform_rate_limits';

export const PLATFORM_LIMITS = {
  // Failed logins only: an operator who signs in often is never held up.
  loginFailuresPerAddressAndIp: { max: 10, windowSeconds: 900 },
  loginFailuresPerIp: { max: 100, windowSeconds: 300 },
  // Every sign-up try, a taken address too.
  signupsPerIp: { max: 30, windowSeconds: 300 },
} satisfies Record<string, Limit>;

/**
 * Buckets of a failed login: one address from one client IP, and all tries
 * from that IP. `addressKey` is the address as the accounts' lookup folds it
 * (PostgreSQL's `lower()`), so every spelling that reaches an account counts in its bucket.
 */
export const loginFailureBuckets = (ip: string, addressKey: string): Buckets => [
  [`login-failed:${ip}:${addressKey}`, PLATFORM_LIMITS.loginFailuresPerAddressAndIp],
  [`login-failed:ip:${ip}`, PLATFORM_LIMITS.loginFailuresPerIp],
];

export const signupBuckets = (ip: string): Buckets => [[`signup:ip:${ip}`, PLATFORM_LIMITS.signupsPerIp]];

/** Takes a slot of every bucket before a login's password is checked (contracts' {@link takeSlots}). */
export const takeLoginSlots = (tx: PoolClient, buckets: Buckets): Promise<void> => takeSlots(tx, TABLE, buckets);

/** Counts a try that counts whether or not it succeeds, committed even when refused; throws the 429 after. */
export async function count(db: Pool, buckets: Buckets): Promise<void> {
  const refusal = await inTransaction(db, (tx: PoolClient) => hitAll(tx, TABLE, buckets));
  if (refusal) throw refusal;
}

/** Gives back the slots {@link takeLoginSlots} took, for a login that succeeded. */
export async function giveBackSlots(db: Pool, buckets: Buckets): Promise<void> {
  await inTransaction(db, (tx: PoolClient) => giveBackAll(tx, TABLE, buckets));
}

const SWEEP_EVERY_MS = 5 * 60_000;
const SWEEP_BATCH = 1_000;

/**
 * Deletes counters whose window ended long ago, at most every five minutes
 * per process (a full batch makes the next call sweep again): called after a
 * sign-up or login has answered, so a client cycling through addresses and
 * IPs does not grow the table for ever.
 */
export class RateLimitSweep {
  private next = 0;

  constructor(private readonly db: Pool, private readonly report: (error: unknown) => void) {}

  touched(): void {
    const now = Date.now();
    if (this.next > now) return;
    this.next = now + SWEEP_EVERY_MS;
    sweepRateLimits(this.db, TABLE, SWEEP_BATCH).then(
      (deleted) => { if (deleted >= SWEEP_BATCH) this.next = 0; },
      (error: unknown) => this.report(error),
    );
  }
}
