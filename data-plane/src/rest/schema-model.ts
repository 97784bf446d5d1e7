/**
 * What the data API knows of one schema of a project's database (`public`,
 * or another the project exposes): its relations with their columns, keys
 * and foreign keys, and its functions. The planner reads only this (never
 * the catalog), so it stays pure.
 */

/** A column of a table or view. */
export interface ColumnInfo {
  name: string;
  /** PostgreSQL's `format_type` of the column (e.g. `bigint`, `text[]`). */
  type: string;
  nullable: boolean;
  hasDefault: boolean;
  /**
   * A computed field (PostgREST's computed columns): not stored, but the value
   * of the function `<schema>.<name>` applied to the row of this relation. Read,
   * filtered and ordered as a column; never written, nor part of `*`.
   */
  computedOf?: string;
}

/**
 * A computed relationship (PostgREST's): a function of the schema taking
 * a row of one relation and returning a row, or rows, of another (`returns
 * setof books`, to-one when it returns one row or is declared `rows 1`),
 * embedded under its own name as a foreign key would be.
 */
export interface ComputedRelationship {
  function: string;
  /** The relation whose row the function takes. */
  relation: string;
  /** The relation whose rows it returns. */
  target: string;
  toOne: boolean;
}

/** A table or view of the schema. */
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
  /** A table's primary key; a view's, inferred from the tables it shows (see {@link viewPrimaryKeys}). */
  primaryKey: string[];
  /**
   * The column sets no two rows share: the primary key's and each unique
   * constraint's (PostgREST reads the same, not unique indexes). A foreign
   * key on one of them is a one-to-one.
   */
  uniqueKeys: string[][];
  comment: string | null;
  /** Its computed fields by name: functions of the schema taking its row and returning one value. */
  computedFields: Map<string, ColumnInfo>;
  /** Its computed relationships by function name. */
  computedRelationships: Map<string, ComputedRelationship>;
}

/**
 * A foreign key `table(columns) → refTable(refColumns)`. Besides the keys of
 * the tables, one is inferred for each view that shows a key's columns
 * (either side), under the key's name, as PostgREST infers relationships of
 * views from their source tables' keys.
 */
export interface ForeignKeyInfo {
  name: string;
  table: string;
  columns: string[];
  refTable: string;
  refColumns: string[];
  /**
   * Inferred through a view: whether the table's key is a one-to-one (its
   * columns a key of their table), which the view, having no keys, cannot say.
   */
  oneToOne?: boolean;
}

/**
 * Where a column of a view comes from: a column of a table, followed through
 * the views it is selected from (a view over a view over `books`).
 */
export interface ViewColumnSource {
  view: string;
  column: string;
  table: string;
  tableColumn: string;
}

/** An argument of a function callable through `rpc/`. */
export interface FunctionArg {
  name: string;
  type: string;
  hasDefault: boolean;
}

/** A function of the schema. */
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
  /**
   * The relation of the schema whose row type it returns (`returns setof
   * posts`, `returns posts`, a view's type too): its rows are that relation's,
   * with its keys, computed fields and computed relationships, as PostgREST
   * takes them. `returns table (…)` and `setof record` have none.
   */
  returnsRowOf?: string;
}

/** One project's schema as the data API serves it. */
export interface SchemaSnapshot {
  /** The schema it describes: `public`, or another the project exposes (its statements' names are qualified with it). */
  schema: string;
  relations: Map<string, RelationInfo>;
  foreignKeys: ForeignKeyInfo[];
  /** By name; overloads side by side. */
  functions: Map<string, FunctionInfo[]>;
  loadedAt: number;
}

/** A function taking one row of a relation: a computed field (`type`, when it returns one value) and, when it returns rows of a relation, a computed relationship. */
export interface RowFunction {
  name: string;
  /** The relation whose row it takes. */
  relation: string;
  /** `format_type` of what it returns. */
  type: string;
  returnsSet: boolean;
  /** The relation whose row type it returns, if any. */
  returnsRowOf?: string;
  /** Declared `rows 1`: a set of at most one row, to-one as PostgREST takes it. */
  oneRow?: boolean;
  /** How many arguments it takes (1 when not said); those after the row have defaults. Only a function of the row alone is a relationship, as in PostgREST. */
  arguments?: number;
}

/**
 * Builds a snapshot from plain lists (the catalog reader's output, or a unit
 * test's); a relation given without `uniqueKeys` has its primary key's alone,
 * without `relkind` that of an ordinary table or view. `viewColumns` says
 * where views' columns come from: each foreign key is inferred again for
 * every view showing its columns (see {@link viewForeignKeys}), and a view
 * showing a table's primary key has it (see {@link viewPrimaryKeys}).
 */
export function snapshotOf(input: {
  /** `public` when not said. */
  schema?: string;
  relations: Array<Omit<RelationInfo, 'columnsByName' | 'uniqueKeys' | 'relkind' | 'computedFields' | 'computedRelationships'> & { uniqueKeys?: string[][]; relkind?: RelationInfo['relkind'] }>;
  foreignKeys?: ForeignKeyInfo[];
  functions?: FunctionInfo[];
  viewColumns?: ViewColumnSource[];
  rowFunctions?: RowFunction[];
}): SchemaSnapshot {
  const relations = new Map<string, RelationInfo>();
  for (const relation of input.relations) {
    const uniqueKeys = relation.uniqueKeys ?? (relation.primaryKey.length > 0 ? [relation.primaryKey] : []);
    const relkind = relation.relkind ?? (relation.kind === 'table' ? 'r' : 'v');
    relations.set(relation.name, {
      ...relation, relkind, uniqueKeys, columnsByName: new Map(relation.columns.map((c) => [c.name, c])), computedFields: new Map(), computedRelationships: new Map(),
    });
  }
  for (const fn of input.rowFunctions ?? []) {
    const relation = relations.get(fn.relation);
    if (!relation) continue;
    if (!fn.returnsSet && fn.type !== 'void') relation.computedFields.set(fn.name, { name: fn.name, type: fn.type, nullable: true, hasDefault: false, computedOf: relation.name });
    if (fn.returnsRowOf !== undefined && relations.has(fn.returnsRowOf) && (fn.arguments ?? 1) === 1) {
      relation.computedRelationships.set(fn.name, { function: fn.name, relation: relation.name, target: fn.returnsRowOf, toOne: !fn.returnsSet || fn.oneRow === true });
    }
  }
  const showings = input.viewColumns && input.viewColumns.length > 0 ? showingsOf(input.viewColumns) : undefined;
  if (showings) {
    for (const [view, primaryKey] of viewPrimaryKeys(showings, relations)) {
      const relation = relations.get(view);
      if (relation && relation.kind === 'view' && relation.primaryKey.length === 0) relation.primaryKey = primaryKey;
    }
  }
  const functions = new Map<string, FunctionInfo[]>();
  for (const fn of input.functions ?? []) functions.set(fn.name, [...(functions.get(fn.name) ?? []), fn]);
  const foreignKeys = input.foreignKeys ?? [];
  const inferred = showings ? viewForeignKeys(foreignKeys, showings, relations) : [];
  return { schema: input.schema ?? 'public', relations, foreignKeys: inferred.length > 0 ? [...foreignKeys, ...inferred] : foreignKeys, functions, loadedAt: Date.now() };
}

/** Which views show which table columns: view → table → table column → the view's columns showing it, in the view's order. */
export type ViewShowings = Map<string, Map<string, Map<string, string[]>>>;

/** {@link ViewShowings} of the views' column sources (those of one view come together, in its column order). */
export function showingsOf(viewColumns: ViewColumnSource[]): ViewShowings {
  const showings: ViewShowings = new Map();
  for (const source of viewColumns) {
    let tables = showings.get(source.view);
    if (!tables) showings.set(source.view, (tables = new Map()));
    let columns = tables.get(source.table);
    if (!columns) tables.set(source.table, (columns = new Map()));
    columns.set(source.tableColumn, [...(columns.get(source.tableColumn) ?? []), source.column]);
  }
  return showings;
}

/**
 * The primary keys of views, inferred as PostgREST's schema cache infers them:
 * a view showing, unchanged, every column of a table's primary key has those
 * columns of its own as its key (the first it shows when it shows one twice);
 * a view showing the whole keys of several tables (a join) has them all, in
 * the order it first shows each table. A view showing part of a key has
 * none from it. Each view's key is named by its own columns.
 */
export function viewPrimaryKeys(showings: ViewShowings, relations: Map<string, RelationInfo>): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  for (const [view, tables] of showings) {
    const key: string[] = [];
    for (const [table, columns] of tables) {
      const primaryKey = relations.get(table)?.primaryKey ?? [];
      // The first of the view's columns showing each (they come in the view's column order).
      if (primaryKey.length > 0 && primaryKey.every((column) => columns.has(column))) key.push(...primaryKey.map((column) => columns.get(column)![0]!));
    }
    if (key.length > 0) keys.set(view, key);
  }
  return keys;
}

/** How many ways one view may show one key's columns before the rest are left out (a column shown under several names multiplies them). */
export const MAX_KEY_SHOWINGS = 16;

/**
 * The foreign keys of the tables, inferred again for views, as PostgREST's
 * schema cache does: a view showing every column of a key's referencing side
 * references what the table does; a view showing every referenced column is
 * referenced as the table is; and a view of each side links the two views.
 * The key keeps its name (for `!hint`) and its one-to-one-ness.
 */
export function viewForeignKeys(foreignKeys: ForeignKeyInfo[], showings: ViewShowings, relations: Map<string, RelationInfo>): ForeignKeyInfo[] {
  /** The relation itself, then each view showing all of `columns`, once per way it shows them. */
  const sides = (table: string, columns: string[]): Array<{ relation: string; columns: string[] }> => {
    const found = [{ relation: table, columns }];
    for (const [view, tables] of showings) {
      const byColumn = tables.get(table);
      if (!byColumn) continue;
      let ways: string[][] = [[]];
      for (const column of columns) {
        const names = byColumn.get(column) ?? [];
        ways = ways.flatMap((way) => names.map((name) => [...way, name])).slice(0, MAX_KEY_SHOWINGS);
      }
      for (const way of ways) found.push({ relation: view, columns: way });
    }
    return found;
  };
  const inferred: ForeignKeyInfo[] = [];
  for (const fk of foreignKeys) {
    const referencing = sides(fk.table, fk.columns);
    const referenced = sides(fk.refTable, fk.refColumns);
    if (referencing.length === 1 && referenced.length === 1) continue;
    const oneToOne = fk.oneToOne ?? isKeyOf(relations.get(fk.table), fk.columns);
    for (const from of referencing) {
      for (const to of referenced) {
        if (from.relation === fk.table && to.relation === fk.refTable) continue;
        inferred.push({ name: fk.name, table: from.relation, columns: from.columns, refTable: to.relation, refColumns: to.columns, oneToOne });
      }
    }
  }
  return inferred;
}

/** Whether `columns` are, in any order, the primary key or a unique constraint of `relation`. */
export function isKeyOf(relation: RelationInfo | undefined, columns: string[]): boolean {
  return (relation?.uniqueKeys ?? []).some((key) => key.length === columns.length && key.every((name) => columns.includes(name)));
}
