/**
 * Kills the worker the moment a forced bucket deletion is recorded: the
 * supervisor starts a new one, Temporal retries whatever was interrupted
 * there, and the deletion still ends applied exactly once in effect — no
 * bucket row, no object rows, no bytes, one outcome event.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bucketPrefix, type ObjectStore } from '@baseplane/contracts/object-store';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { servicePid } from '../../deploy/local/src/services';
import { putObject, servicesStore } from './storage-fixtures';

let db: pg.Client;
let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
let store: ObjectStore;
const OBJECTS = 40;

const workerPid = () => servicePid(inject('servicePorts').worker);

beforeAll(async () => {
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  operator = await signUpOperator('Crash');
  project = await createProject(operator, 'bucket crash');
  tenant = await connectTenant(project.id);
  store = await servicesStore();
  const created = await call('POST', `/api/projects/${project.id}/storage/buckets`, { headers: bearer(operator.token), body: { name: 'doomed' } });
  expect(created.status, created.text).toBe(201);
  for (let i = 0; i < OBJECTS; i++) await putObject(store, tenant, project.id, 'doomed', `dir-${i % 4}/file-${i}.txt`);
});
afterAll(async () => {
  await Promise.all([db?.end(), tenant?.end(), store?.close()]);
});

it('deletes a bucket with force exactly once across a worker crash', async () => {
  const pid = await workerPid();
  const accepted = await call('DELETE', `/api/projects/${project.id}/storage/buckets/doomed?force=true`, { headers: { ...bearer(operator.token), prefer: 'respond-async' } });
  expect(accepted.status, accepted.text).toBe(202);
  const operationId: string = accepted.body.operation.id;

  // Kill the worker as soon as the deletion is in the stream: wherever it is in applying it.
  const deadline = Date.now() + 30_000;
  let killed = false;
  while (Date.now() < deadline && !killed) {
    const { rowCount } = await db.query(`select 1 from events where stream_id = $1 and type = 'BucketDeletionRequested'`, [`project-${project.id}`]);
    if (rowCount) {
      process.kill(pid, 'SIGKILL');
      killed = true;
    } else {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
  expect(killed, 'the deletion was recorded').toBe(true);

  await expect
    .poll(async () => (await call('GET', `/api/projects/${project.id}/operations/${operationId}`, { headers: bearer(operator.token) })).body.status, { timeout: 90_000, interval: 250 })
    .toBe('succeeded');
  expect(await workerPid()).not.toBe(pid);

  expect((await tenant.client.query(`select 1 from storage.buckets where name = 'doomed'`)).rowCount).toBe(0);
  expect((await tenant.client.query(`select 1 from storage.objects where bucket = 'doomed'`)).rowCount).toBe(0);
  expect((await store.list({ prefix: bucketPrefix(project.id, 'doomed') })).objects).toEqual([]);
  const events = await call('GET', `/api/projects/${project.id}/events`, { headers: bearer(operator.token) });
  const types = events.body.events.map((e: { type: string }) => e.type);
  expect(types.slice(types.indexOf('BucketDeletionRequested'))).toEqual(['BucketDeletionRequested', 'BucketChangeApplied']);
});
