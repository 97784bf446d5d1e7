/**
 * Reads a tenant's buckets from its live `storage.buckets` (as the owner
 * role, which owns the storage tables and so is not held back by their RLS):
 * the answers of the buckets API and the facts the bucket decider needs.
 */
import type { PoolClient } from 'pg';
import type { Bucket } from '@baseplane/contracts';

/** What deciding a bucket command needs to know of one bucket. */
export interface BucketFacts {
  name: string;
  public: boolean;
  /** Whether `storage.objects` has any row of this bucket. */
  hasObjects: boolean;
  /** A deletion of it is recorded and not applied yet: it may still fail (objects uploaded meanwhile), so its name stays taken. */
  deleting?: boolean;
}

interface BucketRow {
  name: string;
  public: boolean;
  file_size_limit: string | null;
  allowed_mime_types: string[] | null;
  created_at: Date;
}

/** All buckets (or just `only`), ordered by name, as the API answers them. */
export async function readBuckets(client: PoolClient, only?: string): Promise<Bucket[]> {
  const { rows } = await client.query<BucketRow>(
    `select name, public, file_size_limit, allowed_mime_types, created_at from storage.buckets
     where $1::text is null or name = $1 order by name`,
    [only ?? null],
  );
  return rows.map((row) => ({
    name: row.name,
    public: row.public,
    // int8 arrives as text; limits stay below 2^53 (MAX_FILE_SIZE_LIMIT).
    fileSizeLimit: row.file_size_limit === null ? null : Number(row.file_size_limit),
    allowedMimeTypes: row.allowed_mime_types,
    createdAt: row.created_at.toISOString(),
  }));
}

/** Every bucket with whether it holds objects (an index probe per bucket, not a count). */
export async function readBucketFacts(client: PoolClient): Promise<BucketFacts[]> {
  const { rows } = await client.query<BucketFacts>(
    `select b.name, b.public, exists (select from storage.objects o where o.bucket = b.name) as "hasObjects"
     from storage.buckets b order by b.name`,
  );
  return rows;
}
