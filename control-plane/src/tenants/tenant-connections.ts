/**
 * Connections to tenant databases as the project's owner role (never a
 * superuser): the SQL console and the management reads and writes run here.
 * The owner's password is derived from PLATFORM_SECRET, so nothing is stored.
 */
import pg from 'pg';
import { ApiError, deriveSecret, inTransaction, ownerPasswordPurpose, tenantDatabaseName, tenantOwnerRole, tenantOwnerUrl } from '@baseplane/contracts';

const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

export class TenantConnections {
  private readonly pools = new Map<string, pg.Pool>();

  constructor(private readonly tenantClusterUrl: string, private readonly platformSecret: string) {}

  /** A small pool per project, logged in as `p_<id>_owner` on `p_<id>`. */
  asOwner(projectId: string): pg.Pool {
    let pool = this.pools.get(projectId);
    if (!pool) {
      const password = deriveSecret(this.platformSecret, ownerPasswordPurpose(projectId));
      pool = new pg.Pool({ connectionString: tenantOwnerUrl(this.tenantClusterUrl, tenantOwnerRole(projectId), password, tenantDatabaseName(projectId)), max: 4, idleTimeoutMillis: 30_000 });
      pool.on('error', () => undefined);
      this.pools.set(projectId, pool);
    }
    return pool;
  }

  /** Runs `work` in one transaction as the owner; rolls back on any error. */
  transaction<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.asOwner(projectId), work, unreachable);
  }

  async close(projectId: string): Promise<void> {
    const pool = this.pools.get(projectId);
    this.pools.delete(projectId);
    await pool?.end();
  }

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.end()));
  }
}
