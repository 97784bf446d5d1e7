/**
 * The storage sweep's activities: finding bytes the object store holds that
 * no row of their project's `storage.objects` names, and removing them.
 *
 * Each upload stores a version of its own (its key is the path and the
 * version, contracts' object-keys.ts) and commits a row naming it; a key
 * without a version is an object stored before versions, which its row names
 * with none. Bytes whose key names no row's (path, version) are no object's:
 * an upload's whose COMMIT was never sent (a crash after its bytes were
 * published) or lost with its connection, an S3 Complete that landed after
 * its upload gave up, a version replaced or deleted whose bytes the data plane
 * could not delete then. They are never served or listed (every read goes through the row),
 * but they take room, and nothing else removes them.
 *
 * The sweep lists a bucket's objects page by page and asks the tenant database
 * which of them no row names. A page's candidates are removed only under locks
 * that order the sweep with uploads: the lock of each candidate's path
 * (contracts' OBJECT_PATH_LOCK_SQL), which every upload takes before it
 * claims its row and holds to its COMMIT, then `FOR UPDATE` on the bucket's
 * row, which conflicts with the `FOR KEY SHARE` every new row's foreign key
 * takes on it. Taking them waits for the claims in flight at those paths to
 * commit or roll back, and holds new ones back, so the rows read again under
 * them are the truth: bytes whose upload is between its publish and its
 * COMMIT (a new row, or a row it updates to name its version) are named by
 * then, and no claim can publish at a path while its bytes are being removed.
 * The paths' locks come first, in order, and the bucket's last, as an upload
 * takes its path's and then its foreign key's. Objects stored less than the
 * grace period ago are not even looked at: whatever is still settling is left
 * to the next sweep.
 *
 * A sweep of every project also removes what uploads killed half-way left
 * in the store (the fs store's temp files, S3's incomplete multipart uploads)
 * once it has not moved for an hour: the fs store sweeps its own only when a
 * process starts, and nothing else sweeps S3's.
 *
 * Nothing of the app's runs here: the statements only read rows and take locks
 * (no trigger fires, a superuser session passes no policy).
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { objectPathLockKey } from '@baseplane/contracts';
import { bucketPrefix, parseObjectKey, type ObjectStore } from '@baseplane/contracts/object-store';
import { tenantAdminUrl } from './tenant-pools';
import { withHeartbeat } from './activities';

export interface StorageSweepDependencies {
  platformDb: pg.Pool;
  /** The tenant cluster as its superuser: each project's sweep logs in to the project's database once, and out when done. */
  tenantDatabaseUrl: string;
  objects: ObjectStore;
  log: Logger;
}

/** What one project's sweep did. */
export interface ProjectSweep {
  checked: number;
  removed: number;
}

/** Objects per page of the store's listing, and so per row lookup. */
const PAGE = 1000;
/** Objects removed under one hold of the bucket's lock: uploads into the bucket wait while it is held. */
const REMOVE_BATCH = 100;
/** How long the sweep waits for a path's lock or the bucket's before leaving a batch to the next sweep (a transaction holding one that long is not an upload's). */
const LOCK_TIMEOUT = '10s';

/** Bytes in the store: the key, and the path and version it names (the key less its bucket's prefix, parsed). */
interface StoredVersion {
  key: string;
  path: string;
  version: string | null;
}

/** Of `stored` in `bucket`, those whose (path, version) no row names (the query of both looks). */
async function rowless(client: pg.Client, bucket: string, stored: StoredVersion[]): Promise<StoredVersion[]> {
  const { rows } = await client.query<{ i: string }>(
    `select s.i from unnest($2::text[], $3::text[]) with ordinality as s(path, version, i)
     where not exists (select 1 from storage.objects o where o.bucket = $1 and o.path = s.path and o.version is not distinct from s.version)`,
    [bucket, stored.map((one) => one.path), stored.map((one) => one.version)],
  );
  return rows.map((row) => stored[Number(row.i) - 1]!);
}

/** PostgreSQL's SQLSTATE of a failed query, if that is what failed. */
const sqlState = (error: unknown) => (error as { code?: unknown }).code;

export function createStorageSweepActivities({ platformDb, tenantDatabaseUrl, objects, log }: StorageSweepDependencies) {
  /** Removes, under their paths' locks and the bucket's, those of `candidates` that no row names still; answers how many went. */
  async function removeRowless(client: pg.Client, projectId: string, bucket: string, candidates: StoredVersion[]): Promise<number> {
    // The transaction only holds the locks: it writes nothing, and ends in a rollback.
    await client.query('begin');
    try {
      await client.query(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
      // In the array's order, sorted: two sweeps at once take them in one order.
      const paths = [...new Set(candidates.map((one) => one.path))].sort();
      await client.query(`select pg_catalog.pg_advisory_xact_lock(${objectPathLockKey('$1', 'p.path')}) from unnest($2::text[]) as p(path)`, [bucket, paths]);
      const locked = await client.query('select 1 from storage.buckets where name = $1 for update', [bucket]);
      // Deleted meanwhile: emptying its prefix is the project workflow's part.
      if (locked.rowCount === 0) return 0;
      const still = await rowless(client, bucket, candidates);
      if (still.length === 0) return 0;
      const removed = new Set(await objects.deleteMany(still.map((one) => one.key)));
      const went = still.filter((one) => removed.has(one.key));
      log.warn({ projectId, bucket, removed: went.map(({ path, version }) => ({ path, version })) }, 'storage sweep removed bytes no row names');
      return went.length;
    } catch (error) {
      // 55P03: a lock was not granted in time; the next sweep tries again.
      if (sqlState(error) !== '55P03') throw error;
      log.warn({ projectId, bucket }, 'storage sweep left a batch: a path or the bucket stayed locked');
      return 0;
    } finally {
      await client.query('rollback').catch(() => undefined);
    }
  }

  /** Looks at the bucket's objects stored more than `graceSeconds` ago, a page at a time, and removes those no row names. */
  async function sweepBucket(client: pg.Client, projectId: string, bucket: string, graceSeconds: number, sweep: ProjectSweep): Promise<void> {
    const prefix = bucketPrefix(projectId, bucket);
    let cursor: string | undefined;
    do {
      const page = await objects.list({ prefix, limit: PAGE, ...(cursor === undefined ? {} : { cursor }) });
      cursor = page.nextCursor;
      const settled = Date.now() - graceSeconds * 1000;
      const stored: StoredVersion[] = [];
      for (const object of page.objects) {
        if (object.updatedAt.getTime() > settled) continue;
        // A key no upload made (a version of another form) is left alone: nothing here knows whose it is.
        const named = parseObjectKey(object.key.slice(prefix.length));
        if (named) stored.push({ key: object.key, ...named });
      }
      sweep.checked += stored.length;
      if (stored.length === 0) continue;
      const candidates = await rowless(client, bucket, stored);
      for (let i = 0; i < candidates.length; i += REMOVE_BATCH) {
        sweep.removed += await removeRowless(client, projectId, bucket, candidates.slice(i, i + REMOVE_BATCH));
      }
    } while (cursor !== undefined);
  }

  return {
    /** Up to `limit` active projects whose id sorts after `after`, in id order. */
    async listProjectsToSweep({ after, limit }: { after?: string; limit: number }): Promise<string[]> {
      const { rows } = await platformDb.query<{ id: string }>(
        `select id from projects where status = 'active' and ($1::uuid is null or id > $1::uuid) order by id limit $2`,
        [after ?? null, limit],
      );
      return rows.map((row) => row.id);
    },

    /** Removes what uploads that never finished left in the store, untouched for `staleSeconds` (the store's {@link ObjectStore.sweepUnfinished}). */
    async sweepUnfinishedUploads({ staleSeconds }: { staleSeconds: number }): Promise<number> {
      const removed = await withHeartbeat(() => objects.sweepUnfinished(new Date(Date.now() - staleSeconds * 1000)));
      if (removed > 0) log.warn({ removed }, 'storage sweep removed what unfinished uploads left');
      return removed;
    },

    /** Sweeps every bucket of one project; a project that is not active (any more) is skipped. */
    async sweepProjectStorage({ projectId, graceSeconds }: { projectId: string; graceSeconds: number }): Promise<ProjectSweep> {
      const active = await platformDb.query(`select 1 from projects where id = $1 and status = 'active'`, [projectId]);
      if (active.rowCount === 0) return { checked: 0, removed: 0 };
      // One connection for the whole sweep, closed after it: a pool kept per project would hold as many idle
      // connections as projects swept in its idle time, from a cluster whose connections every project shares.
      // row_security off: a login that policies would filter (a cluster admin that is not a superuser) gets an error
      // instead of fewer rows, which would make every object look rowless.
      const client = new pg.Client({
        connectionString: tenantAdminUrl(tenantDatabaseUrl, projectId), application_name: 'baseplane-storage-sweep', options: '-c row_security=off',
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
      } catch (error) {
        // 3D000: the database went with the project, deleted since the check above.
        if (sqlState(error) === '3D000') return { checked: 0, removed: 0 };
        throw error;
      }
      try {
        const sweep: ProjectSweep = { checked: 0, removed: 0 };
        await withHeartbeat(async () => {
          // 42P01: a database the tenant schema's storage revision has not reached yet has no buckets.
          const buckets = await client.query<{ name: string }>('select name from storage.buckets order by name')
            .catch((error: unknown) => { if (sqlState(error) === '42P01') return { rows: [] }; throw error; });
          for (const { name } of buckets.rows) await sweepBucket(client, projectId, name, graceSeconds, sweep);
        });
        return sweep;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}

export type StorageSweepActivities = ReturnType<typeof createStorageSweepActivities>;

