/**
 * The SQL console (`POST /api/sql/execute`, API.md → SQL): its request and
 * answer shapes, and the one statement by which it takes a tenant's DDL log
 * (installed by the workers, called by the control plane).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Uuid } from './api';

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
 * How the console takes the DDL its own session captured since `$1` (an xid8)
 * into its batch `$2` (a uuid, the event's correlation id) with its actor `$3`,
 * before it commits: the rows stay in the tenant's log, an outbox, until the
 * event is in the history ({@link ACK_DDL_LOG_STATEMENT}). The tenant's
 * `take_ddl_log` and `ack_ddl_log` answer these exact statements only, so a
 * query of the operator's cannot take (and so erase) its own DDL from the history.
 */
export const TAKE_DDL_LOG_STATEMENT =
  'select command_tag, object_type, object_identity from baseplane_meta.take_ddl_log($1::pg_catalog.xid8, $2::pg_catalog.uuid, $3::pg_catalog.text)';
/** Removes batch `$1` from the tenant's DDL log once its event is in the history. */
export const ACK_DDL_LOG_STATEMENT = 'select baseplane_meta.ack_ddl_log($1::pg_catalog.uuid)';
/** The batches taken and not yet removed, row by row in the order they were captured. */
export const PENDING_DDL_LOG_STATEMENT =
  'select batch, actor, statement, command_tag, object_type, object_identity from baseplane_meta.pending_ddl_log()';
/** The statement tenant schema revision 1 guarded its `take_ddl_log(xid8)` with (revision 3 replaced both). */
export const REVISION_1_TAKE_DDL_LOG_STATEMENT = 'select command_tag, object_type, object_identity from baseplane_meta.take_ddl_log($1::pg_catalog.xid8)';
