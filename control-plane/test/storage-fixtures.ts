/**
 * Fixtures of the storage tests: the object store the stack's services use
 * (same backend, same place), opened from the test process, and objects put
 * the way the objects API does (bytes in the store, a row in storage.objects).
 */
import path from 'node:path';
import { Readable } from 'node:stream';
import { inject } from 'vitest';
import { loadConfig } from '@baseplane/contracts';
import { FS_STORAGE_DIR, createFsObjectStore, objectKey, openS3ObjectStore, type ObjectStore } from '@baseplane/contracts/object-store';
import type { TenantDatabase } from '../../deploy/test/tenant';

/** STORAGE_BACKEND of the services: the test process has the environment the stack was started from. */
export const servicesBackend = () => loadConfig(process.env).storageBackend;

/** The store the stack's services write to. */
export async function servicesStore(): Promise<ObjectStore> {
  const config = loadConfig(process.env);
  if (config.storageBackend === 'fs') return createFsObjectStore(path.join(inject('dataDir'), FS_STORAGE_DIR));
  // Without S3_ENDPOINT the stack hands its embedded S3 server to the services.
  const s3 = config.s3.endpoint ? config.s3 : { ...inject('s3'), forcePathStyle: true, bucket: config.s3.bucket };
  return openS3ObjectStore(s3);
}

/**
 * Puts an object as the data plane's objects API does, without it (the bucket suites test the workflow, not uploads):
 * its bytes in the store, its row in storage.objects. Without a version, as an object stored before versions: its
 * bytes at its path's own key, its row naming none.
 */
export async function putObject(
  store: ObjectStore, tenant: TenantDatabase, projectId: string, bucket: string, objectPath: string, text = 'hello', version: string | null = null,
): Promise<void> {
  const stored = await store.put(objectKey(projectId, bucket, objectPath, version), Readable.from([Buffer.from(text)]), { contentType: 'text/plain' });
  await tenant.client.query(
    'insert into storage.objects (bucket, path, size, content_type, etag, version) values ($1, $2, $3, $4, $5, $6)',
    [bucket, objectPath, stored.size, 'text/plain', stored.etag, version],
  );
}
