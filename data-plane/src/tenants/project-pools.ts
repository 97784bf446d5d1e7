/**
 * Connection pools kept per project, made on first use: the auth service's,
 * the data API's and storage's each hold one of these, with their own login
 * and size. A deleted project's pool is dropped; shutdown closes them all.
 */
import type pg from 'pg';

export class ProjectPools {
  private readonly pools = new Map<string, pg.Pool>();

  constructor(private readonly make: (projectId: string) => pg.Pool) {}

  /** The project's pool, made now if it has none. */
  get(projectId: string): pg.Pool {
    let pool = this.pools.get(projectId);
    if (!pool) {
      pool = this.make(projectId);
      // An idle connection that dies emits 'error' on the pool; unheard, it would end the process.
      pool.on('error', () => undefined);
      this.pools.set(projectId, pool);
    }
    return pool;
  }

  /** Closes a project's pool (deleted project). */
  async drop(projectId: string): Promise<void> {
    const pool = this.pools.get(projectId);
    this.pools.delete(projectId);
    await pool?.end().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
  }
}
