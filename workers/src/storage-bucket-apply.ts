/**
 * Applying a bucket event to the tenant's `storage.buckets` (and, for a
 * deletion, its `storage.objects` rows), inside the caller's transaction. What
 * the decider checked may have changed since (SQL, a concurrent command): a
 * bucket gone, or objects uploaded into one deleted without force, is refused
 * here as a non-retryable failure carrying the reason, and nothing changes.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { PoolClient } from 'pg';
import type { BucketEvent } from '@baseplane/contracts';
import type { DatabaseErrorInfo } from './activities';

/** A refusal the workflow turns into BucketChangeFailed with these words (typed as the database errors are, so it reads them the same way). */
function refused(message: string, hint: string | null = null): ApplicationFailure {
  const info: DatabaseErrorInfo = { code: null, message, detail: null, hint };
  return ApplicationFailure.nonRetryable(message, 'DatabaseError', info);
}

/** The bucket an event is about. */
export function bucketOf(event: BucketEvent): string | undefined {
  switch (event.type) {
    case 'BucketCreated':
      return event.data.bucket.name;
    case 'BucketUpdated':
    case 'BucketDeletionRequested':
      return event.data.name;
    case 'BucketChangeApplied':
    case 'BucketChangeFailed':
      return undefined;
  }
}

/** Changes the rows; PostgreSQL's own refusals (a name taken meanwhile: 23505) pass through to be classified. */
export async function applyBucketRows(client: PoolClient, event: BucketEvent): Promise<void> {
  switch (event.type) {
    case 'BucketCreated': {
      const { name, public: isPublic, fileSizeLimit, allowedMimeTypes } = event.data.bucket;
      await client.query(
        'insert into storage.buckets (name, public, file_size_limit, allowed_mime_types) values ($1, $2, $3, $4)',
        [name, isPublic, fileSizeLimit, allowedMimeTypes],
      );
      return;
    }
    case 'BucketUpdated': {
      const updated = await client.query('update storage.buckets set public = $2, updated_at = now() where name = $1', [event.data.name, event.data.public]);
      if (updated.rowCount === 0) throw refused(`bucket "${event.data.name}" no longer exists`);
      return;
    }
    case 'BucketDeletionRequested': {
      const { name, force } = event.data;
      // Locks the bucket: an upload's row insert (a foreign key to it) waits for this transaction.
      const bucket = await client.query('select 1 from storage.buckets where name = $1 for update', [name]);
      if (bucket.rowCount === 0) throw refused(`bucket "${name}" no longer exists`);
      if (!force) {
        const objects = await client.query('select 1 from storage.objects where bucket = $1 limit 1', [name]);
        if (objects.rowCount) throw refused(`bucket "${name}" is not empty: objects were added after the deletion was decided`, 'delete it with ?force=true to empty it first');
      }
      await client.query('delete from storage.objects where bucket = $1', [name]);
      await client.query('delete from storage.buckets where name = $1', [name]);
      return;
    }
    case 'BucketChangeApplied':
    case 'BucketChangeFailed':
      throw ApplicationFailure.nonRetryable(`${event.type} is an outcome, not a change`);
  }
}
