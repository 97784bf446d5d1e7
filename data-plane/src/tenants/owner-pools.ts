/**
 * The data plane's connections to tenant databases as each project's owner
 * role (its password derived from PLATFORM_SECRET): the auth service reads
 * and writes the `auth` schema here. Small pools, made on first use.
 */
import pg from 'pg';
import { ApiError, deriveSecret, inTransaction, ownerPasswordPurpose, tenantDatabaseName, tenantOwnerRole, tenantOwnerUrl } from '@baseplane/contracts';
import { ProjectPools } from './project-pools';
import { Pipelines } from '../rest/pipelines';
import type { SqlClient } from '@baseplane/contracts/user-directory';

const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');
/** Ours and a statement's own error (a SQLSTATE) pass; one that never reached the database is the project being unavailable. */
function failure(error: unknown): unknown {
  if (error instanceof ApiError || /^[0-9A-Z]{5}$/.test(String((error as { code?: unknown }).code))) return error;
  return unreachable();
}

/** Shared pipelined connections per project for single-statement reads (pipelines.ts). */
const READ_PIPELINES = 1;

export class OwnerPools {
  private readonly pools: ProjectPools;
  private readonly pipelines: Pipelines;

  constructor(tenantClusterUrl: string, platformSecret: string) {
    const connection = (projectId: string) => ({
      connectionString: tenantOwnerUrl(tenantClusterUrl, tenantOwnerRole(projectId), deriveSecret(platformSecret, ownerPasswordPurpose(projectId)), tenantDatabaseName(projectId)),
    });
    this.pools = new ProjectPools((projectId) => new pg.Pool({ ...connection(projectId), max: 5, idleTimeoutMillis: 30_000 }));
    this.pipelines = new Pipelines(connection, READ_PIPELINES);
  }

  private pool(projectId: string): pg.Pool {
    return this.pools.get(projectId);
  }

  /** Runs `work` in one transaction as the project's owner; rolls back on any error. */
  transaction<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool(projectId), work, unreachable);
  }

  /** Runs `work` on the pool itself, each statement on its own (no transaction): for single reads on the hot path. */
  async read<T>(projectId: string, work: (pool: pg.Pool) => Promise<T>): Promise<T> {
    try {
      return await work(this.pool(projectId));
    } catch (error) {
      throw failure(error);
    }
  }

  /**
   * Runs `work`'s reads — each statement on its own, none writing — on the
   * project's shared pipelined connection when it flows, else on the pool:
   * the check every signed-in request makes goes here.
   */
  async lookup<T>(projectId: string, work: (db: SqlClient) => Promise<T>): Promise<T> {
    const lane = this.pipelines.take(projectId);
    if (!lane) return this.read(projectId, work);
    const db: SqlClient = { query: (text: string | pg.QueryConfig, values?: unknown[]) => lane.run((client) => client.query(text as string, values)) } as SqlClient;
    try {
      return await work(db);
    } catch (error) {
      throw failure(error);
    }
  }

  closeAll(): Promise<void> {
    this.pipelines.closeAll();
    return this.pools.closeAll();
  }
}
