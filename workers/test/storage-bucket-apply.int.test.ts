/**
 * What the workflow's bucket apply does to a real tenant database when the
 * live state moved on after the decision (SQL, a concurrent command): each
 * such case is refused inside the transaction, non-retryably and with its
 * reason, and leaves the rows as they were. Also the tenant's storage schema:
 * RLS on, no policies, so only service_role and the owner see objects.
 */
import { ApplicationFailure } from '@temporalio/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { inTransaction, tenantDatabaseName, tenantOwnerRole, type BucketEvent } from '@baseplane/contracts';
import { createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';
import { applyBucketRows } from '../src/storage-bucket-apply';

let project: ProjectAnswer;
let pool: pg.Pool;
const spec = (name: string) => ({ name, public: false, fileSizeLimit: null, allowedMimeTypes: null });

/** Applies `event` as the workflow does: one transaction, as the project's owner. */
function apply(event: BucketEvent): Promise<void> {
  return inTransaction(pool, async (client: pg.PoolClient) => {
    await client.query(`set local role "${tenantOwnerRole(project.id)}"`);
    await applyBucketRows(client, event);
  });
}

async function failureOf(work: Promise<unknown>): Promise<unknown> {
  return work.then(() => expect.unreachable('expected a refusal'), (error: unknown) => error);
}

const count = async (sql: string, values: unknown[] = []) => Number((await pool.query(sql, values)).rows[0].count);

beforeAll(async () => {
  project = await createProject(await signUpOperator('Apply'), 'bucket apply');
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(project.id)}`;
  pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  const projectId = project.id;
  await apply({ type: 'BucketCreated', data: { projectId, bucket: spec('kept') } });
  await pool.query(`insert into storage.objects (bucket, path, size) values ('kept', 'a.txt', 1), ('kept', 'b/c.txt', 2)`);
});
afterAll(async () => {
  await pool?.end();
});

describe('applying bucket rows', () => {
  it('refuses a delete without force once objects have arrived, and changes nothing', async () => {
    const error = await failureOf(apply({ type: 'BucketDeletionRequested', data: { projectId: project.id, name: 'kept', force: false } }));
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ nonRetryable: true, type: 'DatabaseError', message: expect.stringMatching(/not empty/) });
    expect(await count(`select count(*) from storage.objects where bucket = 'kept'`)).toBe(2);
  });

  it('refuses a toggle or a delete of a bucket that is gone', async () => {
    for (const event of [
      { type: 'BucketUpdated', data: { projectId: project.id, name: 'gone', public: true } },
      { type: 'BucketDeletionRequested', data: { projectId: project.id, name: 'gone', force: true } },
    ] as BucketEvent[]) {
      expect(await failureOf(apply(event))).toMatchObject({ nonRetryable: true, message: expect.stringMatching(/no longer exists/) });
    }
  });

  it('lets PostgreSQL refuse a name taken meanwhile (23505, classified by the activity wrapper)', async () => {
    expect(await failureOf(apply({ type: 'BucketCreated', data: { projectId: project.id, bucket: spec('kept') } }))).toMatchObject({ code: '23505' });
  });

  it('deletes with force: object rows, then the bucket', async () => {
    await apply({ type: 'BucketDeletionRequested', data: { projectId: project.id, name: 'kept', force: true } });
    expect(await count(`select count(*) from storage.buckets where name = 'kept'`)).toBe(0);
    expect(await count(`select count(*) from storage.objects where bucket = 'kept'`)).toBe(0);
  });
});

describe('the tenant storage schema', () => {
  beforeAll(async () => {
    await apply({ type: 'BucketCreated', data: { projectId: project.id, bucket: spec('rls') } });
    await pool.query(`insert into storage.objects (bucket, path, size) values ('rls', 'x', 1)`);
  });

  it('shows objects to no API role but service_role until the app writes a policy, which the owner may', async () => {
    const seenAs = (role: string) =>
      inTransaction(pool, async (client: pg.PoolClient) => {
        await client.query(`set local role ${role}`);
        return Number((await client.query<{ count: string }>(`select count(*) from storage.objects where bucket = 'rls'`)).rows[0]!.count);
      });
    expect(await seenAs('anon')).toBe(0);
    expect(await seenAs('authenticated')).toBe(0);
    expect(await seenAs('service_role')).toBe(1);
    expect(await seenAs(`"${tenantOwnerRole(project.id)}"`)).toBe(1);
    await inTransaction(pool, async (client: pg.PoolClient) => {
      await client.query(`set local role "${tenantOwnerRole(project.id)}"`);
      await client.query(`create policy anyone_reads on storage.objects for select to anon using (bucket = 'rls')`);
    });
    expect(await seenAs('anon')).toBe(1);
  });

  it('refuses a bucket name S3 would not take, even from SQL', async () => {
    expect(await failureOf(pool.query(`insert into storage.buckets (name) values ('Bad_Name')`))).toMatchObject({ code: '23514' });
  });
});
