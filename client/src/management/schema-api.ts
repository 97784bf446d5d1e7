/**
 * Management of a project's schema and rows (API.md → Tables, columns,
 * foreign keys, rows), each call taking the project id first.
 */
import type { Result } from '../result.js';
import { segment, send, type Query, type Transport } from '../transport.js';
import type { Column, ColumnSpec, ForeignKey, OperationAnswer, Row, RowsPage, Table, TableAccess } from '../types.js';

const tablePath = (projectId: string, table?: string) => `/api/projects/${segment(projectId)}/tables${table === undefined ? '' : `/${segment(table)}`}`;

export interface CreateTable {
  name: string;
  columns: ColumnSpec[];
  /** The RLS preset; `public-read` by default. */
  access?: TableAccess;
}

export interface ColumnChanges {
  name?: string;
  type?: string;
  /** How existing values convert to a new type (SQL expression). */
  using?: string;
  nullable?: boolean;
  default?: string | number | boolean | null;
}

export interface ForeignKeySpec {
  name?: string;
  columns: string[];
  references: { table: string; columns: string[] };
  onDelete?: string;
  onUpdate?: string;
}

/** `limit`, `offset`, `order` (`col.desc,other`) and filters `{ col: 'op.value' }` as the data API writes them. */
export interface RowsQuery {
  limit?: number;
  offset?: number;
  order?: string;
  filters?: Record<string, string>;
}

/** What a drop answers once applied. */
export interface Dropped {
  name: string;
  dropped: true;
}

/*
 * Every change below is applied by a workflow: it answers once applied, or,
 * still applying after 30 s, `{ operation }` to follow (API.md → Waiting), so
 * its data is typed as either and a caller has to tell them apart.
 */

export function tablesApi(t: Transport) {
  return {
    list: (projectId: string): Promise<Result<Table[]>> => send(t, 'GET', tablePath(projectId)),
    create: (projectId: string, table: CreateTable): Promise<Result<Table | OperationAnswer>> => send(t, 'POST', tablePath(projectId), { body: table }),
    drop: (projectId: string, table: string): Promise<Result<Dropped | OperationAnswer>> => send(t, 'DELETE', tablePath(projectId, table)),
  };
}

export function columnsApi(t: Transport) {
  const path = (projectId: string, table: string, column?: string) => `${tablePath(projectId, table)}/columns${column === undefined ? '' : `/${segment(column)}`}`;
  return {
    list: (projectId: string, table: string): Promise<Result<Column[]>> => send(t, 'GET', path(projectId, table)),
    add: (projectId: string, table: string, column: Omit<ColumnSpec, 'primaryKey'>): Promise<Result<Column | OperationAnswer>> => send(t, 'POST', path(projectId, table), { body: column }),
    update: (projectId: string, table: string, column: string, changes: ColumnChanges): Promise<Result<Column | OperationAnswer>> => send(t, 'PUT', path(projectId, table, column), { body: changes }),
    remove: (projectId: string, table: string, column: string): Promise<Result<Dropped | OperationAnswer>> => send(t, 'DELETE', path(projectId, table, column)),
  };
}

export function foreignKeysApi(t: Transport) {
  const path = (projectId: string, table: string, fk?: string) => `${tablePath(projectId, table)}/foreign-keys${fk === undefined ? '' : `/${segment(fk)}`}`;
  return {
    list: (projectId: string, table: string): Promise<Result<ForeignKey[]>> => send(t, 'GET', path(projectId, table)),
    add: (projectId: string, table: string, fk: ForeignKeySpec): Promise<Result<ForeignKey | OperationAnswer>> => send(t, 'POST', path(projectId, table), { body: fk }),
    remove: (projectId: string, table: string, fk: string): Promise<Result<Dropped | OperationAnswer>> => send(t, 'DELETE', path(projectId, table, fk)),
  };
}

export function rowsApi(t: Transport) {
  const path = (projectId: string, table: string) => `${tablePath(projectId, table)}/rows`;
  return {
    list: (projectId: string, table: string, query: RowsQuery = {}): Promise<Result<RowsPage>> => {
      const { filters, ...paging } = query;
      return send(t, 'GET', path(projectId, table), { query: { ...filters, ...paging } as Query });
    },
    insert: (projectId: string, table: string, data: Row): Promise<Result<Row>> => send(t, 'POST', path(projectId, table), { body: { data } }),
    /** Updates the row whose primary key is `pkWhere`. */
    update: (projectId: string, table: string, pkWhere: Row, data: Row): Promise<Result<Row>> => send(t, 'PUT', path(projectId, table), { body: { pkWhere, data } }),
    /** Deletes the row whose primary key is `pkWhere`; answers it. */
    remove: (projectId: string, table: string, pkWhere: Row): Promise<Result<Row>> => send(t, 'DELETE', path(projectId, table), { body: { pkWhere } }),
  };
}
