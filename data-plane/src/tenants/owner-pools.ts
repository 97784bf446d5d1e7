/**
 * The data plane's connections to tenant databases as each project's owner
 * role (its password derived from PLATFORM_SECRET): the auth service reads
 * and writes the `auth` schema here. Small pools, made on first use.
 */
import pg from 'pg';
import { ApiError, deriveSecret, ownerPasswordPurpose, tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';

export class OwnerPools {
  private readonly pools = new Map<string, pg.Pool>();

  constructor(private readonly tenantClusterUrl: string, private readonly platformSecret: string) {}

  private pool(projectId: string): pg.Pool {
    let pool = this.pools.get(projectId);
    if (!pool) {
      const url = new URL(this.tenantClusterUrl);
      url.username = tenantOwnerRole(projectId);
      url.password = deriveSecret(this.platformSecret, ownerPasswordPurpose(projectId));
      url.pathname = `/${tenantDatabaseName(projectId)}`;
      pool = new pg.Pool({ connectionString: url.toString(), max: 5, idleTimeoutMillis: 30_000 });
      pool.on('error', () => undefined);
      this.pools.set(projectId, pool);
    }
    return pool;
  }

  /** Runs `work` in one transaction as the project's owner; rolls back on any error. */
  async transaction<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool(projectId).connect();
    } catch {
      throw new ApiError(503, 'project_unavailable', 'the project database is not reachable');
    }
    // A connection that dies while checked out emits 'error' on the client; unheard, it would end the process.
    const ignoreLostConnection = () => undefined;
    client.on('error', ignoreLostConnection);
    try {
      await client.query('begin');
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignoreLostConnection);
      client.release();
    }
  }

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.end()));
  }
}
