/**
 * Storage buckets (API.md → Storage): request schemas, the answer's shape and
 * the pure rules a bucket must follow — its name (S3's rules, since on the s3
 * backend it becomes part of every key), its size limit and MIME patterns.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from './errors';
import type { BucketSpec } from './events';

/** A bucket as the API answers it. */
export interface Bucket {
  name: string;
  public: boolean;
  /** Largest object accepted, in bytes; null is no limit of the bucket's own. */
  fileSizeLimit: number | null;
  /** `type/subtype` or `type/*` patterns an upload's content type must match; null accepts any. */
  allowedMimeTypes: string[] | null;
  createdAt: string;
}

/** S3's own cap on one object (5 TiB); a larger limit could never be reached. */
export const MAX_FILE_SIZE_LIMIT = 5 * 1024 ** 4;
export const MAX_ALLOWED_MIME_TYPES = 100;
/** Buckets per project: far above any app's need, low enough that a listing stays one small page. */
export const MAX_BUCKETS = 1000;

const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** A bucket name S3 would accept: 3-63 of a-z, 0-9, `.`, `-`, starting and ending alphanumeric, no `..`, not an IP address. */
export function checkBucketName(name: string): string {
  if (!BUCKET_NAME.test(name) || name.includes('..') || IPV4.test(name)) {
    throw new ApiError(400, 'invalid_request', `invalid bucket name "${name}"`, null,
      'use 3 to 63 lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, without ".." and not shaped like an IP address');
  }
  return name;
}

const TOKEN = "[a-z0-9][a-z0-9!#$&^_.+-]{0,126}";
const MIME_PATTERN = new RegExp(`^${TOKEN}/(\\*|${TOKEN})$`);

/** A MIME pattern, lowercased: `image/png` or `image/*` (RFC 6838 names). */
export function checkMimePattern(pattern: string): string {
  const normalised = pattern.trim().toLowerCase();
  if (!MIME_PATTERN.test(normalised)) {
    throw new ApiError(400, 'invalid_request', `invalid MIME type pattern "${pattern}"`, null, 'use type/subtype, or type/* for every subtype');
  }
  return normalised;
}

export const CreateBucketBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63 }),
    public: Type.Optional(Type.Boolean()),
    fileSizeLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: MAX_FILE_SIZE_LIMIT }), Type.Null()])),
    allowedMimeTypes: Type.Optional(Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: MAX_ALLOWED_MIME_TYPES }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateBucketBody = Static<typeof CreateBucketBody>;

export const UpdateBucketBody = Type.Object({ public: Type.Boolean() }, { additionalProperties: false });
export type UpdateBucketBody = Static<typeof UpdateBucketBody>;

export const DeleteBucketQuery = Type.Object({ force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) });
export type DeleteBucketQuery = Static<typeof DeleteBucketQuery>;

/** A bucket in a path: only its length is checked, so a bucket named otherwise (made in SQL) can still be found or deleted. */
export const BucketNameParam = Type.Object({ name: Type.String({ minLength: 1, maxLength: 63 }) });

/** The body checked and normalised into what the command carries (an empty pattern list accepts nothing, so it is refused). */
export function toBucketSpec(body: CreateBucketBody): BucketSpec {
  const types = body.allowedMimeTypes ?? null;
  if (types !== null && types.length === 0) {
    throw new ApiError(400, 'invalid_request', 'allowedMimeTypes must not be empty', null, 'omit it or send null to accept any type');
  }
  return {
    name: checkBucketName(body.name),
    public: body.public ?? false,
    fileSizeLimit: body.fileSizeLimit ?? null,
    allowedMimeTypes: types === null ? null : [...new Set(types.map(checkMimePattern))],
  };
}

/** An object as the API answers it; `owner` is the end user who uploaded it, null for operators and the service key. */
export interface StorageObject {
  path: string;
  size: number;
  contentType: string;
  etag: string;
  updatedAt: string;
  owner: string | null;
}

/** A listing: the objects directly under the prefix, and the folders (`photos/2024/`) below it. */
export interface ObjectListing {
  objects: StorageObject[];
  prefixes: string[];
}

const ObjectPath = Type.String({ minLength: 1, maxLength: 1024 });
const QueryBoolean = Type.Union([Type.Literal('true'), Type.Literal('false')]);
const QueryInteger = Type.String({ pattern: '^[0-9]{1,10}$', patternMessage: 'must be a whole number of at most 10 digits' });

/** Page size of an object listing when none is asked, and the most one page may hold. */
export const DEFAULT_OBJECT_PAGE = 100;
export const MAX_OBJECT_PAGE = 1000;
/** Paths one delete may name. */
export const MAX_DELETE_PATHS = 1000;
/** Signed URLs live 1 s to 7 days (S3's presigned-URL ceiling); 1 h when not asked. */
export const DEFAULT_SIGNED_URL_SECONDS = 3600;
export const MAX_SIGNED_URL_SECONDS = 7 * 24 * 3600;

export const ObjectPathQuery = Type.Object({ path: ObjectPath });
export const UploadObjectQuery = Type.Object({ path: ObjectPath, upsert: Type.Optional(QueryBoolean) });
export type UploadObjectQuery = Static<typeof UploadObjectQuery>;
export const ListObjectsQuery = Type.Object({
  prefix: Type.Optional(Type.String({ maxLength: 1024 })),
  limit: Type.Optional(QueryInteger),
  offset: Type.Optional(QueryInteger),
});
export type ListObjectsQuery = Static<typeof ListObjectsQuery>;
export const SignedUrlQuery = Type.Object({ path: ObjectPath, expiresIn: Type.Optional(QueryInteger) });
export type SignedUrlQuery = Static<typeof SignedUrlQuery>;
export const DeleteObjectsBody = Type.Object(
  { paths: Type.Array(ObjectPath, { minItems: 1, maxItems: MAX_DELETE_PATHS }) },
  { additionalProperties: false },
);
export type DeleteObjectsBody = Static<typeof DeleteObjectsBody>;

/** A whole number of a query string within [min, max], else 400 naming it. */
export function queryInteger(raw: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (value < min || value > max) throw new ApiError(400, 'invalid_request', `${name} must be from ${min} to ${max}`);
  return value;
}

/**
 * True when `contentType` (parameters ignored, case-insensitive) matches one of
 * a bucket's patterns (`image/png`, `image/*`); a bucket without patterns takes any.
 */
export function mimeTypeAllowed(allowed: readonly string[] | null, contentType: string): boolean {
  if (allowed === null) return true;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const major = type.split('/')[0];
  return allowed.some((pattern) => pattern === type || (pattern.endsWith('/*') && pattern.slice(0, -2) === major));
}

/**
 * The statement that takes one object path's lock in a tenant database, until
 * its transaction ends (`$1` the bucket, `$2` the path): a transaction-level
 * advisory lock on a 64-bit hash of both. Every upload takes it before it
 * claims the path's row and publishes its bytes, so claims of one path follow
 * each other and each reads the version it replaces after the last one
 * committed; the storage sweep takes it before it removes bytes at the path, so
 * it never removes a version whose claim has yet to commit (an upload that
 * replaces an object updates its row, which locks nothing of the bucket's).
 */
export const OBJECT_PATH_LOCK_SQL = `select pg_catalog.pg_advisory_xact_lock(${objectPathLockKey('$1', '$2')})`;

/** The key of {@link OBJECT_PATH_LOCK_SQL}'s lock as SQL, of a bucket and a path given as SQL expressions. */
export function objectPathLockKey(bucket: string, path: string): string {
  return `pg_catalog.hashtextextended((${bucket})::text || '/' || (${path})::text, 7011006)`;
}
