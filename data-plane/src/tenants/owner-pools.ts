/**
 * The data plane's connections to tenant databases as each project's owner
 * role (its password derived from PLATFORM_SECRET): the auth service reads
 * and writes the `auth` schema here. Small pools, made on first use, that
 * make room as the data API's do when the cluster is full (connection-room.ts).
 * A login refused for its password heals it and tries again (platform-logins.ts).
 */
import pg from 'pg';
import { ApiError, inTransaction, type PlatformLogins } from '@baseplane/contracts';
import { unreachable, type ConnectionRoom } from './connection-room';
import { ProjectPools } from './project-pools';
import { Pipelines } from '../rest/pipelines';
import type { SqlClient } from '@baseplane/contracts/user-directory';

/** Ours and a statement's own error (a SQLSTATE) pass; one that never reached the database is the project being unavailable. */
function failure(error: unknown): unknown {
  if (error instanceof ApiError || /^[0-9A-Z]{5}$/.test(String((error as { code?: unknown }).code))) return error;
  return unreachable();
}

/** Shared pipelined connections per project for single statements (pipelines.ts). */
const SHARED_PIPELINES = 1;

export class OwnerPools {
  private readonly pools: ProjectPools;
  private readonly pipelines: Pipelines;

  constructor(logins: PlatformLogins, private readonly room: ConnectionRoom) {
    const connection = (projectId: string) => ({ connectionString: logins.url(projectId, 'owner') });
    this.pools = new ProjectPools((projectId) => logins.healing(new pg.Pool({ ...connection(projectId), max: 5, idleTimeoutMillis: 30_000 }), projectId, 'owner'), room);
    // What runs on the shared connections does not wait for the WAL flush at commit: reads have nothing to flush,
    // and a refresh token's rotation lost in a database crash only makes its client sign in again (quick() says why).
    this.pipelines = new Pipelines((projectId) => ({ ...connection(projectId), options: '-c synchronous_commit=off' }), SHARED_PIPELINES, room);
  }

  /** Runs `work` in one transaction as the project's owner; rolls back on any error. */
  transaction<T>(projectId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction({ connect: () => this.pools.connect(projectId) }, work);
  }

  /** Runs `work` on the pool itself, each statement on its own (no transaction): for single reads on the hot path. */
  async read<T>(projectId: string, work: (db: SqlClient) => Promise<T>): Promise<T> {
    const pool = this.pools.get(projectId);
    // A statement refused a connection (53300) never ran: it is sent again once there is room.
    const db = { query: (text: string | pg.QueryConfig, values?: unknown[]) => this.room.withRoom(() => pool.query(text as string, values)) } as SqlClient;
    try {
      return await work(db);
    } catch (error) {
      throw failure(error);
    }
  }

  /**
   * Runs `work`'s statements, each on its own (its own implicit
   * transaction), on the project's shared pipelined connection when it
   * flows, else on the pool: the check every signed-in request makes, and a
   * refresh token's rotation. On the shared connection a commit does not
   * wait for the WAL flush (`synchronous_commit=off`), so a crash of
   * PostgreSQL may lose the last fraction of a second of such writes; only
   * writes whose loss is harmless go here. A lost rotation puts the session
   * back on the token before, which its client no longer holds: the client's
   * next refresh is refused and it signs in again (only someone who already
   * held the token before could use it, as they could before the rotation).
   */
  async quick<T>(projectId: string, work: (db: SqlClient) => Promise<T>): Promise<T> {
    const lane = this.pipelines.take(projectId);
    if (!lane) return this.read(projectId, work);
    const db: SqlClient = { query: (text: string | pg.QueryConfig, values?: unknown[]) => lane.run((client) => client.query(text as string, values)) } as SqlClient;
    try {
      return await work(db);
    } catch (error) {
      throw failure(error);
    }
  }

  /** Closes a project's connections (deleted project): its database is gone, and so is any reason to keep its pool. */
  drop(projectId: string): Promise<void> {
    this.pipelines.drop(projectId);
    return this.pools.drop(projectId);
  }

  closeAll(): Promise<void> {
    this.pipelines.closeAll();
    return this.pools.closeAll();
  }
}
