/**
 * The storage API's side of a tenant database: per project a small pool of
 * `authenticator` connections, each request's statements in one transaction
 * as the caller's role with its claims (so the app's RLS policies on
 * `storage.objects` decide), and bucket rules read as the owner (buckets are
 * configuration, not data the caller must be allowed to see).
 *
 * A transaction may stay open while bytes stream to the object store: it holds
 * the metadata row's lock, so two writers of one path take turns, and a failed
 * upload rolls its row back.
 */
import pg from 'pg';
import { ApiError, AUTHENTICATOR_PASSWORD_PURPOSE, deriveSecret, inTransaction, notFound, tenantDatabaseName, tenantOwnerUrl } from '@baseplane/contracts';
import type { OwnerPools } from '../tenants/owner-pools';
import { ProjectPools } from '../tenants/project-pools';
import { CALLER_SETUP, callerSetupValues, type Caller } from '../rest/execute';
import { databaseError } from '../rest/db-errors';

/** A bucket's rules, as the upload and the public URL need them. */
export interface BucketRules {
  name: string;
  public: boolean;
  fileSizeLimit: number | null;
  allowedMimeTypes: string[] | null;
}

/** Connections per project and replica: uploads hold one for as long as their bytes flow. */
const POOL_SIZE = 10;
const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

export class StorageDb {
  private readonly pools: ProjectPools;

  constructor(tenantClusterUrl: string, platformSecret: string, private readonly owners: OwnerPools) {
    const password = deriveSecret(platformSecret, AUTHENTICATOR_PASSWORD_PURPOSE);
    this.pools = new ProjectPools((projectId) => new pg.Pool({
      connectionString: tenantOwnerUrl(tenantClusterUrl, 'authenticator', password, tenantDatabaseName(projectId)),
      max: POOL_SIZE,
      idleTimeoutMillis: 30_000,
      application_name: 'baseplane-storage',
    }));
  }

  /** The bucket's rules; 404 `not_found` when the project has no such bucket. */
  async bucket(projectId: string, name: string): Promise<BucketRules> {
    const { rows } = await this.owners.read(projectId, (pool) =>
      pool.query<{ public: boolean; file_size_limit: string | null; allowed_mime_types: string[] | null }>(
        'select public, file_size_limit, allowed_mime_types from storage.buckets where name = $1',
        [name],
      ),
    );
    const row = rows[0];
    if (!row) throw notFound('bucket');
    return { name, public: row.public, fileSizeLimit: row.file_size_limit === null ? null : Number(row.file_size_limit), allowedMimeTypes: row.allowed_mime_types };
  }

  /**
   * Runs `work` in one transaction as `caller` (its role, its claims in
   * `request.jwt.claims`); any error rolls back. Database errors come back as
   * the data API maps them (a policy refusal is 401 for anon, 403 otherwise).
   */
  async transaction<T>(projectId: string, caller: Caller, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await inTransaction(this.pools.get(projectId), async (client: pg.PoolClient) => {
        await client.query(CALLER_SETUP, callerSetupValues(caller));
        return work(client);
      }, unreachable);
    } catch (error) {
      throw databaseError(error, caller.role) ?? error;
    }
  }

  /** Closes a project's pool (deleted project). */
  drop(projectId: string): Promise<void> {
    return this.pools.drop(projectId);
  }

  closeAll(): Promise<void> {
    return this.pools.closeAll();
  }
}
