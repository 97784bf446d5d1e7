/**
 * Fixed-window rate limits on issuing and verifying codes, on failed
 * password sign-ins and on sign-ups, kept in the tenant's `auth.rate_limits` so every
 * data-plane replica counts together. Over the limit ⇒ 429 `rate_limited`
 * with `Retry-After`. What counts only failures takes its slot before the
 * try and gives it back when the try succeeded, so tries at once cannot
 * all pass a check made before any of them counted.
 */
import type { PoolClient } from 'pg';
import { ApiError } from '@baseplane/contracts';

export interface Limit {
  max: number;
  windowSeconds: number;
  /** What a refused client can do instead, for the 429's `hint`. */
  hint?: string;
}

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

export class RateLimitedError extends ApiError {
  constructor(
    readonly retryAfterSeconds: number,
    hint: string | null = null,
  ) {
    super(429, 'rate_limited', 'too many requests; try again later', { retryAfter: retryAfterSeconds }, hint);
  }
}

/** Counts one hit on `bucket`; returns a refusal when over the limit (to raise after the count commits). */
export async function hit(tx: PoolClient, bucket: string, limit: Limit): Promise<RateLimitedError | undefined> {
  const { rows } = await tx.query<{ hits: number; retry_after: number }>(
    `insert into auth.rate_limits as r (bucket, window_start, hits) values ($1, now(), 1)
     on conflict (bucket) do update set
       hits = case when r.window_start <= now() - make_interval(secs => $2) then 1 else r.hits + 1 end,
       window_start = case when r.window_start <= now() - make_interval(secs => $2) then now() else r.window_start end
     returning hits, ceil(extract(epoch from (window_start + make_interval(secs => $2) - now())))::int as retry_after`,
    [bucket, limit.windowSeconds],
  );
  const row = rows[0]!;
  return row.hits > limit.max ? new RateLimitedError(Math.max(1, row.retry_after), limit.hint ?? null) : undefined;
}

/**
 * Takes back one hit on `bucket` that turned out not to count (a failure
 * slot whose try succeeded), within the bucket's current window: an ended
 * window no longer matters. (A try that straddles the end of a window gives
 * its slot back to the next one, one try's worth, once.)
 */
export async function giveBack(tx: PoolClient, bucket: string, limit: Limit): Promise<void> {
  await tx.query(
    `update auth.rate_limits set hits = hits - 1
     where bucket = $1 and hits > 0 and window_start > now() - make_interval(secs => $2)`,
    [bucket, limit.windowSeconds],
  );
}
