/**
 * The operators' rate-limit counters in the platform database: a counter
 * whose window ended an hour ago is swept after a sign-up or login, one that
 * may still matter is kept, and a sweep that fails is reported, not thrown.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RateLimitSweep } from '../src/accounts/login-limits';

let db: pg.Pool;
beforeAll(() => {
  db = new pg.Pool({ connectionString: inject('databaseUrl'), max: 2 });
});
afterAll(async () => {
  await db.end();
});

const counters = async (buckets: string[]) =>
  (await db.query<{ bucket: string }>('select bucket from platform_rate_limits where bucket = any($1) order by bucket', [buckets])).rows.map((r) => r.bucket);

describe('RateLimitSweep', () => {
  it('deletes counters whose window ended an hour ago, keeps the others, and sweeps at most every five minutes', async () => {
    const [dead, live, later] = ['dead', 'live', 'later'].map((name) => `test:${name}:${randomUUID()}`) as [string, string, string];
    await db.query(
      `insert into platform_rate_limits (bucket, window_start, hits) values ($1, now() - interval '61 minutes', 3), ($2, now() - interval '20 minutes', 3)`,
      [dead, live],
    );
    const errors: unknown[] = [];
    const sweep = new RateLimitSweep(db, (error) => errors.push(error));
    sweep.touched();
    await expect.poll(() => counters([dead, live]), { timeout: 5_000 }).toEqual([live]);
    // Within five minutes of a sweep, another call does not sweep again.
    await db.query(`insert into platform_rate_limits (bucket, window_start, hits) values ($1, now() - interval '2 hours', 1)`, [later]);
    sweep.touched();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await counters([later])).toEqual([later]);
    expect(errors).toEqual([]);
    await db.query('delete from platform_rate_limits where bucket = any($1)', [[live, later]]);
  });

  it('reports a sweep that fails instead of throwing', async () => {
    const broken = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
    await broken.end();
    const errors: unknown[] = [];
    expect(() => new RateLimitSweep(broken, (error) => errors.push(error)).touched()).not.toThrow();
    await expect.poll(() => errors.length).toBe(1);
  });
});
