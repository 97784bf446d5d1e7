/**
 * Connections to tenant databases as the project's owner role (never a
 * superuser): the SQL console and the management reads and writes run here.
 * The owner's password is derived from PLATFORM_SECRET, so nothing is stored;
 * owner code that changes it has it set back at the next login (platform-logins.ts).
 */
import pg from 'pg';
import { ApiError, PlatformLogins, inTransaction, type HealReport } from '@baseplane/contracts';

const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

/**
 * How long a project's idle owner connection stays. The cluster's
 * max_connections is shared by every project, the data plane's replicas and
 * the workers, and only the data plane gives idle connections back when the
 * cluster is full: the console's callers come every few seconds at most, and a
 * new connection costs a few milliseconds, so the control plane keeps a
 * touched project's connection seconds, not half a minute.
 */
const IDLE_MS = 5_000;

export class TenantConnections {
  private readonly pools = new Map<string, pg.Pool>();
  /** The cluster's admin connection, opened only to heal an owner login (its pool keeps none idle for long). */
  private readonly admin: pg.Pool;
  private readonly logins: PlatformLogins;

  constructor(tenantClusterUrl: string, platformSecret: string, report?: (heal: HealReport) => void) {
    this.admin = new pg.Pool({ connectionString: tenantClusterUrl, max: 1, idleTimeoutMillis: 1_000 });
    this.admin.on('error', () => undefined);
    this.logins = new PlatformLogins(tenantClusterUrl, platformSecret, (sql) => this.admin.query(sql), report);
  }

  /** A small pool per project, logged in as `p_<id>_owner` on `p_<id>`. */
  asOwner(projectId: string): pg.Pool {
    let pool = this.pools.get(projectId);
    if (!pool) {
      pool = this.logins.healing(new pg.Pool({
        connectionString: this.logins.url(projectId, 'owner'), max: 4, idleTimeoutMillis: IDLE_MS, application_name: 'baseplane-control-plane',
      }), projectId, 'owner');
      pool.on('error', () => undefined);
      this.pools.set(projectId, pool);
    }
    return pool;
  }

  /** A connection of its own as the owner, outside the pool (its login healed as the pool's are); the caller ends it. */
  ownerClient(projectId: string, config: pg.ClientConfig = {}): Promise<pg.Client> {
    return this.logins.connect(projectId, 'owner', async () => {
      const client = new pg.Client({ ...config, connectionString: this.logins.url(projectId, 'owner') });
      client.on('error', () => undefined);
      try {
        await client.connect();
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      return client;
    });
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
    await Promise.all([...pools, this.admin].map((pool) => pool.end()));
  }
}
