/**
 * Object keys: how the storage API names objects in the store, and the rules a
 * key must follow so that every backend can hold it (the filesystem one turns
 * segments into file names, so `..`, empty segments and NUL are refused).
 *
 * Each stored version of an object has a key of its own: the object's path
 * with `\t<version>` after its last segment. A tab is a character no path may
 * hold (control characters are refused), so a key parses back to its path and
 * version without doubt, and a version's key is never a folder: on an S3
 * server that keeps objects as files (versitygw's posix backend) `a/b` and
 * `a/b/c` are the files `a/b\t<v1>` and `a/b/c\t<v2>`, where `a/b` alone would
 * have to be a file and a folder at once. Tab is the one control character
 * XML 1.0 carries, so S3's listings return such keys as they are. Objects
 * stored before versions (tenant schema revision 6) have none: their bytes
 * stay at the path's own key.
 */
import { randomBytes } from 'node:crypto';
import { ApiError, invalidRequest } from '../errors';
import type { ByteRange, ListOptions } from './object-store';
import { DEFAULT_LIST_LIMIT } from './object-store';

/** S3's limit on a key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;
/** Per `/`-separated segment: the fs store makes each a file name (255 bytes) plus a 2-byte tag. */
export const MAX_SEGMENT_BYTES = 250;

/** What separates an object's path from its version in a key. */
export const VERSION_SEPARATOR = '\t';
/** A version as keys carry it; {@link newObjectVersion} makes 24 hex digits, and the tenant schema checks the same form. */
const VERSION = /^[0-9A-Za-z_-]{1,64}$/;
/** Bytes a version made by {@link newObjectVersion} adds to a key, its separator included. */
export const VERSION_SUFFIX_BYTES = 1 + 24;

/** A fresh version for an upload: 96 random bits as hex (lower case, so no two differ by case alone on a case-folding filesystem). */
export function newObjectVersion(): string {
  return randomBytes(12).toString('hex');
}

/**
 * The key of a storage object's bytes: `<projectId>/<bucket>/<path>`, and
 * `\t<version>` after it for a version (none for an object stored before
 * versions). One S3 bucket (or one directory) holds every project, so deleting
 * a bucket or a project is a delete of its prefix ({@link bucketPrefix},
 * {@link projectPrefix}).
 */
export function objectKey(projectId: string, bucket: string, objectPath: string, version?: string | null): string {
  const key = `${bucketPrefix(projectId, bucket)}${objectPath}`;
  return version == null ? key : `${key}${VERSION_SEPARATOR}${version}`;
}

/**
 * The path and version a key names, from the key less its bucket's prefix;
 * version null for a key without one. Undefined for what no key of
 * {@link objectKey} looks like (a version of another form).
 */
export function parseObjectKey(keyInBucket: string): { path: string; version: string | null } | undefined {
  const separator = keyInBucket.indexOf(VERSION_SEPARATOR);
  if (separator < 0) return { path: keyInBucket, version: null };
  const version = keyInBucket.slice(separator + 1);
  if (!VERSION.test(version)) return undefined;
  return { path: keyInBucket.slice(0, separator), version };
}

/** Every object of one storage bucket of a project starts with this. */
export function bucketPrefix(projectId: string, bucket: string): string {
  return `${projectPrefix(projectId)}${segment(bucket, 'bucket name')}/`;
}

/** Every object of a project starts with this. */
export function projectPrefix(projectId: string): string {
  return `${segment(projectId, 'project id')}/`;
}

function segment(value: string, what: string): string {
  if (value === '' || value.includes('/') || value === '.' || value === '..') {
    throw invalidRequest(`${what} must be one non-empty path segment`);
  }
  return value;
}

/** Throws ApiError 400 unless `key` is a key every backend can store: a path, with or without a version after it. */
export function assertObjectKey(key: string): void {
  if (key === '') throw invalidRequest('object key must not be empty');
  const separator = key.indexOf(VERSION_SEPARATOR);
  const unversioned = separator < 0 ? key : key.slice(0, separator);
  if (separator >= 0 && !VERSION.test(key.slice(separator + 1))) {
    throw invalidRequest('object key must not contain control characters');
  }
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw invalidRequest(`object key must be at most ${MAX_KEY_BYTES} bytes`);
  }
  // Control characters break file names and HTTP headers alike (the version's tab aside, which is ours).
  if (/[\u0000-\u001f\u007f]/.test(unversioned)) throw invalidRequest('object key must not contain control characters');
  for (const part of unversioned.split('/')) {
    if (part === '') throw invalidRequest('object key must not start or end with "/" nor contain "//"');
    if (part === '.' || part === '..') throw invalidRequest('object key must not contain "." or ".." segments');
  }
  // The version is part of the last segment's file name.
  for (const part of key.split('/')) {
    if (Buffer.byteLength(part, 'utf8') > MAX_SEGMENT_BYTES) {
      throw invalidRequest(`each "/"-separated part of an object key must be at most ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
}

/**
 * Throws ApiError 400 unless `path` is one an object may have under `prefix`
 * (its bucket's): the key without a version, no tab of a version in it.
 */
export function assertObjectPath(prefix: string, path: string): void {
  if (path.includes(VERSION_SEPARATOR)) throw invalidRequest('object key must not contain control characters');
  assertObjectKey(`${prefix}${path}`);
}

/**
 * Throws ApiError 400 unless a version's key can be made for the object at
 * `path` under `prefix`: an upload's check, which leaves room for the version
 * in the last segment and in the key, and says so.
 */
export function assertVersionedPath(prefix: string, path: string): void {
  assertObjectPath(prefix, path);
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (Buffer.byteLength(name, 'utf8') > MAX_SEGMENT_BYTES - VERSION_SUFFIX_BYTES) {
    throw invalidRequest(`the last "/"-separated part of an object's path must be at most ${MAX_SEGMENT_BYTES - VERSION_SUFFIX_BYTES} bytes (the store keeps its version beside it)`);
  }
  if (Buffer.byteLength(prefix + path, 'utf8') > MAX_KEY_BYTES - VERSION_SUFFIX_BYTES) {
    throw invalidRequest(`object key must be at most ${MAX_KEY_BYTES - VERSION_SUFFIX_BYTES} bytes before its version`);
  }
}

/** Throws ApiError 400 unless `prefix` is empty or could start an object's path (no tab of a version in it). */
export function assertPathPrefix(prefix: string): void {
  if (prefix.includes(VERSION_SEPARATOR)) throw invalidRequest('object key must not contain control characters');
  assertListPrefix(prefix);
}

/** Throws ApiError 400 unless `prefix` is empty or could start a valid key. */
export function assertListPrefix(prefix: string): void {
  if (prefix === '') return;
  // A prefix may end in "/" (a folder), mid-segment ("photos/ca") or mid-version ("photos/cat.png\t", every version of
  // an object); the rest must look like a key.
  const separator = prefix.indexOf(VERSION_SEPARATOR);
  if (separator >= 0) {
    const version = prefix.slice(separator + 1);
    assertObjectKey(prefix.slice(0, separator) + (version === '' ? '' : VERSION_SEPARATOR + version));
    return;
  }
  assertObjectKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
}

/** Throws ApiError 400 unless `prefix` names a folder: a non-empty prefix ending in `/`. */
export function assertFolderPrefix(prefix: string): void {
  if (!prefix.endsWith('/') || prefix === '/') {
    throw invalidRequest('a prefix to delete must be non-empty and end with "/"');
  }
  assertObjectKey(prefix.slice(0, -1));
}

/** The page size a listing asked for, checked. */
export function listLimit(options: ListOptions): number {
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > DEFAULT_LIST_LIMIT) {
    throw invalidRequest(`limit must be an integer from 1 to ${DEFAULT_LIST_LIMIT}`);
  }
  return limit;
}

/**
 * Resolves `range` against an object of `size` bytes to inclusive offsets; ApiError 416
 * when it selects nothing (HTTP's "range not satisfiable").
 */
export function resolveRange(range: ByteRange, size: number): { start: number; end: number } {
  if ('suffixLength' in range) {
    if (!Number.isInteger(range.suffixLength) || range.suffixLength < 1 || size === 0) throw rangeNotSatisfiable(size);
    return { start: Math.max(0, size - range.suffixLength), end: size - 1 };
  }
  const { start } = range;
  const end = Math.min(range.end ?? size - 1, size - 1);
  if (!Number.isInteger(start) || start < 0 || start >= size || (range.end !== undefined && range.end < start)) {
    throw rangeNotSatisfiable(size);
  }
  return { start, end };
}

/** ApiError 416, carrying the size for `Content-Range: bytes *\/<size>`. */
export function rangeNotSatisfiable(size: number): ApiError {
  return new ApiError(416, 'range_not_satisfiable', 'requested range is outside the object', { size });
}

/** ApiError 404 for an object key. */
export function objectNotFound(): ApiError {
  return new ApiError(404, 'not_found', 'object not found');
}

/** ApiError 413 for an upload over its limit. */
export function payloadTooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'payload_too_large', `object exceeds the maximum size of ${maxBytes} bytes`, { maxBytes });
}

/** `Range` header value for S3 from a {@link ByteRange}. */
export function rangeHeader(range: ByteRange): string {
  if ('suffixLength' in range) return `bytes=-${range.suffixLength}`;
  return `bytes=${range.start}-${range.end ?? ''}`;
}
