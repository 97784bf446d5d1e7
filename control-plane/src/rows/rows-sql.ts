/**
 * Builds the SQL of the rows API against a table read from the live catalog.
 * Pure. Every identifier in the text is a name taken from the catalog (an
 * input name only selects it) and quoted; every value is a parameter.
 */
import { ApiError, ident, invalidRequest } from '@baseplane/contracts';
import type { ColumnInfo, TableInfo } from '../tenants/catalog';
import { JsonNumber, stringifyExactJson } from './exact-json';
import type { Filter, OrderTerm, RowsSelection } from './rows-parse';

/** What the builder needs of a table. */
export type TableShape = Pick<TableInfo, 'name' | 'primaryKey'> & { columns: Pick<ColumnInfo, 'name' | 'type'>[] };
type Column = TableShape['columns'][number];

export interface Statement {
  text: string;
  values: unknown[];
}


/** The catalog's column of that name, or 400 `unknown_column`. */
export function resolveColumn(table: TableShape, name: string): Column {
  const column = table.columns.find((c) => c.name === name);
  if (!column) throw new ApiError(400, 'unknown_column', `column "${name}" does not exist in table "${table.name}"`);
  return column;
}

/**
 * How deep a value of a row may nest. PostgreSQL's json and jsonb read about
 * 16,000 levels before they run out of stack (54001, "stack depth limit
 * exceeded", asking to raise a server setting); past this, a request is
 * refused before anything runs, saying why.
 */
export const MAX_VALUE_DEPTH = 10_000;
/** PostgreSQL's limit on an array's dimensions (MAXDIM). */
const MAX_ARRAY_DIMENSIONS = 6;

/**
 * A JSON value as a parameter for this column: json/jsonb get JSON text (so a
 * string or an array stays JSON), arrays go as arrays (node-postgres writes a
 * PostgreSQL array literal), other objects as JSON text, scalars as they are.
 * A number as written in the body (exact-json.ts) goes as that text into
 * JSON, `numeric` and, when it is a plain integer, integer columns and
 * arrays; elsewhere (`1.0` for an `int4`, a float, text) as before, as the
 * JavaScript number. A value nested deeper than {@link MAX_VALUE_DEPTH}, or
 * an array of more dimensions than PostgreSQL's arrays have, is a 400.
 */
export function encodeValue(column: Column, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  checkDepth(column, value);
  if (/^jsonb?$/.test(column.type)) return stringifyExactJson(value);
  if (Array.isArray(value)) return exactElements(column, column.type.replace(/(\[\])+$/, ''), value, 1);
  if (value instanceof JsonNumber) return exactNumber(column.type, value);
  if (typeof value === 'object') return stringifyExactJson(value);
  return value;
}

/** Refuses a value nested deeper than {@link MAX_VALUE_DEPTH}; walked without recursion, as the body may nest as deep as JSON.parse takes. */
function checkDepth(column: Column, value: unknown): void {
  const pending: Array<[unknown, number]> = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item !== 'object' || item === null || item instanceof JsonNumber) continue;
    if (depth > MAX_VALUE_DEPTH) throw invalidRequest(`the value of column "${column.name}" nests deeper than ${MAX_VALUE_DEPTH} levels`);
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
}

/** The text PostgreSQL reads the number from, where `type` takes it as written; else the JavaScript number. */
function exactNumber(type: string, value: JsonNumber): string | number {
  if (/^numeric(\(|$)/.test(type)) return value.text;
  if (/^int[248]$/.test(type) && /^-?\d+$/.test(value.text)) return value.text;
  return Number(value.text);
}

/**
 * An array's numbers as {@link exactNumber} gives them for its element type,
 * at every depth. An array nested deeper than PostgreSQL's arrays go is
 * refused here: PostgreSQL would refuse it (54000), and node-postgres, which
 * writes the literal, recurses.
 */
function exactElements(column: Column, elementType: string, values: unknown[], dimensions: number): unknown[] {
  if (dimensions > MAX_ARRAY_DIMENSIONS) throw invalidRequest(`the array of column "${column.name}" has more than ${MAX_ARRAY_DIMENSIONS} dimensions, PostgreSQL's limit`);
  return values.map((item) => {
    if (Array.isArray(item)) return exactElements(column, elementType, item, dimensions + 1);
    if (item instanceof JsonNumber) return exactNumber(elementType, item);
    // node-postgres would write an object element as JSON.stringify does.
    return typeof item === 'object' && item !== null ? stringifyExactJson(item) : item;
  });
}

/** Collects parameters and answers their `$n` placeholders. */
class Parameters {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

const COMPARISON_SQL = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
const IS_SQL = { null: 'null', true: 'true', false: 'false', unknown: 'unknown' } as const;

function filterSql(table: TableShape, filter: Filter, parameters: Parameters): string {
  const column = ident(resolveColumn(table, filter.column).name);
  let condition: string;
  switch (filter.operator) {
    case 'eq':
    case 'neq':
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      condition = `${column} ${COMPARISON_SQL[filter.operator]} ${parameters.add(filter.value)}`;
      break;
    case 'like':
    case 'ilike':
      // As text, so a pattern applies to any column type (ids, dates).
      condition = `${column}::text ${filter.operator} ${parameters.add(filter.value)}`;
      break;
    case 'is':
      condition = `${column} is ${IS_SQL[filter.value]}`;
      break;
    case 'in':
      condition = `${column} = any(${parameters.add(filter.value)})`;
      break;
  }
  return filter.negated ? `not (${condition})` : condition;
}

function whereSql(table: TableShape, filters: Filter[], parameters: Parameters): string {
  if (filters.length === 0) return '';
  return ` where ${filters.map((f) => filterSql(table, f, parameters)).join(' and ')}`;
}

/** Without an order the primary key orders, so pages by offset are stable. */
function orderSql(table: TableShape, order: OrderTerm[]): string {
  const terms = order.map((term) => {
    const column = ident(resolveColumn(table, term.column).name);
    return `${column} ${term.direction}${term.nulls ? ` nulls ${term.nulls}` : ''}`;
  });
  if (terms.length === 0) terms.push(...table.primaryKey.map((name) => `${ident(resolveColumn(table, name).name)} asc`));
  return terms.length === 0 ? '' : ` order by ${terms.join(', ')}`;
}

const qualified = (table: TableShape) => `"public".${ident(table.name)}`;

/** One page of matching rows, each as `row` (json, in column order). */
export function selectRowsSql(table: TableShape, selection: RowsSelection): Statement {
  const parameters = new Parameters();
  const where = whereSql(table, selection.filters, parameters);
  const order = orderSql(table, selection.order);
  const limit = parameters.add(selection.limit);
  const offset = parameters.add(selection.offset);
  return { text: `select to_json(t.*) as row from ${qualified(table)} as t${where}${order} limit ${limit} offset ${offset}`, values: parameters.values };
}

/** How many rows match the filters, as `total` (bigint, read as text). */
export function countRowsSql(table: TableShape, filters: Filter[]): Statement {
  const parameters = new Parameters();
  const where = whereSql(table, filters, parameters);
  return { text: `select count(*) as total from ${qualified(table)} as t${where}`, values: parameters.values };
}

/** Inserts one row; columns left out take their defaults. Answers `row`. */
export function insertRowSql(table: TableShape, data: Record<string, unknown>): Statement {
  const parameters = new Parameters();
  const entries = Object.entries(data).map(([name, value]) => [resolveColumn(table, name), value] as const);
  if (entries.length === 0) return { text: `insert into ${qualified(table)} as t default values returning to_json(t.*) as row`, values: [] };
  const columns = entries.map(([column]) => ident(column.name)).join(', ');
  const values = entries.map(([column, value]) => parameters.add(encodeValue(column, value))).join(', ');
  return { text: `insert into ${qualified(table)} as t (${columns}) values (${values}) returning to_json(t.*) as row`, values: parameters.values };
}

/**
 * The condition naming exactly one row by its whole primary key: a column not
 * in the table is `unknown_column`; a partial key, another column or a null
 * key value is `invalid_request`.
 */
function primaryKeyWhere(table: TableShape, pkWhere: Record<string, unknown>, parameters: Parameters): string {
  if (table.primaryKey.length === 0) throw invalidRequest(`table "${table.name}" has no primary key; change its rows with SQL`);
  const named = Object.keys(pkWhere);
  for (const name of named) resolveColumn(table, name);
  const others = named.filter((name) => !table.primaryKey.includes(name));
  const missing = table.primaryKey.filter((name) => !Object.hasOwn(pkWhere, name));
  if (others.length > 0 || missing.length > 0) {
    throw invalidRequest(`pkWhere must name exactly the primary key (${table.primaryKey.join(', ')})`, { primaryKey: table.primaryKey, missing, notInPrimaryKey: others });
  }
  return table.primaryKey
    .map((name) => {
      const column = resolveColumn(table, name);
      const value = pkWhere[name];
      if (value === null || value === undefined) throw invalidRequest(`primary key column "${name}" cannot be null`);
      return `${ident(column.name)} = ${parameters.add(encodeValue(column, value))}`;
    })
    .join(' and ');
}

/** Changes the row named by its primary key. Answers `row`, or nothing when none matched. */
export function updateRowSql(table: TableShape, pkWhere: Record<string, unknown>, data: Record<string, unknown>): Statement {
  const parameters = new Parameters();
  const assignments = Object.entries(data).map(([name, value]) => {
    const column = resolveColumn(table, name);
    return `${ident(column.name)} = ${parameters.add(encodeValue(column, value))}`;
  });
  if (assignments.length === 0) throw invalidRequest('data must name at least one column');
  const where = primaryKeyWhere(table, pkWhere, parameters);
  return { text: `update ${qualified(table)} as t set ${assignments.join(', ')} where ${where} returning to_json(t.*) as row`, values: parameters.values };
}

/** Deletes the row named by its primary key. Answers the deleted `row`, or nothing. */
export function deleteRowSql(table: TableShape, pkWhere: Record<string, unknown>): Statement {
  const parameters = new Parameters();
  const where = primaryKeyWhere(table, pkWhere, parameters);
  return { text: `delete from ${qualified(table)} as t where ${where} returning to_json(t.*) as row`, values: parameters.values };
}
