/**
 * Storage on the data plane: the parts the object endpoints and the public
 * and signed URLs share, made once per process.
 */
import type { ObjectStore } from '@baseplane/contracts/object-store';
import type { ObjectUrls } from './object-urls';
import type { StorageCallers } from './storage-caller';
import type { StorageDb } from './storage-db';

export interface Storage {
  store: ObjectStore;
  db: StorageDb;
  callers: StorageCallers;
  urls: ObjectUrls;
}
