/**
 * The object store behind Storage (API.md → Storage): the one interface the
 * storage API talks to, implemented on the filesystem (`fs-object-store.ts`)
 * and on any S3-compatible service (`s3-object-store.ts`). Bodies are streams
 * both ways, so no object is ever held whole in memory.
 */
import type { Readable } from 'node:stream';

/** What {@link ObjectStore.put} records and {@link ObjectStore.head} reads back. */
export interface ObjectInfo {
  /** The full key, `<projectId>/<bucket>/<path>` for the storage API (see `object-keys.ts`). */
  key: string;
  /** Bytes of the whole object. */
  size: number;
  /** Opaque version tag without quotes: SHA-256 hex of the bytes on `fs` (MD5 hex for objects stored before SHA-256); on S3 what the server says (MD5 hex, `<md5>-<parts>` when multipart). */
  etag: string;
  contentType: string;
  updatedAt: Date;
}

/** An object as a listing sees it; S3 listings carry no content type, so neither does this. */
export type ListedObject = Omit<ObjectInfo, 'contentType'>;

/** Options of {@link ObjectStore.put}. */
export interface PutOptions {
  contentType: string;
  /** More bytes than this fails the upload with ApiError 413 `payload_too_large`, leaving nothing stored. */
  maxBytes?: number;
  /** Aborting fails the upload and leaves nothing stored. */
  signal?: AbortSignal;
  /**
   * The caller's admission of the upload, decided while the store makes ready
   * (the fs store opens its temp file meanwhile): awaited before a byte is
   * read. Its `maxBytes` applies as the option's does (the smaller of the
   * two, when both are given); a rejection fails the
   * upload with that error, nothing stored. The store observes it whatever
   * happens, so a rejection never goes unhandled.
   */
  admitted?: Promise<{ maxBytes?: number }>;
  /**
   * Called once, when every byte has arrived and is kept where the store will
   * publish it from, just before it becomes the object at the key (the fs
   * store's rename; S3's CompleteMultipartUpload, or for an object of one part
   * its PutObject). The caller takes its lock on the path here, so that the
   * body streams with nothing held and writers of one path publish in the
   * order their locks are granted. `size` is the bytes stored. A rejection
   * fails the upload with that error, nothing published; a call never made is
   * an upload that failed before. The fs store flushes the bytes to disk
   * meanwhile: a put that fails after the call resolved (that flush failed,
   * or the rename) published nothing either, and the caller undoes its step.
   */
  publish?: (stored: { size: number }) => Promise<void>;
}

/** Options of {@link ObjectStore.deleteMany}. */
export interface DeleteOptions {
  /**
   * The keys are versions of objects that a newer version of each replaced,
   * beside them in the same folder: the fs store unlinks them and does no
   * more (no folder is left empty to prune, and none is flushed: a crash that
   * undoes an unlink leaves bytes no row names, which the storage sweep
   * removes).
   */
  superseded?: boolean;
}

/** What a successful {@link ObjectStore.put} stored. */
export interface PutResult {
  size: number;
  etag: string;
}

/**
 * A byte range as HTTP `Range: bytes=` says it: `{start, end}` (both inclusive,
 * `end` clamped to the object), `{start}` to the end, or `{suffixLength}` for the
 * last bytes.
 */
export type ByteRange = { start: number; end?: number } | { suffixLength: number };

/** An object being read: its body and what the answer's headers need. */
export interface ObjectRead {
  /** Holds a file handle or a connection until read to the end or destroyed: do one or the other. */
  body: Readable;
  contentType: string;
  /** Size of the whole object (`Content-Range: bytes a-b/<size>`). */
  size: number;
  etag: string;
  updatedAt: Date;
  /** The bytes `body` carries, inclusive; absent when no range was asked for. */
  range?: { start: number; end: number };
}

/** Options of {@link ObjectStore.list}. */
export interface ListOptions {
  /** Only keys starting with this string (not necessarily at a `/`). */
  prefix: string;
  /** Group keys at the next `/` after the prefix into `prefixes`, like a folder view. */
  folders?: boolean;
  /** Most entries (objects and prefixes together) per page; 1-1000, default 1000. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

/** One page of a listing, in key order (UTF-8 byte order, as S3 sorts). */
export interface ListPage {
  objects: ListedObject[];
  /** With `folders`: the folders directly under the prefix, each ending in `/`. */
  prefixes: string[];
  /** Set when there is more: pass it as `cursor` for the next page. */
  nextCursor?: string;
}

/** Where objects live; keys are validated by {@link assertObjectKey} in every implementation. */
export interface ObjectStore {
  /** `fs` or `s3`: which implementation this is (for logs and health). */
  readonly kind: 'fs' | 's3';
  /**
   * Streams `body` into the object at `key`, replacing any object there only
   * once the whole body has arrived: a failed, aborted or oversized upload
   * leaves the previous state untouched. An object `a` and objects under `a/` may
   * both exist on fs and on S3 proper; a filesystem-backed S3 server (versitygw)
   * refuses the second with ApiError 409 `already_exists`. Keys of versions
   * (`a\t<version>`, see `object-keys.ts`) never clash so.
   */
  put(key: string, body: Readable, options: PutOptions): Promise<PutResult>;
  /** Streams the object (or `range` of it); ApiError 404 when absent, 416 when the range starts past the end. */
  get(key: string, range?: ByteRange): Promise<ObjectRead>;
  /** The object's metadata, or undefined when there is none. */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** A page of the keys under `prefix`. */
  list(options: ListOptions): Promise<ListPage>;
  /**
   * Deletes these keys; an absent key is not an error (as in S3) and counts as deleted. Resolves
   * to the keys deleted: a key the backend refused alone (S3's DeleteObjects answers such keys in
   * `Errors`, a file that cannot be removed on fs) is left out and stays, while the others go. A
   * failure of the whole call rejects (503 `storage_unavailable` on S3).
   */
  deleteMany(keys: readonly string[], options?: DeleteOptions): Promise<string[]>;
  /**
   * Deletes every object whose key starts with `prefix` (non-empty, ending in `/`); resolves to how
   * many. Rejects when one of them could not be deleted (after deleting the rest of its batch): a later call goes on.
   */
  deletePrefix(prefix: string): Promise<number>;
  /**
   * Removes what uploads that never finished left behind (a process killed
   * mid-upload) and that last moved before `before`: on fs the uploads
   * directory's temp files (and what an interrupted prefix deletion left
   * there), on S3 the bucket's incomplete multipart uploads, one whose latest
   * part came later being kept. Resolves to how many went.
   */
  sweepUnfinished(before: Date): Promise<number>;
  /** Releases connections; the store is not used afterwards. */
  close(): Promise<void>;
}

export const DEFAULT_LIST_LIMIT = 1000;
