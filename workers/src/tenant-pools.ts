/**
 * Connection pools to tenant databases, one small pool per database, made on
 * first use (a connection costs more than most changes), all logging in as
 * one kind of role: the superuser, or each project's apply role. A database
 * about to be dropped has its pools closed first.
 */
import pg from 'pg';
import { inTransaction, tenantDatabaseName } from '@baseplane/contracts';

/** The cluster URL's user (the superuser) on a project's database. */
export function tenantAdminUrl(adminUrl: string, projectId: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${tenantDatabaseName(projectId)}`;
  return url.toString();
}

export class TenantPools {
  private readonly pools = new Map<string, pg.Pool>();

  /** `urlOf` answers the connection string of a project's database. */
  constructor(private readonly urlOf: (projectId: string) => string) {}

  /** Pools logging in as the cluster URL's user (the superuser) to each project's database. */
  static asAdmin(adminUrl: string): TenantPools {
    return new TenantPools((projectId) => tenantAdminUrl(adminUrl, projectId));
  }

  forProject(projectId: string): pg.Pool {
    const database = tenantDatabaseName(projectId);
    let pool = this.pools.get(database);
    if (!pool) {
      // Kept through a burst of commands, given back seconds after it: the cluster's max_connections is shared by
      // every project and the data plane's replicas, and only the data plane gives idle connections back when it is full.
      pool = new pg.Pool({ connectionString: this.urlOf(projectId), max: 2, idleTimeoutMillis: 5_000, application_name: 'baseplane-worker' });
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
