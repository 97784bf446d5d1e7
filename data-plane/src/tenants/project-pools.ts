/**
 * Connection pools kept per project, made on first use: the auth service's,
 * the data API's and storage's each hold one of these, with their own login
 * and size, and all give back their idle connections when any part of the
 * replica finds the cluster full (connection-room.ts). A deleted project's
 * pool is dropped; shutdown closes them all.
 */
import type pg from 'pg';
import { ApiError } from '@baseplane/contracts';
import { unreachable, type ConnectionRoom } from './connection-room';

/** Every connection of the project's pool stayed in use for as long as a request may wait for one. */
const busy = () => new ApiError(503, 'project_unavailable', 'every connection to the project database is in use; try again');

export class ProjectPools {
  private readonly pools = new Map<string, pg.Pool>();

  constructor(private readonly make: (projectId: string) => pg.Pool, private readonly room: ConnectionRoom) {
    room.add(() => this.closeIdle());
  }

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

  /** A connection of the project's pool, room made for it when the cluster is full; 503 `project_unavailable` when none comes. */
  async connect(projectId: string): Promise<pg.PoolClient> {
    try {
      return await this.room.withRoom(() => this.get(projectId).connect());
    } catch (error) {
      // pg-pool's connectionTimeoutMillis (a pool that sets one): every connection stayed busy.
      if ((error as Error).message === 'timeout exceeded when trying to connect') throw busy();
      throw unreachable();
    }
  }

  /**
   * Closes the idle connections of every project's pool: when the cluster
   * refuses a new connection (max_connections reached), those this process
   * keeps for projects that are not asking now are the ones to give back.
   */
  async closeIdle(): Promise<void> {
    const closed: Array<Promise<unknown>> = [];
    for (const pool of this.pools.values()) {
      // A pool hands out its idle connections first: taking each once and destroying it closes them.
      for (let idle = pool.idleCount; idle > 0; idle--) {
        closed.push(pool.connect().then((client) => {
          const ended = new Promise((resolve) => client.once('end', resolve));
          client.release(true);
          return ended;
        }, () => undefined));
      }
    }
    await Promise.all(closed);
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
