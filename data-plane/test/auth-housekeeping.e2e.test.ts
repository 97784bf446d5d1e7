/**
 * The auth schema's housekeeping against a real tenant database: dead
 * rate-limit counters, spent or long-expired codes and long-ended sessions
 * go, and nothing that can still change an answer does; a replica starts a
 * sweep by itself after an auth write.
 *
 * Rows are written straight into the tenant database (as its superuser), so
 * that no replica has swept this project before the first test's one write.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { sweepAuthRows } from '../src/auth/housekeeping';
import { call, createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';

let project: ProjectAnswer;
let tenant: TenantDatabase;
/** A connection acting as the project's owner role, as the data plane's sweep does. */
let owner: pg.Client;

const counters = async (prefix: string) =>
  (await tenant.client.query<{ bucket: string }>('select bucket from auth.rate_limits where bucket like $1 order by bucket', [`${prefix}%`])).rows.map((row) => row.bucket);

async function addCounters(prefix: string, ages: Record<string, string>): Promise<void> {
  for (const [name, age] of Object.entries(ages)) {
    await tenant.client.query(`insert into auth.rate_limits (bucket, window_start, hits) values ($1, now() - $2::interval, 3)`, [`${prefix}${name}`, age]);
  }
}

async function addUser(): Promise<string> {
  const { rows } = await tenant.client.query<{ id: string }>(`insert into auth.users (email) values ($1) returning id`, [`kept-${randomUUID()}@example.com`]);
  return rows[0]!.id;
}

beforeAll(async () => {
  const operator = await signUpOperator('Housekeeping');
  project = await createProject(operator, 'housekeeping app');
  tenant = await connectTenant(project.id);
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(project.id)}`;
  owner = new pg.Client({ connectionString: url.toString() });
  await owner.connect();
  await owner.query(`set role "${tenantOwnerRole(project.id)}"`);
});
afterAll(async () => {
  await owner.end();
  await tenant.end();
});

describe('auth housekeeping', () => {
  it('a replica sweeps a project after an auth write it serves', async () => {
    const prefix = `wired:${randomUUID()}:`;
    await addCounters(prefix, { dead: '2 hours', live: '5 minutes' });
    // A failed sign-in is a write: it counts against the sign-in limits.
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: { apikey: project.anonKey }, body: { email: `nobody-${randomUUID()}@example.com`, password: 'not the password' } });
    expect(answer.status, answer.text).toBe(400);
    await expect.poll(() => counters(prefix), { timeout: 10_000, interval: 100 }).toEqual([`${prefix}live`]);
  });

  it('deletes rate-limit counters whose window ended an hour ago, and no others', async () => {
    const prefix = `direct:${randomUUID()}:`;
    await addCounters(prefix, { a: '61 minutes', b: '3 days', c: '59 minutes', d: '15 minutes', e: '0 seconds' });
    await sweepAuthRows(owner);
    expect(await counters(prefix)).toEqual([`${prefix}c`, `${prefix}d`, `${prefix}e`]);
  });

  it('deletes codes spent or expired over a day ago, keeping each user\'s latest email change', async () => {
    const userId = await addUser();
    const code = async (name: string, purpose: string, created: string, expires: string, used: string | null) => {
      await tenant.client.query(
        `insert into auth.one_time_codes (purpose, email, user_id, code_hash, created_at, expires_at, used_at)
         values ($1, $2, $3, $4, now() - $5::interval, now() + $6::interval, now() - $7::interval)`,
        [purpose, `${name}@example.com`, userId, `hash-${randomUUID()}`, created, expires, used],
      );
    };
    await code('spent-long-ago', 'signup', '3 days', '-3 days', '2 days');
    await code('expired-long-ago', 'recovery', '3 days', '-2 days', null);
    await code('expired-lately', 'recovery', '3 days', '-1 hour', null);
    await code('spent-lately', 'magic_link', '2 hours', '-1 hour', '90 minutes');
    await code('live', 'signup', '5 minutes', '55 minutes', null);
    await code('older-change', 'email_change', '6 days', '-5 days', null);
    await code('latest-change', 'email_change', '5 days', '-4 days', null);
    await sweepAuthRows(owner);
    const { rows } = await tenant.client.query<{ email: string }>('select email from auth.one_time_codes where user_id = $1 order by email', [userId]);
    expect(rows.map((row) => row.email)).toEqual(['expired-lately@example.com', 'latest-change@example.com', 'live@example.com', 'spent-lately@example.com']);
  });

  it('deletes sessions whose refresh token ran out over 8 days ago', async () => {
    const userId = await addUser();
    const session = async (name: string, expires: string, revoked: boolean) => {
      await tenant.client.query(
        `insert into auth.sessions (user_id, refresh_hash, refresh_expires_at, revoked_at) values ($1, $2, now() + $3::interval, case when $4 then now() end)`,
        [userId, name, expires, revoked],
      );
    };
    await session('ended-9-days-ago', '-9 days', false);
    await session('revoked-ended-30-days-ago', '-30 days', true);
    await session('ended-7-days-ago', '-7 days', false);
    await session('revoked-live', '20 days', true);
    await session('live', '20 days', false);
    await sweepAuthRows(owner);
    const { rows } = await tenant.client.query<{ refresh_hash: string }>('select refresh_hash from auth.sessions where user_id = $1 order by refresh_hash', [userId]);
    expect(rows.map((row) => row.refresh_hash)).toEqual(['ended-7-days-ago', 'live', 'revoked-live']);
  });

  it('deletes at most a batch of each kind per sweep and says when there is more', async () => {
    await tenant.client.query(`delete from auth.rate_limits where window_start < now() - interval '1 hour'`);
    const prefix = `batch:${randomUUID()}:`;
    await addCounters(prefix, { a: '2 hours', b: '2 hours', c: '2 hours' });
    expect(await sweepAuthRows(owner, 2)).toBe(true);
    expect(await counters(prefix)).toHaveLength(1);
    expect(await sweepAuthRows(owner, 2)).toBe(false);
    expect(await counters(prefix)).toEqual([]);
  });
});
