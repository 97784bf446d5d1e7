/**
 * Fixed-window rate limits on issuing and verifying codes, on failed
 * password sign-ins and on sign-ups, kept in the tenant's `auth.rate_limits` so every
 * data-plane replica counts together. Over the limit ⇒ 429 `rate_limited`
 * with `Retry-After`. What counts only failures takes its slot before the
 * try and gives it back when the try succeeded, so tries at once cannot
 * all pass a check made before any of them counted.
 */
import type { PoolClient } from 'pg';
import { RateLimitedError, giveBack as takeBack, type Limit } from '@baseplane/contracts/rate-limits';

export { RateLimitedError, type Limit };

/** Where the end users' counters are: the tenant's own database. */
export const TABLE = 'auth.rate_limits';

/** Issuing: a few per address, more per client IP. Verifying: generous per address, bounded per IP. */
export const LIMITS = {
  issuePerAddress: { max: 5, windowSeconds: 900 },
  issuePerIp: { max: 100, windowSeconds: 300 },
  verifyPerAddress: { max: 20, windowSeconds: 900 },
  verifyPerIp: { max: 200, windowSeconds: 300 },
  // Wrong codes given without their address (or Bearer), per purpose across the project: such a try is matched
  // against every live code of the purpose, and counts against no address, so guesses from many IPs must meet here.
  codeOnlyFailures: {
    max: 10,
    windowSeconds: 900,
    hint: 'send the code with the email address it was sent to ({"otp", "email"}): codes given alone share one budget across the project',
  },
  // Failed password sign-ins only: an app's own traffic (and a user who signs in often) is never held up.
  signinFailuresPerAddressAndIp: { max: 10, windowSeconds: 900 },
  signinFailuresPerIp: { max: 100, windowSeconds: 300 },
  // Sign-ups through a public key, verified or not (Supabase's sign-ups and sign-ins limit: 30 per 5 minutes per IP).
  signupsPerIp: { max: 30, windowSeconds: 300 },
} satisfies Record<string, Limit>;

/** Takes back one hit on `bucket` that turned out not to count (a failure slot whose try succeeded). */
export const giveBack = (tx: PoolClient, bucket: string, limit: Limit): Promise<void> => takeBack(tx, TABLE, bucket, limit);
