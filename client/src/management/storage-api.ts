/**
 * Management of a project's storage (API.md → Storage): buckets, and the
 * objects in them with the operator's rights.
 */
import type { Result } from '../result.js';
import * as objects from '../storage/objects.js';
import { segment, send, type Transport } from '../transport.js';
import type { Bucket, FileBody, ObjectList, OperationAnswer, SignedUrl, StoredObject } from '../types.js';

export interface NewBucket {
  name: string;
  public?: boolean;
  /** Largest object in bytes; null for no limit of the bucket's own. */
  fileSizeLimit?: number | null;
  /** `type/subtype` or `type/*`; null accepts any. */
  allowedMimeTypes?: string[] | null;
}

const bucketsPath = (projectId: string, name?: string) => `/api/projects/${segment(projectId)}/storage/buckets${name === undefined ? '' : `/${segment(name)}`}`;

export function storageApi(t: Transport) {
  return {
    /** Each change of a bucket answers once applied, or `{ operation }` to follow when it is not after 30 s (API.md → Waiting). */
    buckets: {
      list: (projectId: string): Promise<Result<Bucket[]>> => send(t, 'GET', bucketsPath(projectId)),
      create: (projectId: string, bucket: NewBucket): Promise<Result<Bucket | OperationAnswer>> => send(t, 'POST', bucketsPath(projectId), { body: bucket }),
      /** Makes the bucket public or private. */
      update: (projectId: string, name: string, changes: { public: boolean }): Promise<Result<Bucket | OperationAnswer>> => send(t, 'PATCH', bucketsPath(projectId, name), { body: changes }),
      /** Deletes the bucket; `force` deletes its objects first (otherwise 409 when it has any). */
      remove: (projectId: string, name: string, options: { force?: boolean } = {}): Promise<Result<{ name: string; deleted: true } | OperationAnswer>> =>
        send(t, 'DELETE', bucketsPath(projectId, name), { query: { force: options.force } }),
    },
    objects: {
      list: (projectId: string, bucket: string, prefix?: string, options?: objects.ListOptions): Promise<Result<ObjectList>> =>
        objects.listObjects(t, projectId, bucket, prefix, options),
      upload: (projectId: string, bucket: string, path: string, body: FileBody, options?: objects.UploadOptions): Promise<Result<StoredObject>> =>
        objects.uploadObject(t, projectId, bucket, path, body, options),
      download: (projectId: string, bucket: string, path: string, options?: { range?: string }): Promise<Result<Blob>> =>
        objects.downloadObject(t, projectId, bucket, path, options),
      signedUrl: (projectId: string, bucket: string, path: string, expiresIn?: number): Promise<Result<SignedUrl>> =>
        objects.signObjectUrl(t, projectId, bucket, path, expiresIn),
      remove: (projectId: string, bucket: string, paths: string[]): Promise<Result<{ deleted: string[] }>> => objects.removeObjects(t, projectId, bucket, paths),
    },
  };
}
