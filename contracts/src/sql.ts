/**
 * The SQL console (`POST /api/sql/execute`, API.md → SQL): its request and
 * answer shapes, and the one statement by which it takes a tenant's DDL log
 * (installed by the workers, called by the control plane).
 */
import { Type, type Static } from '@sinclair/typebox';

const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$', patternMessage: 'must be a UUID' });

export const ExecuteSqlBody = Type.Object(
  { projectId: Uuid, query: Type.String({ minLength: 1, maxLength: 1_000_000 }) },
  { additionalProperties: false },
);
export type ExecuteSqlBody = Static<typeof ExecuteSqlBody>;

export interface SqlColumn {
  name: string;
  /** PostgreSQL's name of the type (`format_type`), e.g. `integer`, `character varying(20)`. */
  dataType: string;
}

/** The result of the query's last statement. */
export interface SqlResult {
  columns: SqlColumn[];
  rows: Record<string, unknown>[];
  /** Rows returned by a statement that returns rows (at most the cap), else the rows it affected. */
  rowCount: number;
  /** Milliseconds the query took in the database. */
  duration: number;
  /** True when the statement returned more rows than the cap and `rows` was cut. */
  truncated: boolean;
}

/**
 * How the console takes the DDL its own session captured since `$1` (an xid8).
 * The tenant's `take_ddl_log` answers this exact statement only, so a query
 * of the operator's cannot take (and so erase) its own DDL from the history.
 */
export const TAKE_DDL_LOG_STATEMENT = 'select command_tag, object_type, object_identity from baseplane_meta.take_ddl_log($1::pg_catalog.xid8)';
