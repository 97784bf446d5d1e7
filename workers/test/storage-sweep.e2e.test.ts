/**
 * The storage sweep (workers/src/storage-sweep.ts) against the running stack,
 * on the store the services use (fs in the main pass, S3 in the second): bytes
 * no row names go (a path without a row, a version the row does not name),
 * objects with one stay (stored before versions too), other projects and fresh
 * bytes are not touched, an upload between its publish and its COMMIT keeps
 * its bytes (a new row's, or a replacement's whose row it updates),
 * what uploads killed half-way left goes once it stopped moving, a login
 * that policies would filter makes it fail rather than remove, and the
 * workers keep a Temporal schedule that starts it.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import {
  OBJECT_PATH_LOCK_SQL, PROJECT_TASK_QUEUE, STORAGE_SWEEP_SCHEDULE_ID, STORAGE_SWEEP_WORKFLOW_TYPE, loadConfig, tenantDatabaseName, type StorageSweepInput, type StorageSweepResult,
} from '@baseplane/contracts';
import { FS_STORAGE_DIR, newObjectVersion, objectKey, VERSION_SEPARATOR, type ObjectStore } from '@baseplane/contracts/object-store';
import { layoutOf } from '../../contracts/src/object-store/fs-layout';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, tenantUrl, type TenantDatabase } from '../../deploy/test/tenant';
import { putObject, servicesStore } from '../../control-plane/test/storage-fixtures';
import { createStorageSweepActivities } from '../src/storage-sweep';

let operator: Operator;
let project: ProjectAnswer;
let other: ProjectAnswer;
let tenant: TenantDatabase;
let store: ObjectStore;
let connection: Connection;
let temporal: Client;

const key = (path: string, projectId = project.id) => objectKey(projectId, 'files', path);
/** Bytes in the store and no row: what a crash between an upload's rename and its COMMIT leaves. */
const strand = (path: string, projectId = project.id) => store.put(key(path, projectId), Readable.from([Buffer.from(`stranded ${path}`)]), { contentType: 'text/plain' });
const stored = async (path: string, projectId = project.id) => (await store.head(key(path, projectId))) !== undefined;
/** The bytes at `stored` as text. */
const storedText = async (stored: string) => {
  const chunks: Buffer[] = [];
  for await (const chunk of (await store.get(stored)).body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
};
/** Every key the store holds for the object at `path`: its path's own and each version's. */
const storedKeys = async (path: string) => (await store.list({ prefix: key(path) })).objects.map((object) => object.key)
  .filter((stored) => stored === key(path) || stored.startsWith(`${key(path)}${VERSION_SEPARATOR}`)).sort();
const sweep = (input: StorageSweepInput) =>
  temporal.workflow.execute(STORAGE_SWEEP_WORKFLOW_TYPE, { taskQueue: PROJECT_TASK_QUEUE, workflowId: `storage-sweep-test-${randomUUID()}`, args: [input] }) as Promise<StorageSweepResult>;

async function upload(path: string, text: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/plain' }), path.split('/').pop());
  const response = await fetch(new URL(`/api/projects/${project.id}/storage/buckets/files/objects?path=${encodeURIComponent(path)}`, inject('baseUrl')), {
    method: 'POST', headers: bearer(operator.token), body: form,
  });
  expect(response.status, await response.text()).toBe(201);
}

async function download(path: string): Promise<string> {
  const answer = await call('GET', `/api/projects/${project.id}/storage/buckets/files/objects/download?path=${encodeURIComponent(path)}`, { headers: bearer(operator.token) });
  expect(answer.status, answer.text).toBe(200);
  return answer.text;
}

beforeAll(async () => {
  operator = await signUpOperator('Sweep');
  [project, other] = await Promise.all([createProject(operator, 'swept'), createProject(operator, 'not swept')]);
  tenant = await connectTenant(project.id);
  store = await servicesStore();
  for (const id of [project.id, other.id]) {
    const created = await call('POST', `/api/projects/${id}/storage/buckets`, { headers: bearer(operator.token), body: { name: 'files' } });
    expect(created.status, created.text).toBe(201);
  }
  connection = await Connection.connect({ address: inject('temporalAddress') });
  temporal = new Client({ connection });
});
afterAll(async () => {
  await Promise.all([tenant?.end(), store?.close(), connection?.close()]);
});

it('removes the bytes no row names, and nothing else', async () => {
  await upload('kept/uploaded.txt', 'uploaded through the API');
  await putObject(store, tenant, project.id, 'files', 'kept/put.txt', 'a row and bytes');
  await Promise.all([strand('stray.txt'), strand('deep/down/stray.txt'), strand('stray.txt', other.id)]);

  // Fresh bytes are left to a later sweep: within the grace period nothing is even looked at.
  const early = await sweep({ projectIds: [project.id], graceSeconds: 3600 });
  expect(early).toEqual({ projects: 1, checked: 0, removed: 0, unfinished: 0, failures: 0, failed: [] });
  expect(await stored('stray.txt')).toBe(true);

  const swept = await sweep({ projectIds: [project.id], graceSeconds: 0 });
  expect(swept).toEqual({ projects: 1, checked: 4, removed: 2, unfinished: 0, failures: 0, failed: [] });
  expect(await stored('stray.txt')).toBe(false);
  expect(await stored('deep/down/stray.txt')).toBe(false);
  // Objects with a row are served as before; another project's stray bytes were not this sweep's.
  expect(await download('kept/uploaded.txt')).toBe('uploaded through the API');
  expect(await download('kept/put.txt')).toBe('a row and bytes');
  expect(await stored('stray.txt', other.id)).toBe(true);
  const rows = await tenant.client.query(`select path from storage.objects where bucket = 'files' order by path`);
  expect(rows.rows.map((row) => row.path)).toEqual(['kept/put.txt', 'kept/uploaded.txt']);

  // Swept again, nothing is left to remove.
  expect(await sweep({ projectIds: [project.id], graceSeconds: 0 })).toMatchObject({ checked: 2, removed: 0 });
});

it('keeps the bytes of an upload whose row is claimed but not yet committed', async () => {
  // An upload between its rename and its COMMIT: bytes in place, the row inserted in a transaction still open.
  await strand('in-flight.txt');
  const claim = new pg.Client({ connectionString: tenantUrl(project.id) });
  await claim.connect();
  try {
    await claim.query('begin');
    await claim.query(`insert into storage.objects (bucket, path, size, content_type) values ('files', 'in-flight.txt', 20, 'text/plain')`);
    const running = sweep({ projectIds: [project.id], graceSeconds: 0 });
    running.catch(() => undefined);
    // The sweep saw no committed row and waits for the bucket's lock, which the claim's foreign key check holds.
    await expect.poll(async () => (await tenant.client.query(
      `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%storage.buckets%for update%'`,
    )).rowCount, { timeout: 30_000 }).toBe(1);
    await claim.query('commit');
    expect(await running).toMatchObject({ removed: 0 });
  } finally {
    await claim.end();
  }
  expect(await download('in-flight.txt')).toBe('stranded in-flight.txt');
});

it('removes versions no row names, and the key of an object stored before versions once a version replaced it', async () => {
  const named = newObjectVersion();
  await putObject(store, tenant, project.id, 'files', 'versions/kept.txt', 'the version the row names', named);
  // A version whose upload's COMMIT failed, and the bytes a replaced object kept at its path's own key (the replacing
  // upload could not delete them).
  const failed = objectKey(project.id, 'files', 'versions/kept.txt', newObjectVersion());
  await store.put(failed, Readable.from([Buffer.from('never committed')]), { contentType: 'text/plain' });
  await strand('versions/kept.txt');
  expect(await sweep({ projectIds: [project.id], graceSeconds: 0 })).toMatchObject({ removed: 2, failures: 0 });
  expect(await storedKeys('versions/kept.txt')).toEqual([objectKey(project.id, 'files', 'versions/kept.txt', named)]);
  expect(await storedText(objectKey(project.id, 'files', 'versions/kept.txt', named))).toBe('the version the row names');
});

it('keeps the bytes of an upload that replaces an object until its row names them, and then removes the version it replaced', async () => {
  const old = newObjectVersion();
  await putObject(store, tenant, project.id, 'files', 'replacing.txt', 'the old version', old);
  // A replacing upload between its publish and its COMMIT: the path's lock held, the row updated to name a version whose
  // bytes are in place. An update takes no lock on the bucket's row: the path's lock is what the sweep waits for.
  const next = newObjectVersion();
  await store.put(objectKey(project.id, 'files', 'replacing.txt', next), Readable.from([Buffer.from('the new version')]), { contentType: 'text/plain' });
  const claim = new pg.Client({ connectionString: tenantUrl(project.id) });
  await claim.connect();
  try {
    await claim.query('begin');
    await claim.query(OBJECT_PATH_LOCK_SQL, ['files', 'replacing.txt']);
    await claim.query(`update storage.objects set version = $1 where bucket = 'files' and path = 'replacing.txt'`, [next]);
    const running = sweep({ projectIds: [project.id], graceSeconds: 0 });
    running.catch(() => undefined);
    await expect.poll(async () => (await tenant.client.query(
      `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%pg_advisory_xact_lock%unnest%'`,
    )).rowCount, { timeout: 30_000 }).toBe(1);
    await claim.query('commit');
    expect(await running).toMatchObject({ removed: 0, failures: 0 });
  } finally {
    await claim.end();
  }
  expect(await storedText(objectKey(project.id, 'files', 'replacing.txt', next))).toBe('the new version');
  // The version it replaced still had its row when this sweep looked; the next one removes it (the upload would have).
  expect(await storedKeys('replacing.txt')).toEqual([objectKey(project.id, 'files', 'replacing.txt', next), objectKey(project.id, 'files', 'replacing.txt', old)].sort());
  expect(await sweep({ projectIds: [project.id], graceSeconds: 0 })).toMatchObject({ removed: 1, failures: 0 });
  expect(await storedKeys('replacing.txt')).toEqual([objectKey(project.id, 'files', 'replacing.txt', next)]);
});

it('refuses a grace period or project ids that are not ones (an id in upper case would name no database)', async () => {
  for (const input of [{ graceSeconds: -1 }, { graceSeconds: 1.5 }, { unfinishedSeconds: -5 }, { projectIds: ['not-a-project'] }, { projectIds: [project.id.toUpperCase()] }]) {
    const failed = await sweep(input as StorageSweepInput).then(() => undefined, (error: unknown) => error);
    expect(failed).toBeInstanceOf(WorkflowFailedError);
    expect(String((failed as WorkflowFailedError).cause?.message)).toMatch(/graceSeconds must be|unfinishedSeconds must be|projectIds must be/);
  }
});

it('removes, when it sweeps every project, what uploads killed half-way left once it stopped moving', { timeout: 120_000 }, async () => {
  const leftovers = await unfinishedUploads();
  await leftovers.leave();
  expect(await leftovers.count()).toBe(1);
  const kept = await sweep({ graceSeconds: 3600, unfinishedSeconds: 3600 });
  expect(kept).toMatchObject({ unfinished: 0, failures: 0 });
  expect(await leftovers.count()).toBe(1);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const swept = await sweep({ graceSeconds: 3600, unfinishedSeconds: 1 });
  expect(swept).toMatchObject({ unfinished: 1, failures: 0 });
  expect(swept.projects).toBeGreaterThanOrEqual(2);
  expect(await leftovers.count()).toBe(0);
  // A sweep of named projects leaves them alone.
  await leftovers.leave();
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(await sweep({ projectIds: [project.id], graceSeconds: 3600, unfinishedSeconds: 1 })).toMatchObject({ unfinished: 0 });
  expect(await leftovers.count()).toBe(1);
  await leftovers.close();
});

it('is started by a schedule the workers keep, with the configured interval and grace', { timeout: 120_000 }, async () => {
  const schedule = temporal.schedule.getHandle(STORAGE_SWEEP_SCHEDULE_ID);
  const described = await schedule.describe();
  expect(described.spec.intervals).toEqual([{ every: 3_600_000 }]);
  expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: STORAGE_SWEEP_WORKFLOW_TYPE, taskQueue: PROJECT_TASK_QUEUE, args: [{ graceSeconds: 3600 }] });
  expect(described.policies.overlap).toBe('SKIP');

  await strand('fresh.txt');
  const before = described.info.recentActions.length;
  await schedule.trigger();
  const started = await expect.poll(async () => (await schedule.describe()).info.recentActions.length, { timeout: 30_000 }).toBeGreaterThan(before)
    .then(async () => (await schedule.describe()).info.recentActions.at(-1)!.action.workflow);
  const result = await temporal.workflow.getHandle(started.workflowId, started.firstExecutionRunId).result() as StorageSweepResult;
  // Every active project of the stack was swept (these two at least); bytes stored a moment ago are within the hour's grace.
  expect(result.projects).toBeGreaterThanOrEqual(2);
  expect(result.failures).toBe(0);
  expect(await stored('fresh.txt')).toBe(true);
  expect(await stored('stray.txt', other.id)).toBe(true);
});

it('errs, and removes nothing, when its login is one that policies would filter', async () => {
  // A deployment whose cluster login is not a superuser: row-level security would show it no rows of
  // storage.objects, and every object would look rowless. The sweep's session turns row_security off, so
  // PostgreSQL refuses its reads instead. The activity runs here in Temporal's activity test environment
  // (its failure log kept quiet), against the stack's PostgreSQL and store, with such a login.
  await putObject(store, tenant, project.id, 'files', 'guarded/row.txt', 'a row policies hide');
  const role = `sweep_filtered_${randomUUID().replaceAll('-', '')}`;
  const password = randomUUID();
  const admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await admin.connect();
  const platformDb = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
  try {
    await admin.query(`create role ${role} login nosuperuser nobypassrls password '${password}'`);
    await admin.query(`grant connect on database ${tenantDatabaseName(project.id)} to ${role}`);
    await tenant.client.query(`grant usage on schema storage to ${role}`);
    await tenant.client.query(`grant select, update on storage.buckets, storage.objects to ${role}`);
    // It sees the buckets (as an app's policy may let everyone) and none of the objects.
    await tenant.client.query(`create policy ${role} on storage.buckets to ${role} using (true)`);
    const url = new URL(inject('tenantDatabaseUrl'));
    url.username = role;
    url.password = password;
    const activities = createStorageSweepActivities({ platformDb, tenantDatabaseUrl: url.toString(), objects: store, log: pino({ level: 'silent' }) });
    const failed = await new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') }).run(activities.sweepProjectStorage, { projectId: project.id, graceSeconds: 0 })
      .then(() => undefined, (error: unknown) => error);
    expect(await download('guarded/row.txt')).toBe('a row policies hide');
    expect(String((failed as Error | undefined)?.message)).toMatch(/row-level security/);
  } finally {
    await tenant.client.query(`drop policy if exists ${role} on storage.buckets`);
    await tenant.client.query(`drop owned by ${role}`);
    await admin.query(`drop role ${role}`);
    await Promise.all([admin.end(), platformDb.end()]);
  }
});

/**
 * What an upload killed half-way leaves in the services' store, made by hand: a temp file in the fs store's
 * uploads directory, or a multipart upload with one part in the S3 bucket. `count` counts them.
 */
async function unfinishedUploads(): Promise<{ leave: () => Promise<void>; count: () => Promise<number>; close: () => Promise<void> }> {
  const config = loadConfig(process.env);
  if (config.storageBackend === 'fs') {
    const uploads = layoutOf(path.join(inject('dataDir'), FS_STORAGE_DIR)).uploads;
    const mine = new Set<string>();
    return {
      leave: async () => {
        const name = `${randomUUID()}.part`;
        await mkdir(uploads, { recursive: true });
        await writeFile(path.join(uploads, name), 'half an upload');
        mine.add(name);
      },
      count: async () => (await readdir(uploads)).filter((name) => mine.has(name)).length,
      close: async () => undefined,
    };
  }
  const s3 = config.s3.endpoint ? config.s3 : { ...inject('s3'), bucket: config.s3.bucket };
  const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: { accessKeyId: s3.accessKeyId!, secretAccessKey: s3.secretAccessKey! } });
  const Key = key('killed-half-way.bin');
  return {
    leave: async () => {
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
      await client.send(new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(5 * 1024 * 1024, 1) }));
    },
    count: async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: Key }))).Uploads?.length ?? 0,
    close: async () => client.destroy(),
  };
}
