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
