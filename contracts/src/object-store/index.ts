/**
 * Storage's object stores: the interface, the two backends and the key layout,
 * plus {@link createObjectStore} choosing the backend from the configuration.
 *
 * `@baseplane/contracts/object-store` is the one I/O exception of contracts
 * (the root export stays pure): the data plane (objects) and the workers
 * (emptying a bucket being deleted) write to the same store, so the store and
 * its key layout live in one place both may import.
 */
import path from 'node:path';
import type { Config } from '../config';
import { createFsObjectStore } from './fs-object-store';
import type { ObjectStore } from './object-store';
import { openS3ObjectStore } from './s3-object-store';

export * from './object-store';
export {
  assertListPrefix, assertObjectKey, assertObjectPath, assertPathPrefix, assertVersionedPath, bucketPrefix, newObjectVersion, objectKey, objectNotFound, parseObjectKey,
  payloadTooLarge, projectPrefix, VERSION_SEPARATOR,
} from './object-keys';
export { assertContentType } from './content-type';
export { createFsObjectStore } from './fs-object-store';
export { openS3ObjectStore, type S3ObjectStoreOptions } from './s3-object-store';

/** Directory of the fs store under DATA_DIR. */
export const FS_STORAGE_DIR = 'storage';

/**
 * The store STORAGE_BACKEND names: files under `<DATA_DIR>/storage`, or the S3
 * bucket of the S3_* variables (checked, and created when missing, on open).
 */
export function createObjectStore(config: Config): Promise<ObjectStore> {
  if (config.storageBackend === 'fs') {
    return Promise.resolve(createFsObjectStore(path.join(config.dataDir, FS_STORAGE_DIR)));
  }
  return openS3ObjectStore({ ...config.s3 });
}
