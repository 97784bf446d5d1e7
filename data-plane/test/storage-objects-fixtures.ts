/**
 * The app the storage-objects e2e suites share, made afresh by each suite that
 * calls useStorageApp(): a project with buckets docs, pics (public, 1 KiB,
 * images only) and avatars (each user's own folder under RLS), a second
 * project with its own docs, an operator of another team and two end users;
 * and the calls those suites make. Bytes are checked in the store the services
 * write to (STORAGE_BACKEND: fs in the main pass, the embedded S3 server in the
 * second), rows in the tenant database.
 */
import { createHash } from 'node:crypto';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { loadConfig } from '@baseplane/contracts';
import { objectKey, VERSION_SEPARATOR, type ObjectStore } from '@baseplane/contracts/object-store';
import { bearer, call, signUpOperator, type Operator } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { servicesBackend, servicesStore } from '../../control-plane/test/storage-fixtures';
import { restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

// Set by useStorageApp()'s beforeAll; importers see them through the module's live bindings.
export let p: RestProject;
export let other: RestProject;
export let stranger: Operator;
export let tenant: TenantDatabase;
export let store: ObjectStore;
export let alice: { token: string; id: string };
export let bob: { token: string; id: string };

export const objects = (bucket: string, projectId = p.project.id) => `/api/projects/${projectId}/storage/buckets/${bucket}/objects`;
export const operator = () => bearer(p.operator.token);
export const asUser = (user: { token: string }) => ({ ...p.anon, ...bearer(user.token) });
export const md5 = (bytes: Buffer | string) => createHash('md5').update(bytes).digest('hex');
/** The etag of a single-part object: on fs the SHA-256 of its bytes, on S3 the server's own (the MD5). */
export const etagOf = (bytes: Buffer | string) => createHash(servicesBackend() === 'fs' ? 'sha256' : 'md5').update(bytes).digest('hex');
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Uploaded {
  status: number;
  body: any;
}

/** Uploads `bytes` as multipart field `file` (what API.md pins). */
export async function upload(bucket: string, path: string, bytes: Buffer | string, headers: Record<string, string>, options: { type?: string; upsert?: boolean; field?: string } = {}): Promise<Uploaded> {
  const form = new FormData();
  form.append(options.field ?? 'file', new Blob([bytes], { type: options.type ?? 'text/plain' }), path.split('/').pop());
  const query = `?path=${encodeURIComponent(path)}${options.upsert ? '&upsert=true' : ''}`;
  const response = await fetch(new URL(objects(bucket) + query, inject('baseUrl')), { method: 'POST', headers, body: form });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** GETs a URL of the gateway and answers the bytes. */
export async function fetchBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(new URL(url, inject('baseUrl')), { headers });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** The path and query of a URL the service handed out (its host is PUBLIC_URL). */
export const local = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

/** How many multipart uploads the stack's own S3 server holds under `key`. */
export async function s3MultipartUploads(key: string): Promise<number> {
  const s3 = inject('s3');
  const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: s3 });
  try {
    return (await client.send(new ListMultipartUploadsCommand({ Bucket: loadConfig(process.env).s3.bucket, Prefix: key }))).Uploads?.length ?? 0;
  } finally {
    client.destroy();
  }
}

/** True when the services store on the stack's own S3 server (not on one S3_ENDPOINT names). */
export const onStackS3 = () => servicesBackend() === 's3' && loadConfig(process.env).s3.endpoint === undefined;

export async function rowOf(bucket: string, path: string) {
  return (await tenant.client.query('select size, content_type, etag, owner, version from storage.objects where bucket = $1 and path = $2', [bucket, path])).rows[0];
}

/** The store key of the object's bytes: its path and the version its row names (without a row, or a version, the path's own key). */
export async function storedKeyOf(bucket: string, path: string): Promise<string> {
  return objectKey(p.project.id, bucket, path, (await rowOf(bucket, path))?.version ?? null);
}

/** Every key the store holds for the object at `path`, sorted: its path's own and each version's. */
export async function storedKeysOf(bucket: string, path: string): Promise<string[]> {
  const own = objectKey(p.project.id, bucket, path);
  const listed = await store.list({ prefix: own });
  return listed.objects.map((object) => object.key).filter((key) => key === own || key.startsWith(`${own}${VERSION_SEPARATOR}`)).sort();
}

export async function createBucket(project: RestProject, body: Record<string, unknown>): Promise<void> {
  const answer = await call('POST', `/api/projects/${project.project.id}/storage/buckets`, { headers: bearer(project.operator.token), body });
  expect(answer.status, answer.text).toBe(201);
}

/** Makes the shared app before the calling suite's tests, and lets it go after them. */
export function useStorageApp(): void {
  beforeAll(async () => {
    [p, other, stranger] = await Promise.all([restProject('objects app'), restProject('other app'), signUpOperator('Stranger')]);
    tenant = await connectTenant(p.project.id);
    store = await servicesStore();
    await createBucket(p, { name: 'docs' });
    await createBucket(p, { name: 'pics', public: true, fileSizeLimit: 1024, allowedMimeTypes: ['image/*'] });
    await createBucket(p, { name: 'avatars' });
    await createBucket(other, { name: 'docs' });
    // The policies an app writes: each user reads and writes only under avatars/<their id>/.
    await sql(p, `
      create policy avatars_insert on storage.objects for insert to authenticated
        with check (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
      create policy avatars_select on storage.objects for select to authenticated
        using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
      create policy avatars_update on storage.objects for update to authenticated
        using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
      create policy avatars_delete on storage.objects for delete to authenticated
        using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
    `);
    [alice, bob] = await Promise.all([signUpUser(p), signUpUser(p)]);
  });
  afterAll(async () => {
    await tenant?.end();
    await store?.close();
  });
}
