/**
 * Superuser connection pools to tenant databases, one small pool per
 * database, made on first use: a connection costs more than most changes.
 * A database about to be dropped has its pool closed first.
 */
import pg from 'pg';
import { inTransaction, tenantDatabaseName } from '@baseplane/contracts';

export class TenantPools {
  private readonly pools = new Map<string, pg.Pool>();

  constructor(private readonly adminUrl: string) {}

  forProject(projectId: string): pg.Pool {
    const database = tenantDatabaseName(projectId);
    let pool = this.pools.get(database);
    if (!pool) {
      const url = new URL(this.adminUrl);
      url.pathname = `/${database}`;
      pool = new pg.Pool({ connectionString: url.toString(), max: 2, idleTimeoutMillis: 30_000 });
      pool.on('error', () => undefined);
      this.pools.set(database, pool);
    }
    return pool;
  }

  /** Runs `work` in one transaction on the project's database; rolls back on any error. */
  transaction<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.forProject(projectId), work);
  }

  async close(projectId: string): Promise<void> {
    const database = tenantDatabaseName(projectId);
    const pool = this.pools.get(database);
    this.pools.delete(database);
    await pool?.end();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.pools.keys()].map((database) => this.pools.get(database)!.end()));
    this.pools.clear();
  }
}
