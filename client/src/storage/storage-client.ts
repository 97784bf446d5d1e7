/**
 * `client.storage.from(bucket)`: a bucket's objects as the application sees
 * them, with the anon key and the signed-in user's token, so the RLS
 * policies on `storage.objects` decide. The project id comes from the
 * client's `projectId` option, else from the signed-in user's token (`ref`).
 */
import { clientError, failed, ok, type Result } from '../result.js';
import type { Transport } from '../transport.js';
import type { FileBody, ObjectList, SignedUrl, StoredObject } from '../types.js';
import * as objects from './objects.js';

/** Which project the objects belong to, now; null when it cannot be known. */
export type ProjectIdSource = () => string | null;

const unknownProject = () =>
  failed<never>(clientError('project_id_required', 'the project id is not known to this client', 'pass { projectId } to createClient, or sign in first (the user token names the project)'));

export class StorageClient {
  constructor(
    private readonly transport: Transport,
    private readonly projectId: ProjectIdSource,
  ) {}

  /** The objects of one bucket. */
  from(bucket: string): BucketObjects {
    return new BucketObjects(this.transport, this.projectId, bucket);
  }
}

export class BucketObjects {
  constructor(
    private readonly transport: Transport,
    private readonly projectId: ProjectIdSource,
    readonly bucket: string,
  ) {}

  /** Stores `body` at `path` (409 when something is there, unless `upsert`; 413 over the bucket's size limit). */
  upload(path: string, body: FileBody, options?: objects.UploadOptions): Promise<Result<StoredObject>> {
    return this.inProject((id) => objects.uploadObject(this.transport, id, this.bucket, path, body, options));
  }

  download(path: string, options?: { range?: string }): Promise<Result<Blob>> {
    return this.inProject((id) => objects.downloadObject(this.transport, id, this.bucket, path, options));
  }

  /** Objects directly under `prefix` and the prefixes below it. */
  list(prefix?: string, options?: objects.ListOptions): Promise<Result<ObjectList>> {
    return this.inProject((id) => objects.listObjects(this.transport, id, this.bucket, prefix, options));
  }

  /** Removes the objects at `paths`; an empty list removes nothing and, as supabase-js does, makes no request (the server refuses it with 400). */
  remove(paths: string[]): Promise<Result<{ deleted: string[] }>> {
    if (paths.length === 0) return Promise.resolve(ok({ deleted: [] }));
    return this.inProject((id) => objects.removeObjects(this.transport, id, this.bucket, paths));
  }

  createSignedUrl(path: string, expiresIn?: number): Promise<Result<SignedUrl>> {
    return this.inProject((id) => objects.signObjectUrl(this.transport, id, this.bucket, path, expiresIn));
  }

  /** The public address of an object (public buckets only serve it); no request is made. */
  getPublicUrl(path: string): Result<{ publicUrl: string }> {
    const id = this.projectId();
    return id ? objects.publicObjectUrl(this.transport.baseUrl, id, this.bucket, path) : unknownProject();
  }

  private async inProject<T>(work: (projectId: string) => Promise<Result<T>>): Promise<Result<T>> {
    // The token is what names the project when no id was given: wait for the stored session first.
    await this.transport.headers();
    const id = this.projectId();
    return id ? work(id) : unknownProject();
  }
}
