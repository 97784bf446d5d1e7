/**
 * The data plane's connections to tenant databases as each project's owner
 * role (its password derived from PLATFORM_SECRET): the auth service reads
 * and writes the `auth` schema here. Small pools, made on first use.
 */
import pg from 'pg';
import { ApiError, deriveSecret, inTransaction, ownerPasswordPurpose, tenantDatabaseName, tenantOwnerRole, tenantOwnerUrl } from '@baseplane/contracts';
import { ProjectPools } from './project-pools';

const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

export class OwnerPools {
  private readonly pools: ProjectPools;

  constructor(tenantClusterUrl: string, platformSecret: string) {
    this.pools = new ProjectPools((projectId) => {
      const password = deriveSecret(platformSecret, ownerPasswordPurpose(projectId));
      return new pg.Pool({ connectionString: tenantOwnerUrl(tenantClusterUrl, tenantOwnerRole(projectId), password, tenantDatabaseName(projectId)), max: 5, idleTimeoutMillis: 30_000 });
    });
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
      // Ours and a statement's own error (a SQLSTATE) pass; one that never reached the database is the project being unavailable.
      if (error instanceof ApiError || /^[0-9A-Z]{5}$/.test(String((error as { code?: unknown }).code))) throw error;
      throw unreachable();
    }
  }

  closeAll(): Promise<void> {
    return this.pools.closeAll();
  }
}
