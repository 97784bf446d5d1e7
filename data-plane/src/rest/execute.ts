/**
 * Stage 4 of a data request, the only one touching PostgreSQL (PostgREST's
 * `MainTx`): per project a bounded pool of `authenticator` connections; per
 * request one transaction with `SET LOCAL ROLE` and the caller's claims in
 * `request.jwt.claims`, the statement, COMMIT. Also reads the catalog for
 * the schema cache.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { ApiError, AUTHENTICATOR_PASSWORD_PURPOSE, deriveSecret, tenantDatabaseName, tenantOwnerUrl } from '@baseplane/contracts';
import { ProjectPools } from '../tenants/project-pools';
import { databaseError } from './db-errors';
import { CATALOG_QUERY, snapshotFromCatalog } from './schema-cache';
import type { SchemaSnapshot } from './schema-model';
import type { Statement, StatementRow } from './sql';

/** The database role a request runs as. */
export type ApiRole = 'anon' | 'authenticated' | 'service_role';

/** Who is asking: the role and, for a user, the verified claims of the token. */
export interface Caller {
  role: ApiRole;
  claims: Record<string, unknown> | null;
}

export interface DataPoolOptions {
  /** Connections per project and replica. */
  maxConnections?: number;
  statementTimeoutMs?: number;
}

/** Role and claims for this transaction only: `set_config(…, true)` is SET LOCAL, and both values travel as parameters. */
const SETUP = "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)";
const EMPTY_ROW: StatementRow = { body: null, page_count: 0, total: null };

const unreachable = () => new ApiError(503, 'project_unavailable', 'the project database is not reachable');

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

  constructor(tenantClusterUrl: string, platformSecret: string, options: DataPoolOptions = {}) {
    const password = deriveSecret(platformSecret, AUTHENTICATOR_PASSWORD_PURPOSE);
    // `pipeline` is pg ≥ 8.20's; its type definitions do not list it yet.
    this.pools = new ProjectPools((projectId) => new pg.Pool({
      connectionString: tenantOwnerUrl(tenantClusterUrl, 'authenticator', password, tenantDatabaseName(projectId)),
      max: options.maxConnections ?? 10,
      idleTimeoutMillis: 30_000,
      // Recycled now and then: named statements accumulate per connection.
      maxUses: 20_000,
      statement_timeout: options.statementTimeoutMs ?? 15_000,
      application_name: 'baseplane-data-plane',
      // Queries go out without waiting for the previous answer: a request's transaction is one round trip.
      pipeline: true,
    } as pg.PoolConfig));
  }

  private pool(projectId: string): pg.Pool {
    return this.pools.get(projectId);
  }

  /**
   * Runs `statement` as `caller` in one transaction (read-only for reads) and
   * returns its one row. Database errors come back mapped (db-errors.ts);
   * `beforeCommit` may refuse the row, which rolls the transaction back.
   *
   * The connections run in pg's pipeline mode: BEGIN, the role and claims
   * (`set_config(…, true)` is SET LOCAL), the statement and COMMIT go out
   * together and come back in one round trip. A failed statement makes the
   * COMMIT a rollback, so nothing of it stays.
   */
  async run(projectId: string, caller: Caller, statement: Statement, readOnly: boolean, beforeCommit?: (row: StatementRow) => void): Promise<StatementRow> {
    let client: pg.PoolClient;
    try {
      client = await this.pool(projectId).connect();
    } catch {
      throw unreachable();
    }
    const lost = () => undefined;
    client.on('error', lost);
    let broken = false;
    const settled: Array<Promise<unknown>> = [];
    const send = <R extends pg.QueryResultRow>(query: pg.QueryConfig) => {
      const sent = client.query<R>(query);
      settled.push(sent.catch(() => undefined));
      return sent;
    };
    // The messages of the whole transaction leave in one write (pg corks per query; this cork spans them all).
    const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
    try {
      stream?.cork?.();
      let result: Promise<pg.QueryResult<StatementRow>>;
      let commit: Promise<unknown> | undefined;
      let estimate: Promise<pg.QueryResult<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>> | undefined;
      const withEstimate = async (row: StatementRow): Promise<StatementRow> => {
        if (!estimate) return row;
        const planRows = (await estimate).rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'];
        return { ...row, total: planRows === undefined ? null : Math.round(planRows) };
      };
      try {
        void send({ text: readOnly ? 'begin read only' : 'begin' });
        void send({ text: SETUP, values: [caller.role, caller.claims ? JSON.stringify(caller.claims) : ''] });
        const name = statementName(statement.text);
        result = send<StatementRow>(name ? { name, text: statement.text, values: statement.values } : { text: statement.text, values: statement.values });
        if (statement.estimate) estimate = send<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(statement.estimate);
        if (!beforeCommit) commit = send({ text: 'commit' });
      } finally {
        stream?.uncork?.();
      }
      if (commit) {
        const row = await withEstimate((await result).rows[0] ?? EMPTY_ROW);
        await commit;
        return row;
      }
      const row = await withEstimate((await result).rows[0] ?? EMPTY_ROW);
      try {
        beforeCommit?.(row);
      } catch (refusal) {
        await send({ text: 'rollback' });
        throw refusal;
      }
      await send({ text: 'commit' });
      return row;
    } catch (error) {
      // Whatever was sent behind the failure has to be answered before the connection is reused.
      await Promise.all(settled);
      if (error instanceof ApiError) {
        await client.query('rollback').catch(() => { broken = true; });
        throw error;
      }
      const mapped = databaseError(error, caller.role);
      await client.query('rollback').catch(() => { broken = true; });
      if (mapped) throw mapped;
      broken = true;
      throw unreachable();
    } finally {
      await Promise.all(settled);
      client.off('error', lost);
      client.release(broken);
    }
  }

  /** Reads the project's catalog into a schema snapshot. */
  async loadSnapshot(projectId: string): Promise<SchemaSnapshot> {
    let result: pg.QueryResult<{ catalog: string }>;
    try {
      result = await this.pool(projectId).query<{ catalog: string }>(CATALOG_QUERY);
    } catch {
      throw unreachable();
    }
    return snapshotFromCatalog(result.rows[0]!.catalog);
  }

  /** Closes a project's pool (deleted project). */
  drop(projectId: string): Promise<void> {
    return this.pools.drop(projectId);
  }

  closeAll(): Promise<void> {
    return this.pools.closeAll();
  }
}
