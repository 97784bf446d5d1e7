/**
 * What the data API knows of a project's database: the relations of schema
 * `public` with their columns, keys and foreign keys, and its functions. The
 * planner reads only this (never the catalog), so it stays pure.
 */

/** A column of a table or view. */
export interface ColumnInfo {
  name: string;
  /** PostgreSQL's `format_type` of the column (e.g. `bigint`, `text[]`). */
  type: string;
  nullable: boolean;
  hasDefault: boolean;
}

/** A table or view of schema `public`. */
export interface RelationInfo {
  name: string;
  kind: 'table' | 'view';
  /**
   * PostgreSQL's relkind: `r` an ordinary table, `p` partitioned, `f` foreign
   * (all three a 'table'), `v` a view, `m` a materialized view. Only an
   * ordinary table's RETURNING may read system columns such as `xmax`.
   */
  relkind: 'r' | 'p' | 'f' | 'v' | 'm';
  /** Columns in table order. */
  columns: ColumnInfo[];
  columnsByName: Map<string, ColumnInfo>;
  primaryKey: string[];
  /**
   * The column sets no two rows share: the primary key's and each unique
   * constraint's (PostgREST reads the same, not unique indexes). A foreign
   * key on one of them is a one-to-one.
   */
  uniqueKeys: string[][];
  comment: string | null;
}

/** A foreign key `table(columns) → refTable(refColumns)`. */
export interface ForeignKeyInfo {
  name: string;
  table: string;
  columns: string[];
  refTable: string;
  refColumns: string[];
}

/** An argument of a function callable through `rpc/`. */
export interface FunctionArg {
  name: string;
  type: string;
  hasDefault: boolean;
}

/** A function of schema `public`. */
export interface FunctionInfo {
  name: string;
  args: FunctionArg[];
  returnType: string;
  returnsSet: boolean;
  /** The result is a row type (a table, a composite or `returns table`). */
  returnsRow: boolean;
  returnsVoid: boolean;
  volatile: boolean;
  /** Columns of the result rows, when it returns rows of a known shape (a table's rows or `returns table`). */
  resultColumns?: ColumnInfo[];
}

/** One project's schema as the data API serves it. */
export interface SchemaSnapshot {
  relations: Map<string, RelationInfo>;
  foreignKeys: ForeignKeyInfo[];
  /** By name; overloads side by side. */
  functions: Map<string, FunctionInfo[]>;
  loadedAt: number;
}

/**
 * Builds a snapshot from plain lists (the catalog reader's output, or a unit
 * test's); a relation given without `uniqueKeys` has its primary key's alone,
 * without `relkind` that of an ordinary table or view.
 */
export function snapshotOf(input: {
  relations: Array<Omit<RelationInfo, 'columnsByName' | 'uniqueKeys' | 'relkind'> & { uniqueKeys?: string[][]; relkind?: RelationInfo['relkind'] }>;
  foreignKeys?: ForeignKeyInfo[];
  functions?: FunctionInfo[];
}): SchemaSnapshot {
  const relations = new Map<string, RelationInfo>();
  for (const relation of input.relations) {
    const uniqueKeys = relation.uniqueKeys ?? (relation.primaryKey.length > 0 ? [relation.primaryKey] : []);
    const relkind = relation.relkind ?? (relation.kind === 'table' ? 'r' : 'v');
    relations.set(relation.name, { ...relation, relkind, uniqueKeys, columnsByName: new Map(relation.columns.map((c) => [c.name, c])) });
  }
  const functions = new Map<string, FunctionInfo[]>();
  for (const fn of input.functions ?? []) functions.set(fn.name, [...(functions.get(fn.name) ?? []), fn]);
  return { relations, foreignKeys: input.foreignKeys ?? [], functions, loadedAt: Date.now() };
}
