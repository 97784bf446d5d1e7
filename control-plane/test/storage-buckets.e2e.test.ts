/**
 * Buckets as commands: decided against the tenant's live storage.buckets
 * (refusals record nothing), applied by the project's workflow to the tenant
 * database and the object store, read back from storage.buckets. The object
 * store checked here is the one the stack's services use (STORAGE_BACKEND:
 * fs by default; run with STORAGE_BACKEND=s3 for the embedded S3 server).
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketPrefix, objectKey, projectPrefix, type ObjectStore } from '@baseplane/contracts/object-store';
import { apikey, bearer, call, createProject, projectEventTypes, scenarios, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, whileAppliesWait, type TenantDatabase } from '../../deploy/test/tenant';
import { putObject as putFixture, servicesBackend, servicesStore } from './storage-fixtures';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
let store: ObjectStore;
const base = () => `/api/projects/${project.id}/storage/buckets`;
const auth = () => bearer(ada.token);
const applied = (command: string) => ({ projectId: () => project.id, types: [command, 'BucketChangeApplied'] });
const none = { projectId: () => project.id, types: [] };

const putObject = (bucket: string, objectPath: string, text?: string) => putFixture(store, tenant, project.id, bucket, objectPath, text);

async function bucketRow(name: string) {
  return (await tenant.client.query('select name, public, file_size_limit, allowed_mime_types from storage.buckets where name = $1', [name])).rows[0];
}

const objectRows = async (bucket: string) => Number((await tenant.client.query('select count(*) from storage.objects where bucket = $1', [bucket])).rows[0].count);
const storedKeys = async (bucket: string) => (await store.list({ prefix: bucketPrefix(project.id, bucket) })).objects.map((o) => o.key);

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  project = await createProject(ada, 'storage app');
  tenant = await connectTenant(project.id);
  store = await servicesStore();
});
afterAll(async () => {
  await tenant?.end();
  await store?.close();
});

describe(`creating buckets (services on ${servicesBackend()})`, () => {
  scenarios([
    {
      name: 'creates a private bucket with defaults and records the command and its outcome',
      method: 'POST', url: () => base(), headers: auth, body: { name: 'avatars' },
      expectedStatus: 201, expectedContent: ['"name":"avatars"', '"public":false', '"fileSizeLimit":null', '"allowedMimeTypes":null', '"createdAt"'],
      expectedEvents: applied('BucketCreated'),
    },
    {
      name: 'creates a public bucket with a size limit and MIME patterns, normalised',
      method: 'POST', url: () => base(), headers: auth, body: { name: 'photos.v2', public: true, fileSizeLimit: 1048576, allowedMimeTypes: ['image/*', 'Application/PDF'] },
      expectedStatus: 201, expectedContent: ['"public":true', '"fileSizeLimit":1048576', '"allowedMimeTypes":["image/*","application/pdf"]'],
      expectedEvents: applied('BucketCreated'),
    },
  ]);

  it('keeps them in the tenant’s storage.buckets and lists them by name', async () => {
    expect(await bucketRow('avatars')).toEqual({ name: 'avatars', public: false, file_size_limit: null, allowed_mime_types: null });
    expect(await bucketRow('photos.v2')).toEqual({ name: 'photos.v2', public: true, file_size_limit: '1048576', allowed_mime_types: ['image/*', 'application/pdf'] });
    const list = await call('GET', base(), { headers: auth() });
    expect(list.status).toBe(200);
    expect(list.body.map((b: { name: string }) => b.name)).toEqual(['avatars', 'photos.v2']);
    const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: auth() });
    expect(operations.body.filter((o: { command: string }) => o.command === 'CreateBucket').map((o: { status: string }) => o.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('clears objects a deleted bucket of the same name left in the store, so a new bucket starts empty', async () => {
    await store.put(objectKey(project.id, 'reused', 'left/behind.txt'), Readable.from([Buffer.from('old')]), { contentType: 'text/plain' });
    const created = await call('POST', base(), { headers: auth(), body: { name: 'reused' } });
    expect(created.status, created.text).toBe(201);
    expect(await storedKeys('reused')).toEqual([]);
  });
});

describe('refusals record nothing', () => {
  scenarios([
    { name: 'a taken name is 409 already_exists', method: 'POST', url: () => base(), headers: auth, body: { name: 'avatars' }, expectedStatus: 409, expectedContent: ['already_exists'], expectedEvents: none },
    { name: 'an uppercase name is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'Avatars' }, expectedStatus: 400, expectedContent: ['invalid bucket name'], expectedEvents: none },
    { name: 'a name with ".." is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'a..b' }, expectedStatus: 400, expectedEvents: none },
    { name: 'a two-letter name is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'ab' }, expectedStatus: 400, expectedEvents: none },
    { name: 'a size limit of 0 is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'sized', fileSizeLimit: 0 }, expectedStatus: 400, expectedEvents: none },
    { name: 'a MIME pattern without a subtype is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'typed', allowedMimeTypes: ['image'] }, expectedStatus: 400, expectedContent: ['MIME'], expectedEvents: none },
    { name: 'an unknown field is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'extra', owner: 'me' }, expectedStatus: 400, expectedEvents: none },
    { name: 'no body is 400', method: 'POST', url: () => base(), headers: auth, expectedStatus: 400, expectedEvents: none },
    { name: 'toggling an unknown bucket is 404', method: 'PATCH', url: () => `${base()}/nope`, headers: auth, body: { public: true }, expectedStatus: 404, expectedContent: ['not_found'], expectedEvents: none },
    { name: 'a toggle without a boolean is 400', method: 'PATCH', url: () => `${base()}/avatars`, headers: auth, body: { public: 'yes' }, expectedStatus: 400, expectedEvents: none },
    { name: 'deleting an unknown bucket is 404', method: 'DELETE', url: () => `${base()}/nope`, headers: auth, expectedStatus: 404, expectedEvents: none },
    { name: 'force that is not true or false is 400', method: 'DELETE', url: () => `${base()}/avatars?force=yes`, headers: auth, expectedStatus: 400, expectedEvents: none },
    { name: 'the anon key is 403 service_key_required', method: 'GET', url: () => base(), headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
    { name: 'the anon key cannot create a bucket', method: 'POST', url: () => base(), headers: () => apikey(project.anonKey), body: { name: 'by-anon' }, expectedStatus: 403, expectedContent: ['service_key_required'], expectedEvents: none },
    { name: 'no credentials is 401', method: 'GET', url: () => base(), expectedStatus: 401 },
    { name: 'another team’s member gets 404', method: 'POST', url: () => base(), headers: () => bearer(bob.token), body: { name: 'by-bob' }, expectedStatus: 404, expectedEvents: none },
    { name: 'another team’s member cannot list', method: 'GET', url: () => base(), headers: () => bearer(bob.token), expectedStatus: 404 },
    { name: 'the service key may list buckets', method: 'GET', url: () => base(), headers: () => apikey(project.serviceKey), expectedStatus: 200, expectedContent: ['avatars'] },
  ]);

  it('refuses a change of buckets through the SQL console, which would not be in the history: buckets change through commands', async () => {
    const before = await streamVersion(project.id);
    for (const query of [
      `update storage.buckets set public = true where name = 'avatars'`,
      `insert into storage.buckets (name, public) values ('sql-made', true)`,
      `delete from storage.buckets where name = 'avatars'`,
      'truncate storage.buckets cascade',
    ]) {
      const answer = await call('POST', '/api/sql/execute', { headers: auth(), body: { projectId: project.id, query } });
      expect({ status: answer.status, code: answer.body.code, message: answer.body.message }, query).toEqual({
        status: 400, code: '42501', message: "buckets change through the storage API, so that each change is in the project's history",
      });
      expect(answer.body.hint).toContain('/storage/buckets');
    }
    // Reading them is the console's as before.
    const read = await call('POST', '/api/sql/execute', { headers: auth(), body: { projectId: project.id, query: `select name, public from storage.buckets where name = 'avatars'` } });
    expect(read.status, read.text).toBe(200);
    expect(await bucketRow('avatars')).toMatchObject({ public: false });
    expect(await bucketRow('sql-made')).toBeUndefined();
    expect(await streamVersion(project.id)).toBe(before);
  });
});

describe('toggling public', () => {
  scenarios([
    { name: 'makes a bucket public', method: 'PATCH', url: () => `${base()}/avatars`, headers: auth, body: { public: true }, expectedStatus: 200, expectedContent: ['"name":"avatars"', '"public":true'], expectedEvents: applied('BucketUpdated') },
    { name: 'the service key makes it private again', method: 'PATCH', url: () => `${base()}/avatars`, headers: () => apikey(project.serviceKey), body: { public: false }, expectedStatus: 200, expectedContent: ['"public":false'], expectedEvents: applied('BucketUpdated') },
  ]);

  it('leaves the row as the last toggle said', async () => {
    expect((await bucketRow('avatars')).public).toBe(false);
  });
});

describe('deleting buckets', () => {
  beforeAll(async () => {
    for (const name of ['empty-one', 'full-one']) {
      const created = await call('POST', base(), { headers: auth(), body: { name } });
      expect(created.status, created.text).toBe(201);
    }
    await putObject('full-one', 'a.txt');
    await putObject('full-one', 'deep/down/b.txt', 'nested');
  });

  scenarios([
    { name: 'deletes an empty bucket', method: 'DELETE', url: () => `${base()}/empty-one`, headers: auth, expectedStatus: 200, expectedContent: ['"deleted":true'], expectedEvents: applied('BucketDeletionRequested') },
    { name: 'refuses a non-empty bucket without force: 409, nothing recorded', method: 'DELETE', url: () => `${base()}/full-one`, headers: auth, expectedStatus: 409, expectedContent: ['bucket_not_empty', 'force=true'], expectedEvents: none },
    { name: 'force=false is no force', method: 'DELETE', url: () => `${base()}/full-one?force=false`, headers: auth, expectedStatus: 409, expectedEvents: none },
  ]);

  it('left the refused bucket whole: its row, its object rows and its bytes', async () => {
    expect(await bucketRow('empty-one')).toBeUndefined();
    expect(await bucketRow('full-one')).toBeDefined();
    expect(await objectRows('full-one')).toBe(2);
    expect(await storedKeys('full-one')).toHaveLength(2);
  });

  scenarios([
    { name: 'force=true empties it through the workflow and deletes it', method: 'DELETE', url: () => `${base()}/full-one?force=true`, headers: auth, expectedStatus: 200, expectedEvents: applied('BucketDeletionRequested') },
  ]);

  it('answers 422 apply_failed at once with the database\'s words when the app\'s trigger refuses the change, and changes nothing', async () => {
    expect((await call('POST', base(), { headers: auth(), body: { name: 'kept' } })).status).toBe(201);
    await putObject('kept', 'one.txt');
    await tenant.asOwner(`create function public.keep_buckets() returns trigger language plpgsql as $$ begin raise exception 'kept by the app'; end $$`);
    await tenant.asOwner('create trigger keep_buckets before delete on storage.buckets for each row execute function public.keep_buckets()');
    try {
      // What the app's trigger raises (P0001) is the same at every try: not retried for minutes while the project's later changes wait.
      const refused = await call('DELETE', `${base()}/kept?force=true`, { headers: auth() });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.body).toMatchObject({ code: 'apply_failed', details: { code: 'P0001', message: 'kept by the app' } });
    } finally {
      await tenant.asOwner('drop trigger keep_buckets on storage.buckets');
      await tenant.asOwner('drop function public.keep_buckets()');
    }
    expect(await bucketRow('kept')).toBeDefined();
    expect(await objectRows('kept')).toBe(1);
    expect(await storedKeys('kept')).toHaveLength(1);
  });

  it('left nothing of the forced bucket: no row, no object rows, no bytes in the store', async () => {
    expect(await bucketRow('full-one')).toBeUndefined();
    expect(await objectRows('full-one')).toBe(0);
    expect(await storedKeys('full-one')).toEqual([]);
    expect(await store.head(objectKey(project.id, 'full-one', 'a.txt'))).toBeUndefined();
    const list = await call('GET', base(), { headers: auth() });
    expect(list.body.map((b: { name: string }) => b.name)).not.toContain('full-one');
  });
});

describe('waiting', () => {
  it('answers 202 with the operation under Prefer: respond-async, which then finishes', async () => {
    const accepted = await call('POST', base(), { headers: { ...auth(), prefer: 'respond-async' }, body: { name: 'later' } });
    expect(accepted.status, accepted.text).toBe(202);
    const operationId = accepted.body.operation.id;
    expect(accepted.body.operation).toMatchObject({ command: 'CreateBucket', status: expect.stringMatching(/^(pending|running|succeeded)$/) });
    expect(accepted.headers.get('location')).toBe(`/api/projects/${project.id}/operations/${operationId}`);
    await expect.poll(async () => (await call('GET', `/api/projects/${project.id}/operations/${operationId}`, { headers: auth() })).body.status, { timeout: 30_000 }).toBe('succeeded');
    expect(await bucketRow('later')).toBeDefined();
  });

  it('takes concurrent creates of one name: one bucket, the others refused with 409 before anything is recorded, every operation finished', async () => {
    const answers = await Promise.all(Array.from({ length: 4 }, () => call('POST', base(), { headers: auth(), body: { name: 'raced' } })));
    // A create recorded but not yet applied already takes the name: the others are 409 and record nothing.
    for (const answer of answers) expect([201, 409], answer.text).toContain(answer.status);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.status === 409)) expect(refused.body).toMatchObject({ code: 'already_exists' });
    expect(await bucketRow('raced')).toBeDefined();
    const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: auth() });
    expect(operations.body.filter((o: { status: string }) => o.status === 'running' || o.status === 'pending')).toEqual([]);
    const types = await projectEventTypes(project.id);
    // Every bucket command has exactly one outcome.
    const count = (names: string[]) => types.filter((t) => names.includes(t)).length;
    expect(count(['BucketChangeApplied', 'BucketChangeFailed'])).toBe(count(['BucketCreated', 'BucketUpdated', 'BucketDeletionRequested']));
  });
});

describe('a deletion recorded and not applied yet', () => {
  it('keeps its bucket\'s name taken: a create of it is 409 and records nothing, and the deletion, refused once an object came, leaves the bucket', async () => {
    expect((await call('POST', base(), { headers: auth(), body: { name: 'held' } })).status).toBe(201);
    const deletion = await whileAppliesWait(project.id, async () => {
      const accepted = await call('DELETE', `${base()}/held`, { headers: { ...auth(), prefer: 'respond-async' } });
      expect(accepted.status, accepted.text).toBe(202);
      // The bucket is there until the deletion is applied: an object comes into it meanwhile.
      await putObject('held', 'late.txt');
      const before = await streamVersion(project.id);
      const created = await call('POST', base(), { headers: auth(), body: { name: 'held' } });
      expect({ status: created.status, code: created.body.code, message: created.body.message }).toEqual({ status: 409, code: 'already_exists', message: 'bucket "held" is being deleted' });
      // A second DELETE records nothing and follows the first one's operation, as a repeated project DELETE does.
      const again = await call('DELETE', `${base()}/held?force=true`, { headers: { ...auth(), prefer: 'respond-async' } });
      expect(again.status, again.text).toBe(202);
      expect(again.body.operation.id).toBe(accepted.body.operation.id);
      expect(await streamVersion(project.id)).toBe(before);
      return accepted;
    });
    const operation = `/api/projects/${project.id}/operations/${deletion.body.operation.id}`;
    await expect.poll(async () => (await call('GET', operation, { headers: auth() })).body.status, { timeout: 30_000 }).toBe('failed');
    expect(await bucketRow('held')).toBeDefined();
    expect(await objectRows('held')).toBe(1);
    // Its outcome known, the bucket is one like any other again: a DELETE is decided afresh.
    const refused = await call('DELETE', `${base()}/held`, { headers: auth() });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'bucket_not_empty' });
  });
});

describe('deleting the project', () => {
  it('deletes its objects from the store once its database is gone', async () => {
    const doomed = await createProject(ada, 'doomed storage app');
    const created = await call('POST', `/api/projects/${doomed.id}/storage/buckets`, { headers: auth(), body: { name: 'files' } });
    expect(created.status, created.text).toBe(201);
    await store.put(objectKey(doomed.id, 'files', 'kept/until/the/end.txt'), Readable.from([Buffer.from('bye')]), { contentType: 'text/plain' });
    const deleted = await call('DELETE', `/api/projects/${doomed.id}`, { headers: auth() });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.status).toBe('deleted');
    // ProjectDeleted is recorded once the database is gone; the objects follow right after, in the same workflow.
    await expect.poll(async () => (await store.list({ prefix: projectPrefix(doomed.id) })).objects, { timeout: 15_000 }).toEqual([]);
    // The other project's objects are untouched.
    await putObject('avatars', 'still-here.txt');
    expect(await storedKeys('avatars')).toEqual([objectKey(project.id, 'avatars', 'still-here.txt')]);
  });
});
