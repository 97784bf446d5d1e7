/**
 * Stage 4 of a data request, the only one touching PostgreSQL (PostgREST's
 * `MainTx`): per project a bounded pool of connections as its own
 * authenticator login (`p_<id>_authenticator`) and
 * a few shared pipelined ones for reads; per request one transaction with
 * `SET LOCAL ROLE`, the caller's claims in `request.jwt.claims`, the
 * request's other `request.*` settings and the statement, sent as one batch.
 * Also reads the catalog for the schema cache.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { ApiError, type PlatformLogins } from '@baseplane/contracts';
import { unreachable, type ConnectionRoom } from '../tenants/connection-room';
import { ProjectPools } from '../tenants/project-pools';
import { databaseError } from './db-errors';
import { OneSyncBatch, type BatchStep, type StepResult } from './one-sync';
import { Pipelines } from './pipelines';
import { CATALOG_QUERY, snapshotFromCatalog } from './schema-cache';
import type { SchemaSnapshot } from './schema-model';
import type { Statement, StatementRow } from './sql';
import type { RequestSettings } from './tx-settings';

/** The database role a request runs as. */
export type ApiRole = 'anon' | 'authenticated' | 'service_role';

/** Who is asking: the role and, for a user, the verified claims of the token. */
export interface Caller {
  role: ApiRole;
  claims: Record<string, unknown> | null;
}

export interface DataPoolOptions {
  /** Connections per project and replica that a request holds alone (writes, and reads when no shared one flows). */
  maxConnections?: number;
  /** Shared pipelined connections per project and replica (0: none). */
  pipelines?: number;
}

/** How long one statement of a request may run (57014, answered 504, past it). */
export const REQUEST_STATEMENT_TIMEOUT_MS = 15_000;

/**
 * Role, claims and statement timeout for this transaction only:
 * `set_config(…, true)` is SET LOCAL, and role and claims travel as
 * parameters ({@link callerSetupValues}). The timeout is set on every
 * request, not only at connect: owner code (an rpc function) may change it
 * for the whole session, and the connection serves other callers next. The
 * function is named with its schema, so none of the owner's can stand in.
 */
export const CALLER_SETUP =
  "select pg_catalog.set_config('role', $1, true), pg_catalog.set_config('request.jwt.claims', $2, true), " +
  `pg_catalog.set_config('statement_timeout', '${REQUEST_STATEMENT_TIMEOUT_MS}', true)`;

/**
 * The parameters of {@link CALLER_SETUP}: the role, and the claims as JSON.
 * Without a token the claims are the role alone, as PostgREST sets them
 * (`{"role":"anon"}`): a policy or function reading
 * `current_setting('request.jwt.claims', true)::jsonb` must find an object,
 * where '' fails to cast (22P02).
 */
export function callerSetupValues(caller: Caller): [string, string] {
  return [caller.role, JSON.stringify(caller.claims ?? { role: caller.role })];
}

/**
 * PostgREST's `request.*` settings ($3 to $6, tx-settings.ts), and its
 * `response.*` ones emptied: the statement reads them back at its end, and
 * owner code that set them for the whole session (`set_config(…, false)`)
 * must not choose the answers of the requests the connection serves next.
 */
const REQUEST_SETUP =
  ", pg_catalog.set_config('request.method', $3, true), pg_catalog.set_config('request.path', $4, true), " +
  "pg_catalog.set_config('request.headers', $5, true), pg_catalog.set_config('request.cookies', $6, true), " +
  "pg_catalog.set_config('response.status', '', true), pg_catalog.set_config('response.headers', '', true)";

/** Opens an explicit transaction from inside a batch: it outlives the batch's Sync, until COMMIT or ROLLBACK. */
export const BEGIN_STEP: BatchStep = { name: 'bp_begin', text: 'begin', values: [] };

/**
 * The setup statements, one per combination: with the request's settings
 * (the data API; storage sets role and claims only), read-only (a read;
 * allowed at any point of a transaction, unlike the reverse), with a time
 * zone (`Prefer: timezone`), with a search path (a schema other than
 * `public`); the last two are the last parameters, in that order.
 */
const setups: Array<{ name: string; text: string }> = [];
function setupStatement(request: boolean, readOnly: boolean, zone: boolean, path: boolean): { name: string; text: string } {
  const key = (path ? 8 : 0) + (request ? 4 : 0) + (readOnly ? 2 : 0) + (zone ? 1 : 0);
  const zoneAt = request ? 7 : 3;
  return (setups[key] ??= {
    name: `bp_setup${request ? '_req' : ''}${readOnly ? '_read' : ''}${zone ? '_tz' : ''}${path ? '_path' : ''}`,
    text: CALLER_SETUP + (request ? REQUEST_SETUP : '') + (readOnly ? ", pg_catalog.set_config('transaction_read_only', 'on', true)" : '')
      + (zone ? `, pg_catalog.set_config('timezone', $${zoneAt}, true)` : '')
      + (path ? `, pg_catalog.set_config('search_path', $${zone ? zoneAt + 1 : zoneAt}, true)` : ''),
  });
}

const EMPTY_ROW: StatementRow = { body: null, page_count: 0, total: null };

/** pg's own conversion of parameters to their wire form (`pg.utils` is on the default export, untyped). */
const prepareValue = (pg as unknown as { utils: { prepareValue(value: unknown): string | Buffer | null } }).utils.prepareValue;
/** Parameters in their wire form, as a {@link BatchStep} carries them. */
export const wireValues = (values: readonly unknown[]) => values.map((v) => prepareValue(v));

/**
 * The batch step that sets `caller`'s role and claims for the transaction
 * ({@link CALLER_SETUP}), the request's settings, and the time zone and
 * search path when given.
 */
export function callerSetupStep(caller: Caller, readOnly = false, timezone?: string, request?: RequestSettings, searchPath?: string): BatchStep {
  const values: string[] = callerSetupValues(caller);
  if (request) values.push(request.method, request.path, request.headers, request.cookies);
  if (timezone !== undefined) values.push(timezone);
  if (searchPath !== undefined) values.push(searchPath);
  return { ...setupStatement(request !== undefined, readOnly, timezone !== undefined, searchPath !== undefined), values };
}

/** The batch of a request: [BEGIN,] the role, claims and request settings, the statement[, its EXPLAIN for an estimated count]. */
function batchSteps(caller: Caller, request: RequestSettings, statement: Statement, readOnly: boolean, explicit: boolean): BatchStep[] {
  const steps: BatchStep[] = [];
  if (explicit) steps.push(BEGIN_STEP);
  steps.push(callerSetupStep(caller, readOnly, statement.timezone, request, statement.searchPath));
  steps.push({ name: statementName(statement.text) ?? '', text: statement.text, values: wireValues(statement.values), describe: true });
  if (statement.estimate) steps.push({ name: '', text: statement.estimate.text, values: wireValues(statement.estimate.values) });
  return steps;
}

/** A failed request as the API answers it: a refusal as is, a database error mapped, anything else 503. */
function failure(error: unknown, caller: Caller): ApiError {
  if (error instanceof ApiError) return error;
  return databaseError(error, caller.role) ?? unreachable();
}

/** The statement's one row from the batch's results after the setup; `total` from the EXPLAIN when the count is estimated. */
function statementRow(results: StepResult[], statement: Statement): StatementRow {
  const main = results[1]!;
  const estimate = statement.estimate ? results[2] : undefined;
  const raw = main.rows[0];
  const row: StatementRow = raw
    ? {
        body: raw.body ?? null,
        page_count: Number(raw.page_count ?? 0),
        total: raw.total ?? null,
        ...('location' in raw ? { location: raw.location } : {}),
        ...('inserted' in raw ? { inserted: raw.inserted } : {}),
        response_status: raw.response_status ?? null,
        response_headers: raw.response_headers ?? null,
      }
    : { ...EMPTY_ROW };
  if (!estimate) return row;
  const above = statement.estimate!.above;
  const exact = row.total === null ? null : Number(row.total);
  if (above !== undefined && exact !== null && exact <= above) return row;
  const plan = estimate.fields[0]?.[0];
  const planRows = plan ? (JSON.parse(plan) as Array<{ Plan: { 'Plan Rows': number } }>)[0]?.Plan['Plan Rows'] : undefined;
  if (planRows === undefined) return { ...row, total: null };
  // Past the cap the estimate stands, but never below the rows already counted.
  return { ...row, total: Math.max(Math.round(planRows), exact ?? 0) };
}

/** Statement names by text, so each connection parses a statement shape once. */
const statementNames = new Map<string, string>();
const MAX_NAMED_STATEMENTS = 2000;

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined) {
    // Past the cap, new shapes run unnamed: a stream of distinct queries must not grow every connection's cache forever.
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return undefined;
    name = `pgrst_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

export class DataPools {
  private readonly pools: ProjectPools;
  private readonly pipelines: Pipelines;
  /** Per project, how many schema changes this replica has seen ({@link schemaChanged}). */
  private readonly schemaEpochs = new Map<string, number>();
  /** The epoch a pool connection ran its first statement in: its named statements were prepared no earlier. */
  private readonly clientEpochs = new WeakMap<pg.PoolClient, number>();
  private zones: Promise<ReadonlySet<string>> | undefined;

  constructor(logins: PlatformLogins, private readonly room: ConnectionRoom, options: DataPoolOptions = {}) {
    const connection = (projectId: string) => ({
      connectionString: logins.url(projectId, 'authenticator'),
      statement_timeout: REQUEST_STATEMENT_TIMEOUT_MS,
      application_name: 'baseplane-data-plane',
    });
    this.pools = new ProjectPools((projectId) => logins.healing(new pg.Pool({
      ...connection(projectId),
      max: options.maxConnections ?? 10,
      idleTimeoutMillis: 30_000,
      // Recycled now and then: named statements accumulate per connection.
      maxUses: 20_000,
    }), projectId, 'authenticator'), room);
    this.pipelines = new Pipelines(connection, options.pipelines ?? 2, room);
  }

  /**
   * Runs `statement` as `caller` in one transaction (read-only for reads) and
   * returns its one row. Database errors come back mapped (db-errors.ts);
   * `beforeCommit` may refuse the row, which rolls the transaction back.
   *
   * Without `beforeCommit` the role and claims (`set_config(…, true)` is SET
   * LOCAL) and the statement go out as one batch under a single Sync: one
   * round trip, one implicit transaction that PostgreSQL commits at the Sync
   * or rolls back after an error (one-sync.ts). A read goes on a shared
   * pipelined connection when one flows (pipelines.ts), anything else on one
   * of the pool's. With
   * `beforeCommit`, the batch opens an explicit transaction on a pool
   * connection, which COMMIT or ROLLBACK ends after the check.
   */
  async run(projectId: string, caller: Caller, request: RequestSettings, statement: Statement, readOnly: boolean, beforeCommit?: (row: StatementRow) => void): Promise<StatementRow> {
    const explicit = beforeCommit !== undefined;
    const steps = batchSteps(caller, request, statement, readOnly, explicit);
    // Reads only: a write's COMMIT waits for its WAL flush, and on a shared connection every batch behind it would wait too.
    const lane = readOnly && !explicit ? this.pipelines.take(projectId) : undefined;
    if (lane) {
      try {
        const batch = new OneSyncBatch(steps);
        return statementRow(await lane.run((client) => {
          void client.query(batch);
          return batch.done;
        }), statement);
      } catch (error) {
        throw failure(error, caller);
      }
    }
    const client = await this.connect(projectId);
    const lost = () => undefined;
    client.on('error', lost);
    let broken = false;
    let open = explicit;
    try {
      const batch = new OneSyncBatch(steps);
      void client.query(batch);
      const row = statementRow((await batch.done).slice(explicit ? 1 : 0), statement);
      if (explicit) {
        try {
          beforeCommit(row);
        } catch (refusal) {
          open = false;
          await client.query('rollback');
          throw refusal;
        }
        open = false;
        await client.query('commit');
      }
      return row;
    } catch (error) {
      if (open) await client.query('rollback').catch(() => { broken = true; });
      const answer = failure(error, caller);
      if (answer.status === 503) broken = true;
      throw answer;
    } finally {
      client.off('error', lost);
      client.release(broken);
    }
  }

  /** A pool connection whose named statements were prepared since the project's last schema change ({@link schemaChanged}). */
  private async connect(projectId: string): Promise<pg.PoolClient> {
    const epoch = this.schemaEpochs.get(projectId) ?? 0;
    for (;;) {
      const client = await this.pools.connect(projectId);
      const made = this.clientEpochs.get(client);
      if (made === undefined) this.clientEpochs.set(client, epoch);
      if (made === undefined || made === epoch) return client;
      client.release(true);
    }
  }

  /**
   * The project's schema changed: its connections' named statements were
   * prepared against the old catalog, and PostgreSQL re-plans them with the
   * parameter types it inferred then (a filter on a column that became text
   * would still compare it with an integer: 42883). As PostgREST flushes its
   * pool on a schema reload, they are retired: shared ones once their batches
   * are answered, pool ones at their next checkout.
   */
  schemaChanged(projectId: string): void {
    this.schemaEpochs.set(projectId, (this.schemaEpochs.get(projectId) ?? 0) + 1);
    this.pipelines.retire(projectId);
  }

  /** Reads the catalog of the project's `schema` into a schema snapshot. */
  async loadSnapshot(projectId: string, schema: string): Promise<SchemaSnapshot> {
    let result: pg.QueryResult<{ catalog: string }>;
    try {
      result = await this.room.withRoom(() => this.pools.get(projectId).query<{ catalog: string }>(CATALOG_QUERY, [schema]));
    } catch {
      throw unreachable();
    }
    return snapshotFromCatalog(result.rows[0]!.catalog, schema);
  }

  /**
   * The names PostgreSQL takes as a `TimeZone` (`pg_timezone_names`), read
   * once per replica through the project's pool: its tenant cluster is every
   * project's. A failed read is tried again by the next request that needs it.
   */
  timeZones(projectId: string): Promise<ReadonlySet<string>> {
    this.zones ??= this.room.withRoom(() => this.pools.get(projectId).query<{ name: string }>('select name from pg_catalog.pg_timezone_names'))
      .then((result) => new Set(result.rows.map((row) => row.name)))
      .catch(() => {
        this.zones = undefined;
        throw unreachable();
      });
    return this.zones;
  }

  /** Closes a project's pool (deleted project). */
  drop(projectId: string): Promise<void> {
    this.schemaEpochs.delete(projectId);
    this.pipelines.drop(projectId);
    return this.pools.drop(projectId);
  }

  closeAll(): Promise<void> {
    this.pipelines.closeAll();
    return this.pools.closeAll();
  }
}
