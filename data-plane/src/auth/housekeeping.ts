/**
 * Rows of a tenant's `auth` schema that can no longer change an answer are
 * deleted now and then, as GoTrue's cleanup does: rate-limit counters whose
 * window has long passed, one-time codes spent or expired a day ago, and
 * sessions whose refresh token ran out more than a week ago. Without it a
 * client cycling through addresses and IPs grows `auth.rate_limits` by a row
 * per request, for ever.
 *
 * The data plane is stateless, so there is no sweeper of its own: the
 * first auth write a replica serves for a project after SWEEP_EVERY_MS
 * starts a sweep once its answer has gone. Each kind deletes at most
 * SWEEP_BATCH rows; a full batch makes the project's next write sweep again.
 */
import { sweepRateLimits } from '@baseplane/contracts/rate-limits';
import type { SqlClient } from '@baseplane/contracts/user-directory';
import type { AfterAnswer } from './after-answer';
import { TABLE } from './rate-limits';

export const SWEEP_EVERY_MS = 5 * 60_000;
export const SWEEP_BATCH = 1_000;

/**
 * What the sweep deletes besides rate-limit counters whose window ended an
 * hour ago (the longest is 15 minutes; the next hit starts a new one either
 * way: {@link sweepRateLimits}). A code is
 * kept a day after it was spent or expired, so a late try still hears
 * `otp_expired`; a user's latest email-change code is kept, because it is
 * what marks the change pending (codes.ts). A session goes 8 days after its
 * refresh token ran out: an access token lives 7 days at most, and every one
 * was signed before that.
 */
const SWEEPS = [
  `delete from auth.one_time_codes where ctid = any(array(
     select c.ctid from auth.one_time_codes c
     where c.created_at < now() - interval '1 day' and (c.used_at is not null or c.expires_at < now() - interval '1 day')
       and not (c.purpose = 'email_change' and c.user_id is not null and c.id = (
         select o.id from auth.one_time_codes o where o.purpose = 'email_change' and o.user_id = c.user_id
         order by o.created_at desc, o.id desc limit 1))
     limit $1))`,
  `delete from auth.sessions where ctid = any(array(
     select ctid from auth.sessions where refresh_expires_at < now() - interval '8 days' limit $1))`,
] as const;

/** Deletes what can no longer matter, at most `batch` rows of each kind; true when a kind had more. */
export async function sweepAuthRows(db: SqlClient, batch = SWEEP_BATCH): Promise<boolean> {
  let more = (await sweepRateLimits(db, TABLE, batch)) >= batch;
  for (const sql of SWEEPS) {
    const { rowCount } = await db.query(sql, [batch]);
    if ((rowCount ?? 0) >= batch) more = true;
  }
  return more;
}

/** When each project was last swept by this replica; a project sweeps on the first auth write after SWEEP_EVERY_MS. */
export class AuthHousekeeping {
  private readonly next = new Map<string, number>();

  constructor(
    private readonly afterAnswer: AfterAnswer,
    private readonly sweep: (projectId: string) => Promise<boolean>,
    private readonly report: (projectId: string, error: unknown) => void,
  ) {}

  /** An auth write for `projectId` was served: sweeps after the answer when its turn has come. */
  wrote(projectId: string): void {
    const now = Date.now();
    if ((this.next.get(projectId) ?? 0) > now) return;
    this.next.set(projectId, now + SWEEP_EVERY_MS);
    this.afterAnswer.run(async () => {
      try {
        if (await this.sweep(projectId)) this.next.delete(projectId);
      } catch (error) {
        // Tried again at the next turn; a deleted project's database is simply gone.
        this.report(projectId, error);
      }
    });
  }
}
