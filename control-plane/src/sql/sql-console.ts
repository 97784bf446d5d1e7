/**
 * The SQL console: runs an operator's query in the project's database as its
 * owner role, in one transaction under a statement timeout, answers the last
 * statement's result (rows capped), and records the DDL the query ran, as the
 * tenant's event triggers captured it, as one `SqlDdlRecorded` event.
 */
import { randomUUID } from 'node:crypto';
import type { FactoryProvider } from '@nestjs/common';
import pg, { type PoolClient } from 'pg';
import type { Logger } from 'pino';
import {
  ACK_DDL_LOG_STATEMENT,
  ApiError,
  PENDING_DDL_LOG_STATEMENT,
  TAKE_DDL_LOG_STATEMENT,
  projectStreamId,
  sqlConsoleVariables,
  type SqlDdlRecorded,
  type SqlResult,
} from '@baseplane/contracts';
import { EventStore, type NewEvent } from '../event-store/event-store';
import { isDatabaseError, toApiError } from '../http/database-error';
import { TenantConnections } from '../tenants/tenant-connections';
import { columnsOf } from './column-types';
import { LastResultQuery, type QueryMode, type StatementResult } from './last-result-query';

export interface SqlConsoleLimits {
  statementTimeoutMs: number;
  rowCap: number;
  /** Bytes of values an answer holds at most (rows past it are cut, `truncated: true`). */
  resultBytes: number;
}

type DdlCommand = SqlDdlRecorded['data']['commands'][number];

/**
 * The console's Nest provider. The limits are read here, once, while the
 * module is built: a bad value stops the start with one line naming it.
 */
export function sqlConsoleProvider(env: Record<string, string | undefined>, log?: Logger): FactoryProvider<SqlConsole> {
  const limits = sqlConsoleLimits(env);
  return {
    provide: SqlConsole,
    useFactory: (tenants: TenantConnections, events: EventStore) => new SqlConsole(tenants, events, limits, log),
    inject: [TenantConnections, EventStore],
  };
}

/** `SQL_STATEMENT_TIMEOUT_MS` (default 60 s) and `SQL_ROW_CAP` (default 10,000), parsed in contracts' config. */
export function sqlConsoleLimits(env: Record<string, string | undefined>): SqlConsoleLimits {
  return {
    ...sqlConsoleVariables(env),
    // The row cap alone lets 10,000 rows of a megabyte each exhaust the control plane's heap.
    resultBytes: RESULT_BYTES,
  };
}

/** Where PostgreSQL raised an error (locale-independent, unlike the message). */
const routineOf = (error: unknown) => (error as { routine?: string }).routine;

/**
 * Errors of the extended protocol's Parse and Bind, before anything ran: the
 * text holds several statements (42601), or `$n` placeholders (08P01, which
 * the simple protocol reports as the SQL error 42P02).
 */
function needsSimpleProtocol(error: unknown): boolean {
  if (!isDatabaseError(error)) return false;
  return (error.code === '42601' && routineOf(error) === 'exec_parse_message') || (error.code === '08P01' && routineOf(error) === 'exec_bind_message');
}

/** VACUUM, CREATE INDEX CONCURRENTLY, …: refused inside a transaction block, before they do anything. */
const refusesTransactionBlock = (error: unknown) =>
  isDatabaseError(error) && error.code === '25001' && routineOf(error) === 'PreventInTransactionBlock';

/** What one answer may hold of values: room for 10,000 rows of 6 KB. */
const RESULT_BYTES = 64 * 1024 * 1024;

/** How long past the statement timeout the watchdog lets PostgreSQL's own timer act first. */
const WATCHDOG_GRACE_MS = 1_000;

/**
 * Cancels what backend `pid` runs, over a connection of its own as the same
 * owner role (a role may cancel its own backends), which `open` makes: its
 * login heals when the query changed the owner's password and committed.
 */
async function cancelBackend(open: () => Promise<pg.Client>, pid: number): Promise<void> {
  let canceller: pg.Client | undefined;
  try {
    canceller = await open();
    await canceller.query('select pg_catalog.pg_cancel_backend($1)', [pid]);
  } catch {
    // The backend may be gone already, or the database unreachable: nothing more to do here.
  } finally {
    await canceller?.end().catch(() => undefined);
  }
}

/** The query's answer or its error, and the DDL it left applied either way. */
type Outcome = { ddl: DdlCommand[] } & ({ result: SqlResult } | { error: unknown });

/** The first wait before a batch whose event could not be recorded is tried again; doubled each time, up to a minute. */
const RELAY_RETRY_MS = 1_000;
const RELAY_RETRY_MAX_MS = 60_000;

export class SqlConsole {
  /** Projects with DDL batches to record again later, and the timer that will. */
  private readonly retries = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly tenants: TenantConnections,
    private readonly events: EventStore,
    private readonly limits: SqlConsoleLimits,
    private readonly log?: Logger,
  ) {}

  /**
   * Runs `query`; a SQL error is a 400 with its SQLSTATE, and nothing of the query stays applied.
   * DDL that earlier calls left unrecorded goes into the history first, so the history keeps the
   * order the DDL ran in: when that cannot be done, the query does not run (503).
   */
  async execute(projectId: string, query: string, actor: string): Promise<SqlResult> {
    const pool = this.tenants.asOwner(projectId);
    await this.recordEarlierDdl(projectId);
    const client = await this.connect(pool);
    const batch = randomUUID();
    let outcome: Outcome;
    try {
      outcome = await this.run(client, query, batch, actor, () => this.tenants.ownerClient(projectId, { statement_timeout: 5_000 }));
    } catch (error) {
      // Our own statements around the query failed: the connection, not the SQL (08…, 57P…).
      throw toApiError(error);
    } finally {
      // The query may have changed anything about its session (settings,
      // temporary tables, held cursors, LISTEN): its connection is not reused.
      client.release(true);
    }
    await this.recordOrRetry(projectId, { batch, actor, statement: query, commands: outcome.ddl });
    if ('error' in outcome) throw toApiError(outcome.error, 400);
    return outcome.result;
  }

  /**
   * Puts the DDL that earlier console calls left unrecorded into the history,
   * before anything else of the project's is: a console call, or a schema or
   * bucket command (whose event must come after the DDL it may build on).
   * 503 `project_unavailable` when that cannot be done now.
   */
  async recordEarlierDdl(projectId: string): Promise<void> {
    try {
      await this.relay(projectId);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      this.log?.warn({ err: error, projectId }, 'could not record the DDL of an earlier SQL call');
      throw new ApiError(503, 'project_unavailable', 'the DDL of an earlier SQL call is not in the history yet; try again shortly');
    }
  }

  /**
   * Records the project's DDL batches still in its tenant's log (earlier calls
   * whose event could not be recorded), each once, in the order they ran, and
   * removes them there. ApiError 503 when the project's database cannot be
   * read; the platform database's errors as they are.
   */
  private async relay(projectId: string, tenant: TenantQueryable = this.tenants.asOwner(projectId)): Promise<void> {
    const { rows } = await tenant
      .query<{ batch: string; actor: string | null; statement: string | null; command_tag: string; object_type: string | null; object_identity: string | null }>(PENDING_DDL_LOG_STATEMENT)
      .catch(() => { throw new ApiError(503, 'project_unavailable', 'the project database is not reachable'); });
    const batches = new Map<string, DdlBatch>();
    for (const row of rows) {
      let batch = batches.get(row.batch);
      if (!batch) {
        batch = { batch: row.batch, actor: row.actor ?? 'unknown', statement: row.statement ?? '', commands: [] };
        batches.set(row.batch, batch);
      }
      batch.commands.push({ commandTag: row.command_tag, objectType: row.object_type, objectIdentity: row.object_identity });
    }
    for (const batch of batches.values()) {
      if (await this.record(projectId, batch, tenant)) this.log?.info({ projectId, correlationId: batch.batch }, 'recorded the DDL of an earlier SQL call');
    }
  }

  /**
   * {@link relay} for each of `projectIds`, one after another: at start, the
   * batches a control plane that stopped before recording them left behind.
   * A project whose database is out of reach is left to its next console
   * call; one whose history refuses is tried again later. Each project is
   * read over a connection of its own, closed after: the owner pools would
   * keep one idle per project for half a minute, hundreds on a large cluster.
   */
  async relayAll(projectIds: readonly string[]): Promise<void> {
    for (const projectId of projectIds) {
      const client = await this.tenants.ownerClient(projectId, { statement_timeout: 5_000 }).catch(() => undefined);
      if (!client) continue;
      try {
        await this.relayOrRetry(projectId, RELAY_RETRY_MS, client);
      } finally {
        await client.end().catch(() => undefined);
      }
    }
  }

  /** {@link relay}; when the history refuses, again after `retryMs`. A project whose database is out of reach (or gone) is left to its next console call. */
  private relayOrRetry(projectId: string, retryMs: number, tenant?: TenantQueryable): Promise<void> {
    return this.relay(projectId, tenant).catch((error: unknown) => {
      if (error instanceof ApiError) return;
      this.log?.warn({ err: error, projectId }, 'could not record the DDL of an earlier SQL call; trying again later');
      this.retryLater(projectId, retryMs);
    });
  }

  /** {@link record}; when it fails, the batch stays in the tenant's log and is tried again later. */
  private async recordOrRetry(projectId: string, batch: DdlBatch): Promise<void> {
    if (batch.commands.length === 0) return;
    try {
      await this.record(projectId, batch);
    } catch (error) {
      this.log?.warn({ err: error, projectId, correlationId: batch.batch }, 'could not record the DDL of a SQL call; it stays in the project database and is recorded later');
      this.retryLater(projectId, RELAY_RETRY_MS);
    }
  }

  /** Relays the project's pending DDL after `delayMs`, and again later (twice as late) while that fails. */
  private retryLater(projectId: string, delayMs: number): void {
    if (this.retries.has(projectId)) return;
    const timer = setTimeout(() => {
      this.retries.delete(projectId);
      void this.relayOrRetry(projectId, Math.min(delayMs * 2, RELAY_RETRY_MAX_MS));
    }, delayMs);
    // Nothing is lost when the process ends first: the batch waits in the tenant's log for the next call.
    timer.unref();
    this.retries.set(projectId, timer);
  }

  /** Stops the retries (the batches stay in the tenants' logs); Nest calls it as the application closes. */
  onModuleDestroy(): void {
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
  }

  private async connect(pool: pg.Pool): Promise<PoolClient> {
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch {
      throw new ApiError(503, 'project_unavailable', 'the project database is not reachable');
    }
    // A checked-out client has no listener for a connection that dies (say the
    // query terminated its own backend); the running query gets the error.
    client.on('error', () => undefined);
    return client;
  }

  /**
   * One statement runs over the extended protocol, so its rows stop at the
   * cap; several run as a script. A statement that refuses a transaction
   * block runs on its own. The timeout is set for the session, not the
   * transaction, so a COMMIT inside the query does not lift it; and since
   * the query may lift it itself (`set statement_timeout = 0`), a watchdog
   * cancels whatever still runs shortly after the limit.
   */
  private async run(client: PoolClient, query: string, batch: string, actor: string, canceller: () => Promise<pg.Client>): Promise<Outcome> {
    const [, , , snapshot] = (await client.query(
      // baseplane.console marks the session whose DDL the tenant may take (tenant-sql.ts: ddlCaptureSql): the console records it.
      `set statement_timeout = ${this.limits.statementTimeoutMs}; set time zone 'UTC'; set baseplane.console = 'on';
       select pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text as since, pg_catalog.pg_backend_pid() as pid`,
    )) as unknown as [unknown, unknown, unknown, { rows: { since: string; pid: number }[] }];
    // Every transaction of this call, ours or one the query began after a COMMIT of its own, has an id from here on.
    const { since, pid } = snapshot.rows[0]!;
    let mode: QueryMode = 'single';
    let inTransaction = true;
    for (;;) {
      if (inTransaction) await client.query('begin');
      try {
        const started = performance.now();
        const statement = await this.watched(canceller, pid, () => this.runQuery(client, query, mode));
        const duration = Math.round((performance.now() - started) * 100) / 100;
        const result = await this.answer(client, statement, duration);
        let ddl: DdlCommand[];
        try {
          ddl = await takeDdlLog(client, since, batch, actor);
        } catch (error) {
          if (!(isDatabaseError(error) && error.code === '25006')) throw error;
          // The query made its transaction, or the session, read-only (`set transaction read only`):
          // no DDL took effect in it, and what a COMMIT of the query's own made permanent is taken on its own.
          if (inTransaction) await client.query('rollback');
          return { result, ddl: await this.takeLeftovers(client, since, batch, actor) };
        }
        if (inTransaction) await client.query('commit');
        return { result, ddl };
      } catch (error) {
        if (inTransaction) await client.query('rollback').catch(() => undefined);
        if (mode === 'single' && needsSimpleProtocol(error)) {
          mode = 'script';
          continue;
        }
        if (mode === 'single' && inTransaction && refusesTransactionBlock(error)) {
          inTransaction = false;
          continue;
        }
        return { error, ddl: await this.takeLeftovers(client, since, batch, actor) };
      }
    }
  }

  /**
   * After an error: what a COMMIT inside the query made permanent stays, and
   * is history too. The query's own settings (a tiny timeout, a read-only
   * default) must not keep it in the log.
   */
  private async takeLeftovers(client: PoolClient, since: string, batch: string, actor: string): Promise<DdlCommand[]> {
    try {
      await client.query(`reset all; set statement_timeout = ${this.limits.statementTimeoutMs}`);
      return await takeDdlLog(client, since, batch, actor);
    } catch {
      return [];
    }
  }

  /**
   * Runs `work`, cancelling the backend `pid` once it has run past the
   * statement timeout (and PostgreSQL's own timer, normally first, has not
   * stopped it): its error is then the timeout's, whatever settings the
   * query changed.
   */
  private async watched<T>(canceller: () => Promise<pg.Client>, pid: number, work: () => Promise<T>): Promise<T> {
    let overdue = false;
    const watchdog = setTimeout(() => {
      overdue = true;
      void cancelBackend(canceller, pid);
    }, this.limits.statementTimeoutMs + WATCHDOG_GRACE_MS);
    try {
      return await work();
    } catch (error) {
      if (overdue && isDatabaseError(error) && error.code === '57014') {
        throw Object.assign(error, { message: 'canceling statement due to statement timeout' });
      }
      throw error;
    } finally {
      clearTimeout(watchdog);
    }
  }

  private async runQuery(client: PoolClient, query: string, mode: QueryMode): Promise<StatementResult | null> {
    return client.query(new LastResultQuery(query, mode, this.limits.rowCap, this.limits.resultBytes)).result;
  }

  private async answer(client: PoolClient, statement: StatementResult | null, duration: number): Promise<SqlResult> {
    if (!statement) return { columns: [], rows: [], rowCount: 0, duration, truncated: false };
    const columns = await columnsOf(client, statement.fields);
    const affected = /(\d+)$/.exec(statement.commandTag ?? '')?.[1];
    const rowCount = statement.fields.length > 0 || affected === undefined ? statement.rows.length : Number(affected);
    return { columns, rows: statement.rows, rowCount, duration, truncated: statement.truncated };
  }

  /**
   * Appends a batch's DDL to the project's history as one `SqlDdlRecorded`,
   * its correlation id the batch's (once: a batch already there is not
   * appended again), then removes the batch from the tenant's log. True when
   * this call appended it.
   */
  private async record(projectId: string, { batch, actor, statement, commands }: DdlBatch, tenant: TenantQueryable = this.tenants.asOwner(projectId)): Promise<boolean> {
    const event: NewEvent<SqlDdlRecorded> = {
      type: 'SqlDdlRecorded',
      data: { projectId, statement, commands },
      metadata: { actor, at: new Date().toISOString(), correlationId: batch, causationId: null, schemaVersion: 1 },
    };
    const appended = await this.events.appendOnce(projectStreamId(projectId), event);
    await tenant.query(ACK_DDL_LOG_STATEMENT, [batch]);
    return appended;
  }
}

/** Where the DDL log is read and acknowledged: the project's owner pool, or a connection of its own. */
type TenantQueryable = Pick<pg.Pool, 'query'> | Pick<pg.Client, 'query'>;

/** The DDL of one console call: its batch in the tenant's log (the event's correlation id), who ran it, the query. */
interface DdlBatch {
  batch: string;
  actor: string;
  statement: string;
  commands: DdlCommand[];
}

/** The DDL this session ran since `since`, taken into `batch` in the tenant's log (kept there until recorded). */
async function takeDdlLog(client: PoolClient, since: string, batch: string, actor: string): Promise<DdlCommand[]> {
  const { rows } = await client.query<{ command_tag: string; object_type: string | null; object_identity: string | null }>(TAKE_DDL_LOG_STATEMENT, [since, batch, actor]);
  return rows.map((r) => ({ commandTag: r.command_tag, objectType: r.object_type, objectIdentity: r.object_identity }));
}
