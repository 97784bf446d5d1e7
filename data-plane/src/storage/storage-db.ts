/**
 * The storage API's side of a tenant database: per project a small pool of
 * `authenticator` connections, each request's statements as the caller's
 * role with its claims (so the app's RLS policies on `storage.objects`
 * decide), and bucket rules read as the owner (buckets are configuration,
 * not data the caller must be allowed to see).
 *
 * Statements travel in batches under one Sync (one-sync.ts), so a request
 * costs few round trips: a read is one batch, an implicit transaction that
 * PostgreSQL commits at the Sync; a transaction that must stay open while
 * bytes stream to the object store is one batch that begins it (with the
 * caller's first statements) and one that ends it (with its last ones and
 * COMMIT). Held open, it keeps the metadata row's lock, so two writers of one
 * path take turns, and a failed upload rolls its row back.
 */
import pg from 'pg';
import { ApiError, AUTHENTICATOR_PASSWORD_PURPOSE, deriveSecret, notFound, tenantDatabaseName, tenantOwnerUrl } from '@baseplane/contracts';
import type { OwnerPools } from '../tenants/owner-pools';
import { ProjectPools } from '../tenants/project-pools';
import { BEGIN_STEP, callerSetupStep, wireValues, type Caller } from '../rest/execute';
import { OneSyncBatch, type BatchStep } from '../rest/one-sync';
import { databaseError } from '../rest/db-errors';

/** A bucket's rules, as the upload and the public URL need them. */
export interface BucketRules {
  name: string;
  public: boolean;
  fileSizeLimit: number | null;
  allowedMimeTypes: string[] | null;
}

/** One statement of a batch: a name to parse it once per connection, its text, its parameters. */
export interface StorageStatement {
  name: string;
  text: string;
  values: readonly unknown[];
}

/** A row as PostgreSQL's text format gives it. */
export type TextRow = Record<string, string | null>;

/** The transaction {@link StorageDb.transaction} keeps open while its work runs. */
export interface OpenTransaction {
  /** Runs `statements` and COMMIT in one round trip; answers each statement's rows. */
  commit(statements: readonly StorageStatement[]): Promise<TextRow[][]>;
}

/** Connections per project and replica: uploads hold one for as long as their bytes flow. */
const POOL_SIZE = 10;
const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

const COMMIT: BatchStep = { name: 'bp_commit', text: 'commit', values: [] };

function toStep(statement: StorageStatement): BatchStep {
  return { name: statement.name, text: statement.text, values: wireValues(statement.values), describe: true };
}

/** Sends `steps` as one batch on `client`; answers the rows of each. */
async function runBatch(client: pg.PoolClient, steps: BatchStep[]): Promise<TextRow[][]> {
  const batch = new OneSyncBatch(steps);
  void client.query(batch);
  return (await batch.done).map((result) => result.rows);
}

export class StorageDb {
  private readonly pools: ProjectPools;

  constructor(tenantClusterUrl: string, platformSecret: string, private readonly owners: OwnerPools) {
    const password = deriveSecret(platformSecret, AUTHENTICATOR_PASSWORD_PURPOSE);
    this.pools = new ProjectPools((projectId) => new pg.Pool({
      connectionString: tenantOwnerUrl(tenantClusterUrl, 'authenticator', password, tenantDatabaseName(projectId)),
      max: POOL_SIZE,
      idleTimeoutMillis: 30_000,
      // Recycled now and then: named statements accumulate per connection.
      maxUses: 20_000,
      application_name: 'baseplane-storage',
    }));
  }

  /** The bucket's rules; 404 `not_found` when the project has no such bucket. */
  async bucket(projectId: string, name: string): Promise<BucketRules> {
    const { rows } = await this.owners.read(projectId, (pool) =>
      pool.query<{ public: boolean; file_size_limit: string | null; allowed_mime_types: string[] | null }>({
        name: 'bp_storage_bucket', // parsed and planned once per connection
        text: 'select public, file_size_limit, allowed_mime_types from storage.buckets where name = $1',
        values: [name],
      }),
    );
    const row = rows[0];
    if (!row) throw notFound('bucket');
    return { name, public: row.public, fileSizeLimit: row.file_size_limit === null ? null : Number(row.file_size_limit), allowedMimeTypes: row.allowed_mime_types };
  }

  /**
   * Runs `statements` as `caller` (its role, its claims in
   * `request.jwt.claims`) in one round trip and one transaction; answers each
   * statement's rows. Database errors come back as the data API maps them (a
   * policy refusal is 401 for anon, 403 otherwise).
   */
  run(projectId: string, caller: Caller, statements: readonly StorageStatement[]): Promise<TextRow[][]> {
    return this.withClient(caller, projectId, async (client) => (await runBatch(client, [callerSetupStep(caller), ...statements.map(toStep)])).slice(1));
  }

  /**
   * Begins a transaction as `caller` with `first` in one round trip, then runs
   * `work` with their rows while it stays open; `work` ends it with
   * {@link OpenTransaction.commit}, or it is committed as it is when `work`
   * returns. Any error rolls back, and is mapped as {@link run}'s are.
   */
  transaction<T>(projectId: string, caller: Caller, first: readonly StorageStatement[], work: (rows: TextRow[][], tx: OpenTransaction) => Promise<T>): Promise<T> {
    return this.withClient(caller, projectId, async (client, broken) => {
      let open = true;
      try {
        const rows = (await runBatch(client, [BEGIN_STEP, callerSetupStep(caller), ...first.map(toStep)])).slice(2);
        const tx: OpenTransaction = {
          commit: async (statements) => {
            const answered = await runBatch(client, [...statements.map(toStep), COMMIT]);
            open = false;
            return answered.slice(0, -1);
          },
        };
        const result = await work(rows, tx);
        if (open) {
          await client.query('commit');
          open = false;
        }
        return result;
      } catch (error) {
        // A failed batch leaves the transaction aborted but open (its BEGIN ran): it ends here either way.
        if (open) await client.query('rollback').catch(broken);
        throw error;
      }
    });
  }

  /**
   * A pool client of the project for `use`, released after; dropped instead
   * when `use` calls `broken` (pg's pool drops a lost connection itself).
   */
  private async withClient<T>(caller: Caller, projectId: string, use: (client: pg.PoolClient, broken: () => void) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pools.get(projectId).connect();
    } catch {
      throw unreachable();
    }
    // A connection that dies while checked out emits 'error' on the client; unheard, it would end the process.
    const lost = () => undefined;
    client.on('error', lost);
    let broken = false;
    try {
      return await use(client, () => { broken = true; });
    } catch (error) {
      throw error instanceof ApiError ? error : (databaseError(error, caller.role) ?? error);
    } finally {
      client.off('error', lost);
      client.release(broken);
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
