/**
 * Request and answer shapes of the management rows API
 * (`/api/projects/:id/tables/:name/rows`, API.md → Tables), as TypeBox schemas.
 */
import { Type, type Static } from '@sinclair/typebox';
import { IdParam } from './api';

/** A row as JSON: column name → value. */
export const RowData = Type.Record(Type.String({ minLength: 1 }), Type.Unknown());
export type RowData = Static<typeof RowData>;

/** Path of every rows endpoint. The table name is only looked up, never trusted. */
export const RowsPathParams = Type.Object({ id: IdParam.properties.id, name: Type.String({ minLength: 1, maxLength: 256 }) });
export type RowsPathParams = Static<typeof RowsPathParams>;

/**
 * `GET …/rows`: `limit`, `offset`, `order` and `<col>=<op>.<value>` filters;
 * a key given twice arrives as an array (two filters on one column).
 */
export const ListRowsQuery = Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]));
export type ListRowsQuery = Static<typeof ListRowsQuery>;

export const InsertRowBody = Type.Object({ data: RowData }, { additionalProperties: false });
export type InsertRowBody = Static<typeof InsertRowBody>;

/** `pkWhere` names the whole primary key and nothing else. */
export const UpdateRowBody = Type.Object(
  { pkWhere: Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), { minProperties: 1 }), data: Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), { minProperties: 1 }) },
  { additionalProperties: false },
);
export type UpdateRowBody = Static<typeof UpdateRowBody>;

export const DeleteRowBody = Type.Object(
  { pkWhere: Type.Record(Type.String({ minLength: 1 }), Type.Unknown(), { minProperties: 1 }) },
  { additionalProperties: false },
);
export type DeleteRowBody = Static<typeof DeleteRowBody>;

/** The answer of `GET …/rows`: one page, and how many rows match the filters in all. */
export interface RowsPage {
  rows: Record<string, unknown>[];
  total: number;
}
