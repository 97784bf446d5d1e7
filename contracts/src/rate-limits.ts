/**
 * Fixed-window rate limits counted in a database table, so that every
 * replica of a service counts together: the end-user directory's in each
 * tenant's `auth.rate_limits` (the data plane), the operators' in the
 * platform's `platform_rate_limits` (the control plane). Over the limit ⇒ 429
 * `rate_limited` with `Retry-After`. What counts only failures takes its slot
 * before the try ({@link hit}) and gives it back when the try succeeded
 * ({@link giveBack}), so tries at once cannot all pass a check made before
 * any of them counted. It runs on a client passed in: contracts opens no
 * connection.
 */
import { ApiError } from './errors';
import type { SqlClient } from './user-directory';

export interface Limit {
  max: number;
  windowSeconds: number;
  /** What a refused client can do instead, for the 429's `hint`. */
  hint?: string;
}

/** A table of counters: `(bucket text primary key, window_start timestamptz, hits int)`. */
export type RateLimitTable = 'auth.rate_limits' | 'platform_rate_limits';

export class RateLimitedError extends ApiError {
  constructor(
    readonly retryAfterSeconds: number,
    hint: string | null = null,
  ) {
    super(429, 'rate_limited', 'too many requests; try again later', { retryAfter: retryAfterSeconds }, hint);
  }
}

/** Counts one hit on `bucket`; returns a refusal when over the limit (to raise after the count commits). */
export async function hit(tx: SqlClient, table: RateLimitTable, bucket: string, limit: Limit): Promise<RateLimitedError | undefined> {
  const { rows } = await tx.query<{ hits: number; retry_after: number }>(
    `insert into ${table} as r (bucket, window_start, hits) values ($1, now(), 1)
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
export async function giveBack(tx: SqlClient, table: RateLimitTable, bucket: string, limit: Limit): Promise<void> {
  await tx.query(
    `update ${table} set hits = hits - 1
     where bucket = $1 and hits > 0 and window_start > now() - make_interval(secs => $2)`,
    [bucket, limit.windowSeconds],
  );
}

/** Buckets a try counts in, each with its limit. */
export type Buckets = [string, Limit][];

/** Counts one hit on each bucket up to the first over its limit; answers that one's refusal (to raise after the count commits). */
export async function hitAll(tx: SqlClient, table: RateLimitTable, buckets: Buckets): Promise<RateLimitedError | undefined> {
  for (const [bucket, limit] of buckets) {
    const over = await hit(tx, table, bucket, limit);
    if (over) return over;
  }
  return undefined;
}

/**
 * Takes a slot of every bucket for a try that counts only when it fails (a
 * password sign-in), before the try: tries made at once each take their
 * own, so no more than the limit get through, where a check before and a
 * count after let them all pass the check. Over any limit it throws the
 * refusal, and the caller's transaction rolls back what it took (a refused
 * try counts nothing). {@link giveBackAll} when the try succeeded.
 */
export async function takeSlots(tx: SqlClient, table: RateLimitTable, buckets: Buckets): Promise<void> {
  const over = await hitAll(tx, table, buckets);
  if (over) throw over;
}

/** Gives back the slots {@link takeSlots} took, for a try that succeeded. */
export async function giveBackAll(tx: SqlClient, table: RateLimitTable, buckets: Buckets): Promise<void> {
  for (const [bucket, limit] of buckets) await giveBack(tx, table, bucket, limit);
}

/** Deletes at most `batch` counters whose window ended long ago (the longest is 15 minutes); answers how many. */
export async function sweepRateLimits(db: SqlClient, table: RateLimitTable, batch: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from ${table} where ctid = any(array(
       select ctid from ${table} where window_start < now() - interval '1 hour' limit $1))`,
    [batch],
  );
  return rowCount ?? 0;
}
