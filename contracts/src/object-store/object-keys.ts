/**
 * Object keys: how the storage API names objects in the store, and the rules a
 * key must follow so that every backend can hold it (the filesystem one turns
 * segments into file names, so `..`, empty segments and NUL are refused).
 */
import { ApiError, invalidRequest } from '../errors';
import type { ByteRange, ListOptions } from './object-store';
import { DEFAULT_LIST_LIMIT } from './object-store';

/** S3's limit on a key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;
/** Per `/`-separated segment: the fs store makes each a file name (255 bytes) plus a 2-byte tag. */
export const MAX_SEGMENT_BYTES = 250;

/**
 * The key of a storage object: `<projectId>/<bucket>/<path>`. One S3 bucket (or
 * one directory) holds every project, so deleting a bucket or a project is a
 * delete of its prefix ({@link bucketPrefix}, {@link projectPrefix}).
 */
export function objectKey(projectId: string, bucket: string, objectPath: string): string {
  return `${bucketPrefix(projectId, bucket)}${objectPath}`;
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

/** Throws ApiError 400 unless `key` is a key every backend can store. */
export function assertObjectKey(key: string): void {
  if (key === '') throw invalidRequest('object key must not be empty');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw invalidRequest(`object key must be at most ${MAX_KEY_BYTES} bytes`);
  }
  // Control characters break file names and HTTP headers alike.
  if (/[\u0000-\u001f\u007f]/.test(key)) throw invalidRequest('object key must not contain control characters');
  for (const part of key.split('/')) {
    if (part === '') throw invalidRequest('object key must not start or end with "/" nor contain "//"');
    if (part === '.' || part === '..') throw invalidRequest('object key must not contain "." or ".." segments');
    if (Buffer.byteLength(part, 'utf8') > MAX_SEGMENT_BYTES) {
      throw invalidRequest(`each "/"-separated part of an object key must be at most ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
}

/** Throws ApiError 400 unless `prefix` is empty or could start a valid key. */
export function assertListPrefix(prefix: string): void {
  if (prefix === '') return;
  // A prefix may end in "/" (a folder) or mid-segment ("photos/ca"); the rest must look like a key.
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
