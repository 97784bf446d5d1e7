/**
 * Planning of what a request reads: `select=` items resolved to columns,
 * computed fields and embeddings (foreign keys in either direction, those
 * inferred for views, computed relationships), and filters and order
 * resolved to known columns or to embeddings of their level. Every name
 * leaves here checked against the schema cache; nothing unknown reaches the
 * SQL builder.
 */
import { parseCastType, type CastType } from './cast-type';
import { embedPath, jsonFieldName, type Condition, type JsonStep, type OrderTerm, type SelectItem } from './grammar';
import type { Modifiers } from './parse';
import type { ApiError } from '@baseplane/contracts';
import { ambiguousEmbedding, invalidFilter, notEmbedded, relatedOrderNotToOne, unknownColumn, unknownRelationship } from './rest-errors';
import { isKeyOf, type ColumnInfo, type ComputedRelationship, type ForeignKeyInfo, type RelationInfo, type SchemaSnapshot } from './schema-model';

/** Something rows can be read from: a relation, or the result of a function. */
export interface Source {
  name: string;
  columns: ColumnInfo[];
  columnsByName: Map<string, ColumnInfo>;
  /** A relation's computed fields, named as columns are (a column of the same name wins, as in PostgreSQL). */
  computedFields?: Map<string, ColumnInfo>;
  /** A relation's computed relationships, embedded by the function's name. */
  computedRelationships?: Map<string, ComputedRelationship>;
}

export type PlannedSelect =
  | { kind: 'column'; column: ColumnInfo; json?: JsonStep[]; alias: string; cast?: CastType }
  /** `rel(count)`: how many rows of the embedding the parent row has, as PostgREST counts them (`[{"count": 3}]`). */
  | { kind: 'count'; alias: string }
  | PlannedEmbed;

export interface PlannedEmbed {
  kind: 'embed';
  alias: string;
  relation: RelationInfo;
  /** Pairs (parent column, child column) the join matches on. */
  on: Array<[string, string]>;
  /** One-to-many and many-to-many answer an array; many-to-one and one-to-one an object (or null). */
  many: boolean;
  /** Many-to-many: the junction table, and the pairs linking it to the parent and to the child; `on` is then empty. */
  through?: { relation: string; parentOn: Array<[string, string]>; childOn: Array<[string, string]> };
  /**
   * A computed relationship: the rows are those `<schema>.<function>` returns
   * for the parent's row (of relation `argument`); `on` is then empty.
   */
  computed?: { function: string; argument: string };
  inner: boolean;
  /** `...rel(cols)`: its columns appear in the parent row instead of under `alias` (to-one only). */
  spread?: boolean;
  /** `rel!inner()`, no columns: it filters the parent's rows and is left out of the answer (PostgREST 11+). */
  filterOnly?: boolean;
  select: PlannedSelect[];
  modifiers: PlannedModifiers;
}

/** The items that make the answer's columns: all but the embeddings that only filter. */
export function answered(items: PlannedSelect[]): PlannedSelect[] {
  return items.some((item) => item.kind === 'embed' && item.filterOnly) ? items.filter((item) => item.kind !== 'embed' || !item.filterOnly) : items;
}

/** Names of the output columns in order, spreads expanded (the CSV header). */
export function outputNames(items: PlannedSelect[]): string[] {
  return answered(items).flatMap((item) => (item.kind === 'embed' && item.spread ? outputNames(item.select) : [item.alias]));
}

export type PlannedCondition =
  | { kind: 'filter'; column: ColumnInfo; json?: JsonStep[]; negate: boolean; op: import('./grammar').Operator; value: string | string[]; language?: string; quantifier?: 'any' | 'all' }
  | { kind: 'logic'; op: 'and' | 'or'; negate: boolean; children: PlannedCondition[] }
  /**
   * `embedding=not.is.null`: the row has a row of that embedding (after the
   * embedding's own filters), as `!inner` would keep it; negated, `is.null`,
   * it has none (PostgREST 11+).
   */
  | { kind: 'embedded'; embed: PlannedEmbed; negate: boolean };

export interface PlannedOrder {
  /** A related order: `column` is the to-one embedding's, read from the row the answer embeds (null when none). */
  embed?: PlannedEmbed;
  column: ColumnInfo;
  json?: JsonStep[];
  direction: 'asc' | 'desc';
  nulls?: 'first' | 'last';
}

export interface PlannedModifiers {
  where: PlannedCondition[];
  order: PlannedOrder[];
  limit?: number;
  offset?: number;
}

/** A column of `source`, or else one of its computed fields (a column of the same name wins). */
function findColumn(source: Source, name: string): ColumnInfo | undefined {
  return source.columnsByName.get(name) ?? source.computedFields?.get(name);
}

function column(source: Source, name: string): ColumnInfo {
  const found = findColumn(source, name);
  if (!found) throw unknownColumn(name, source.name);
  return found;
}

/**
 * A column, possibly followed by a JSON path (`meta->a->>b`), which a column
 * of any type takes, as in PostgREST: the SQL builder reads one that is not
 * json or jsonb through `to_jsonb`.
 */
function columnRef(source: Source, name: string, json: JsonStep[] | undefined): { column: ColumnInfo; json?: JsonStep[] } {
  const found = column(source, name);
  return json === undefined || json.length === 0 ? { column: found } : { column: found, json };
}

/**
 * The embedding of this level's `select=` that a related order or a null
 * filter names: by the alias `select=` gives it, else its relation's name,
 * as PostgREST matches them (`writer:authors(*)` is `writer`, not `authors`).
 */
function embeddingNamed(select: PlannedSelect[], name: string): PlannedEmbed | undefined {
  return select.find((item): item is PlannedEmbed => item.kind === 'embed' && item.alias === name);
}

/**
 * Resolves a filter tree against `source`. With `select` (a read's level),
 * `name=is.null` and `name=not.is.null` on one of its embeddings filter by
 * the embedding, even where a column has that name too (as PostgREST's
 * addNullEmbedFilters does); every other filter is on a column.
 */
export function planConditions(source: Source, conditions: Condition[], select?: PlannedSelect[]): PlannedCondition[] {
  return conditions.map((condition): PlannedCondition => {
    if (condition.kind === 'logic') return { kind: 'logic', op: condition.op, negate: condition.negate, children: planConditions(source, condition.children, select) };
    const test = nullTest(condition);
    if (select && test) {
      const embed = embeddingNamed(select, condition.column);
      // is.null (and not.is.not_null) asks for no row, the negation of "has a row"; not.is.null and is.not_null ask for one.
      if (embed) return { kind: 'embedded', embed, negate: condition.negate === (test === 'not_null') };
      if (!findColumn(source, condition.column)) {
        throw unknownColumn(condition.column, source.name, `to filter by an embedding, name it in select= as ${condition.column}(…) (by its alias, when it has one)`);
      }
    }
    if (condition.language !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(condition.language)) {
      throw invalidFilter(`unknown text search configuration "${condition.language}"`);
    }
    const planned: PlannedCondition = { kind: 'filter', ...columnRef(source, condition.column, condition.json), negate: condition.negate, op: condition.op, value: condition.value };
    if (condition.language !== undefined) planned.language = condition.language;
    if (condition.quantifier !== undefined) planned.quantifier = condition.quantifier;
    return planned;
  });
}

/** `is.null` or `is.not_null` on a bare name (no JSON path): what a filter on an embedding may be. */
function nullTest(condition: Extract<Condition, { kind: 'filter' }>): 'null' | 'not_null' | undefined {
  if (condition.op !== 'is' || condition.json || typeof condition.value !== 'string') return undefined;
  const word = condition.value.toLowerCase();
  return word === 'null' || word === 'not_null' ? word : undefined;
}

/**
 * Resolves `order=` against `source`. A related order, `embedding(col)`,
 * needs `select` (a read's level) to hold that embedding, and one that is
 * to-one: a parent row has one value of it to be ordered by.
 */
export function planOrder(source: Source, order: OrderTerm[], select?: PlannedSelect[]): PlannedOrder[] {
  return order.map((term) => {
    const planned = { direction: term.direction, nulls: term.nulls };
    if (term.relation === undefined) return { ...columnRef(source, term.column, term.json), ...planned };
    const embed = select && embeddingNamed(select, term.relation);
    if (!embed) throw notEmbedded(term.relation, select !== undefined);
    if (embed.many) throw relatedOrderNotToOne(source.name, term.relation);
    return { embed, ...columnRef(embed.relation, term.column, term.json), ...planned };
  });
}

/**
 * Plans the modifiers stored at `path` against `source`; `select` is the
 * level's planned `select=` on a read, whose embeddings filters and order
 * may name (a write's filters are on its table's columns only, as in
 * PostgREST, and so is its order).
 */
export function planModifiers(source: Source, modifiers: Map<string, Modifiers>, path: string, select?: PlannedSelect[]): PlannedModifiers {
  const m = modifiers.get(path);
  if (!m) return { where: [], order: [] };
  const planned: PlannedModifiers = { where: planConditions(source, m.where, select), order: planOrder(source, m.order, select) };
  if (m.limit !== undefined) planned.limit = m.limit;
  if (m.offset !== undefined) planned.offset = m.offset;
  return planned;
}

interface Relationship {
  fk: ForeignKeyInfo;
  many: boolean;
  on: Array<[string, string]>;
  through?: PlannedEmbed['through'];
}

/**
 * Whether `fk`'s columns are also a key of their own table (its primary key
 * or a unique constraint, in any order): each referenced row then has at most
 * one referencing row, a one-to-one that PostgREST (since v10) embeds as an
 * object both ways. A key inferred for a view says so itself, as the
 * table's key is.
 */
function isOneToOne(snapshot: SchemaSnapshot, fk: ForeignKeyInfo): boolean {
  return fk.oneToOne ?? isKeyOf(snapshot.relations.get(fk.table), fk.columns);
}

/**
 * Many-to-many through a junction table holding a foreign key to each side
 * (`posts ← posts_tags → tags`), considered when no direct key links them.
 */
function junctions(snapshot: SchemaSnapshot, parent: string, target: string, hint: string | undefined): Relationship[] {
  const found: Relationship[] = [];
  for (const toParent of snapshot.foreignKeys) {
    if (toParent.refTable !== parent || toParent.table === parent || toParent.table === target) continue;
    for (const toTarget of snapshot.foreignKeys) {
      // One key cannot link both sides (as it would when inferred again for a view of one side: the same name, in one table).
      if (toTarget.table !== toParent.table || toTarget.refTable !== target || toTarget.name === toParent.name) continue;
      if (hint !== undefined && hint !== toParent.table && hint !== toParent.name && hint !== toTarget.name) continue;
      found.push({
        fk: toTarget,
        many: true,
        on: [],
        through: {
          relation: toParent.table,
          parentOn: toParent.refColumns.map((c, i) => [c, toParent.columns[i]!]),
          childOn: toTarget.columns.map((c, i) => [c, toTarget.refColumns[i]!]),
        },
      });
    }
  }
  return found;
}

/**
 * Relationships of a table with itself, after PostgREST's convention
 * (Plan.findRel): a foreign key from a table to itself is both a
 * one-to-many and a many-to-one, so the name picks one. The table's own name
 * is the one-to-many (`emp?select=reports:emp(*)`), narrowed by a hint naming
 * the key's column as PostgREST does (`emp!manager_id(*)`) or, beyond it, the
 * key's name; the key's single column is the many-to-one
 * (`emp?select=manager:manager_id(*)`).
 */
function selfRelationships(snapshot: SchemaSnapshot, table: string, target: string, hint: string | undefined): Relationship[] {
  const found: Relationship[] = [];
  for (const fk of snapshot.foreignKeys) {
    if (fk.table !== table || fk.refTable !== table) continue;
    const column = fk.columns.length === 1 ? fk.columns[0] : undefined;
    const oneToMany: Relationship = { fk, many: !isOneToOne(snapshot, fk), on: fk.refColumns.map((c, i) => [c, fk.columns[i]!]) };
    if (hint === undefined) {
      if (target === table) found.push(oneToMany);
      else if (target === column) found.push({ fk, many: false, on: fk.columns.map((c, i) => [c, fk.refColumns[i]!]) });
    } else if (target === table && (hint === column || hint === fk.name)) {
      found.push(oneToMany);
    }
  }
  return found;
}

/** The foreign keys linking `parent` and `target`, either way, narrowed by a `!hint`. */
function relationships(snapshot: SchemaSnapshot, parent: string, target: string, hint: string | undefined): Relationship[] {
  if (parent === target) {
    const self = selfRelationships(snapshot, parent, target, hint);
    return self.length > 0 ? self : junctions(snapshot, parent, target, hint);
  }
  const found: Relationship[] = [];
  for (const fk of snapshot.foreignKeys) {
    // parent → target: the parent holds the key, one target row (an object).
    if (fk.table === parent && fk.refTable === target) found.push({ fk, many: false, on: fk.columns.map((c, i) => [c, fk.refColumns[i]!]) });
    // target → parent: the target holds the key, many target rows (an array), or at most one when the key is unique there.
    if (fk.refTable === parent && fk.table === target) found.push({ fk, many: !isOneToOne(snapshot, fk), on: fk.refColumns.map((c, i) => [c, fk.columns[i]!]) });
  }
  // A hint names the key, a column of it on either side (PostgREST's `clients!client_id`, `clients!id`), or the
  // referenced table, which picks the direction where the parent holds the key.
  const direct = hint === undefined ? found : found.filter(({ fk }) =>
    fk.name === hint || (fk.columns.length === 1 && fk.columns[0] === hint) || (fk.refColumns.length === 1 && fk.refColumns[0] === hint) || (hint === fk.refTable && fk.table === parent));
  return direct.length > 0 ? direct : junctions(snapshot, parent, target, hint);
}

/**
 * The table an embedding reads and how it links to `source`. A computed
 * relationship of that name comes first, taking the place of foreign keys to
 * a relation of the same name, as in PostgREST (where a hint does not apply
 * to it); a name that is no table may be a self-referencing key's column.
 */
function embeddingOf(snapshot: SchemaSnapshot, source: Source, item: Extract<SelectItem, { kind: 'embed' }>): { target: RelationInfo; link: Relationship | ComputedRelationship } {
  // Rows of no relation (an rpc's `returns table (…)`) have no keys, even where a table shares the function's name.
  if (snapshot.relations.get(source.name) !== source) throw unknownRelationship(source.name, item.relation);
  const computed = source.computedRelationships?.get(item.relation);
  const computedTarget = computed && snapshot.relations.get(computed.target);
  if (computed && computedTarget) return { target: computedTarget, link: computed };
  let target = snapshot.relations.get(item.relation);
  let links: Relationship[];
  if (target) {
    links = relationships(snapshot, source.name, target.name, item.hint);
  } else {
    target = snapshot.relations.get(source.name);
    links = target ? selfRelationships(snapshot, source.name, item.relation, item.hint) : [];
  }
  if (!target || links.length === 0) throw unknownRelationship(source.name, item.relation);
  if (links.length > 1) throw ambiguous(source.name, item.relation, links);
  return { target, link: links[0]! };
}

/**
 * The 300 for an embedding that several keys fit, naming them; where names
 * repeat (a view showing a key's column twice has the key twice), with the
 * columns each links, and a `!column` hint rather than the name to pick one.
 */
function ambiguous(from: string, name: string, links: Relationship[]): ApiError {
  const names = links.map((l) => l.fk.name);
  if (new Set(names).size === names.length) return ambiguousEmbedding(from, name, names);
  const described = links.map(({ fk }) => `${fk.name} (${fk.table}(${fk.columns.join(', ')}) → ${fk.refTable}(${fk.refColumns.join(', ')}))`);
  // The side whose column tells the first two apart.
  const [{ fk: a }, { fk: b }] = links as [Relationship, Relationship];
  const columns = a.refColumns.join() !== b.refColumns.join() ? a.refColumns : a.columns;
  return ambiguousEmbedding(from, name, described, columns.length === 1 ? columns[0] : a.name);
}

/** Resolves `select=` on `source`; `path` names this level for embedded modifiers. */
export function planSelect(snapshot: SchemaSnapshot, source: Source, items: SelectItem[], modifiers: Map<string, Modifiers>, path: string): PlannedSelect[] {
  const planned: PlannedSelect[] = [];
  for (const item of items) {
    if (item.kind === 'star') {
      for (const c of source.columns) planned.push({ kind: 'column', column: c, alias: c.name });
      continue;
    }
    if (item.kind === 'field') {
      const cast = item.cast === undefined ? undefined : parseCastType(item.cast);
      const ref = columnRef(source, item.name, item.json);
      // As PostgREST names it: the alias, else the last key of a JSON path that is not an index, else the column.
      const entry: PlannedSelect = { kind: 'column', ...ref, alias: item.alias ?? jsonFieldName(item.name, ref.json ?? []) };
      if (cast !== undefined) entry.cast = cast;
      planned.push(entry);
      continue;
    }
    const { target, link } = embeddingOf(snapshot, source, item);
    const alias = item.alias ?? item.relation;
    const childPath = embedPath(path, alias);
    const select = countOf(target, item) ?? planSelect(snapshot, target, item.children, modifiers, childPath);
    const joined = 'fk' in link
      ? { on: link.on, many: link.many, ...(link.through ? { through: link.through } : {}) }
      : { on: [], many: !link.toOne, computed: { function: link.function, argument: link.relation } };
    planned.push({
      kind: 'embed',
      alias,
      relation: target,
      ...joined,
      inner: item.inner,
      ...(item.spread ? { spread: true } : {}),
      ...(item.children.length === 0 ? { filterOnly: true } : {}),
      select,
      modifiers: planModifiers(target, modifiers, childPath, select),
    });
  }
  return planned;
}

/**
 * `rel(count)`, `rel(n:count)`: `count` alone in an embedding that is not
 * spread, of a relation without a column of that name, counts the
 * embedding's rows (its filters apply), as PostgREST's embedded count.
 */
function countOf(target: Source, item: Extract<SelectItem, { kind: 'embed' }>): PlannedSelect[] | undefined {
  const [only, ...more] = item.children;
  if (item.spread || more.length > 0 || only?.kind !== 'field' || only.name !== 'count' || only.json || only.cast !== undefined || findColumn(target, 'count')) return undefined;
  return [{ kind: 'count', alias: only.alias ?? 'count' }];
}

/** The dotted paths of the embeddings in `items`, into `known`. */
function addEmbedPaths(items: PlannedSelect[], prefix: string, known: Set<string>): void {
  for (const item of items) {
    if (item.kind !== 'embed') continue;
    const path = embedPath(prefix, item.alias);
    known.add(path);
    addEmbedPaths(item.select, path, known);
  }
}

/** Embedded paths with modifiers that no `select=` embedding uses are an error, not silently ignored. */
export function checkModifierPaths(modifiers: Map<string, Modifiers>, select: PlannedSelect[]): void {
  // Nothing to check on most requests: their filters are all on the top level.
  if (modifiers.size === 0 || (modifiers.size === 1 && modifiers.has(''))) return;
  const known = new Set<string>(['']);
  addEmbedPaths(select, '', known);
  for (const [path, m] of modifiers) {
    if (known.has(path)) continue;
    if (m.where.length === 0 && m.order.length === 0 && m.limit === undefined && m.offset === undefined) continue;
    throw invalidFilter(`"${path}" is not an embedded resource of this request`, null);
  }
}
