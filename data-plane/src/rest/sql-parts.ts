/**
 * The pieces the SQL builder assembles: quoted identifiers (of names the
 * schema cache returned), parameters, select lists with embeddings, WHERE
 * trees and ORDER BY. Pure; every value becomes a `$n` parameter.
 */
import { ident } from '@baseplane/contracts';
import { answered, outputNames, type PlannedCondition, type PlannedEmbed, type PlannedModifiers, type PlannedOrder, type PlannedSelect } from './plan-select';
import type { CastType } from './cast-type';
import { isJsonIndex, type JsonStep } from './grammar';
import type { ColumnInfo } from './schema-model';

/** A name from the catalog, double-quoted for PostgreSQL (contracts' ident, re-exported for the builder's modules). */
export { ident };
/** `"schema"."name"`: every name a statement reads or calls is qualified, so nothing on the search path (pg_catalog first) takes its place. */
export const qualified = (schema: string, name: string) => `${ident(schema)}.${ident(name)}`;

/** The statement's parameters, numbered as they are added, and the schema its names are in. */
export class Params {
  readonly values: unknown[] = [];
  constructor(readonly schema: string) {}
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Hands out unique table aliases within one statement. */
export class Aliases {
  private next = 1;
  take(prefix: '_t' | '_e' | '_j'): string {
    return `${prefix}${this.next++}`;
  }
}

const COMPARISON = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
/** PostgREST's range operators: strictly left, strictly right, does not extend right/left of, adjacent. */
const RANGE = { sl: '<<', sr: '>>', nxl: '&<', nxr: '&>', adj: '-|-' } as const;
const TSQUERY = { fts: 'to_tsquery', plfts: 'plainto_tsquery', phfts: 'phraseto_tsquery', wfts: 'websearch_to_tsquery' } as const;

/**
 * The row of `table` (an alias) as a value of relation `relation`'s type:
 * `(t.*)`, never the bare alias, which a column of that name would take
 * over; cast, since over a write's returned rows (a CTE) it is a record.
 */
const rowOf = (table: string, relation: string, params: Params) => `(${table}.*)::${qualified(params.schema, relation)}`;

/**
 * `table."col"`, or a computed field's call on the row, followed by its JSON
 * path with each key a parameter (an integer key indexes an array). A path
 * on a column of another type than json or jsonb (an array, a composite, a
 * domain over either) reads it as `to_jsonb(col)`, as PostgREST does, so
 * `tags->0` is the first element and `location->>lat` an attribute; json and
 * jsonb are read as they are (their type kept, their indexes usable).
 */
function columnSql(table: string, column: ColumnInfo, json: JsonStep[] | undefined, params: Params): string {
  let sql = column.computedOf === undefined ? `${table}.${ident(column.name)}` : `${qualified(params.schema, column.name)}(${rowOf(table, column.computedOf, params)})`;
  if (json && json.length > 0 && column.type !== 'json' && column.type !== 'jsonb') sql = `to_jsonb(${sql})`;
  for (const step of json ?? []) sql = `(${sql} ${step.op} ${params.add(step.key)}::${isJsonIndex(step.key) ? 'int' : 'text'})`;
  return sql;
}

/** `::type`, rebuilt from the parts cast-type.ts validated: SQL's keyword types as keywords (as PostgREST writes them), other names quoted. */
function castSql(cast: CastType): string {
  const modifiers = cast.modifiers.length > 0 ? `(${cast.modifiers.join(',')})` : '';
  return `::${cast.keyword ? cast.name : ident(cast.name)}${modifiers}${cast.zone ? ` ${cast.zone}` : ''}${cast.arrayBounds.join('')}`;
}

function filterSql(condition: Extract<PlannedCondition, { kind: 'filter' }>, table: string, params: Params): string {
  const col = columnSql(table, condition.column, condition.json, params);
  const value = condition.value;
  const text = typeof value === 'string' ? value : '';
  if (condition.quantifier && Array.isArray(value)) {
    // op any($n) / op all($n): the list is one array parameter.
    const textual = condition.op === 'like' || condition.op === 'ilike' || condition.op === 'match' || condition.op === 'imatch';
    const operator = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=', like: 'like', ilike: 'ilike', match: '~', imatch: '~*' }[condition.op as 'eq'];
    const list = condition.op === 'like' || condition.op === 'ilike' ? value.map((v) => v.replace(/\*/g, '%')) : value;
    return `${col}${textual ? '::text' : ''} ${operator} ${condition.quantifier}(${params.add(list)})`;
  }
  switch (condition.op) {
    case 'eq': case 'neq': case 'gt': case 'gte': case 'lt': case 'lte':
      return `${col} ${COMPARISON[condition.op]} ${params.add(text)}`;
    case 'like': case 'ilike':
      return `${col}::text ${condition.op} ${params.add(text.replace(/\*/g, '%'))}`;
    case 'match':
      return `${col}::text ~ ${params.add(text)}`;
    case 'imatch':
      return `${col}::text ~* ${params.add(text)}`;
    case 'is': {
      const word = text.toLowerCase();
      return word === 'not_null' ? `${col} is not null` : `${col} is ${word === 'null' ? 'null' : word === 'true' ? 'true' : word === 'false' ? 'false' : 'unknown'}`;
    }
    case 'isdistinct':
      return `${col} is distinct from ${params.add(text)}`;
    case 'in':
      return `${col} = any(${params.add(Array.isArray(value) ? value : [value])})`;
    case 'cs': case 'cd': case 'ov': {
      // ov.(a,b) is PostgREST's list form of an array literal, on an array column; on a range, (a,b) is the range literal itself.
      const list = condition.op === 'ov' && !condition.json && condition.column.type.endsWith('[]') && /^\(.*\)$/s.test(text);
      const literal = list ? `{${text.slice(1, -1)}}` : text;
      return `${col} ${condition.op === 'cs' ? '@>' : condition.op === 'cd' ? '<@' : '&&'} ${params.add(literal)}`;
    }
    case 'sl': case 'sr': case 'nxl': case 'nxr': case 'adj': {
      // The value is a range literal read as the column's own type: on a range column `<<` also has multirange
      // forms, and the integer shifts share the name, so an untyped parameter is not left for PostgreSQL to guess.
      const cast = condition.json ? '' : `::${condition.column.type}`;
      return `${col} ${RANGE[condition.op]} ${params.add(text)}${cast}`;
    }
    case 'fts': case 'plfts': case 'phfts': case 'wfts': {
      const config = condition.language === undefined ? '' : `${params.add(condition.language)}::regconfig, `;
      const vector = condition.column.type === 'tsvector' && !condition.json ? col : `to_tsvector(${config}${col}::text)`;
      return `${vector} @@ ${TSQUERY[condition.op]}(${config}${params.add(text)})`;
    }
  }
}

/**
 * A WHERE tree over `table`; `'true'` when empty. `aliases` are the
 * statement's: a filter on an embedding reads it in a subquery of its own.
 */
export function whereSql(conditions: PlannedCondition[], table: string, params: Params, aliases: Aliases, joiner: 'and' | 'or' = 'and'): string {
  if (conditions.length === 0) return joiner === 'and' ? 'true' : 'false';
  const parts = conditions.map((c) => {
    const sql =
      c.kind === 'filter' ? filterSql(c, table, params)
        : c.kind === 'embedded' ? existsSql(c.embed, table, params, aliases)
          : `(${whereSql(c.children, table, params, aliases, c.op)})`;
    return c.negate ? `not (${sql})` : sql;
  });
  return parts.length === 1 ? parts[0]! : parts.map((p) => `(${p})`).join(` ${joiner} `);
}

export function orderSql(order: PlannedOrder[], table: string, params: Params, aliases: Aliases): string {
  if (order.length === 0) return '';
  const value = (o: PlannedOrder) => (o.embed ? relatedValueSql(o, o.embed, table, params, aliases) : columnSql(table, o.column, o.json, params));
  return ` order by ${order.map((o) => `${value(o)} ${o.direction}${o.nulls ? ` nulls ${o.nulls}` : ''}`).join(', ')}`;
}

/**
 * What a related order sorts a parent row by: the column of the row its
 * to-one embedding answers (the same filters, so null where the answer shows
 * null).
 */
function relatedValueSql(order: PlannedOrder, embed: PlannedEmbed, parent: string, params: Params, aliases: Aliases): string {
  const child = aliases.take('_t');
  const source = embedSource(embed, parent, child, params, aliases);
  return `(select ${columnSql(child, order.column, order.json, params)} from ${source.from} where ${embeddedRowsWhere(embed, source.link, child, params, aliases)}${toOnePageSql(embed, params)})`;
}

export function pageSql(modifiers: Pick<PlannedModifiers, 'limit' | 'offset'>, params: Params): string {
  let sql = '';
  if (modifiers.limit !== undefined) sql += ` limit ${params.add(modifiers.limit)}`;
  if (modifiers.offset !== undefined && modifiers.offset > 0) sql += ` offset ${params.add(modifiers.offset)}`;
  return sql;
}

/**
 * The row a to-one embedding answers, or orders by: its one row, or none
 * under its `limit=0` or an offset, as PostgREST's lateral subquery pages it
 * (a null filter and `!inner` test it within its page, `pageSql`, alike).
 */
function toOnePageSql(item: PlannedEmbed, params: Params): string {
  return ` limit ${item.modifiers.limit === 0 ? 0 : 1}${pageSql({ offset: item.modifiers.offset }, params)}`;
}

/** The join condition of an embedding: child columns equal to the parent's. */
function joinSql(on: Array<[string, string]>, parent: string, child: string): string {
  return on.map(([p, c]) => `${child}.${ident(c)} = ${parent}.${ident(p)}`).join(' and ');
}

/**
 * FROM and the condition linking an embedding's rows to the parent row:
 * directly, through a junction table, or, for a computed relationship, by
 * being what its function returns for the parent's row.
 */
function embedSource(item: Extract<PlannedSelect, { kind: 'embed' }>, parent: string, child: string, params: Params, aliases: Aliases): { from: string; link: string } {
  if (item.computed) return { from: `${qualified(params.schema, item.computed.function)}(${rowOf(parent, item.computed.argument, params)}) ${child}`, link: 'true' };
  const from = `${qualified(params.schema, item.relation.name)} ${child}`;
  if (!item.through) return { from, link: joinSql(item.on, parent, child) };
  const junction = aliases.take('_j');
  return {
    from: `${from} join ${qualified(params.schema, item.through.relation)} ${junction} on ${joinSql(item.through.childOn.map(([j, c]) => [c, j]), child, junction)}`,
    link: joinSql(item.through.parentOn, parent, junction),
  };
}

/**
 * Which rows of an embedding belong to the parent row: linked to it, meeting
 * the embedding's filters, and having a row of each of its own `!inner`
 * embeddings (as PostgREST's inner join at that level keeps them).
 */
function embeddedRowsWhere(item: PlannedEmbed, link: string, child: string, params: Params, aliases: Aliases): string {
  return [link, whereSql(item.modifiers.where, child, params, aliases), ...innerJoinsSql(item.select, child, params, aliases)].join(' and ');
}

/** `exists (…)`: the parent row has a row of the embedding `item`, within its page (`limit=0` leaves none). */
function existsSql(item: PlannedEmbed, parent: string, params: Params, aliases: Aliases): string {
  const child = aliases.take('_t');
  const source = embedSource(item, parent, child, params, aliases);
  return `exists (select 1 from ${source.from} where ${embeddedRowsWhere(item, source.link, child, params, aliases)}${pageSql(item.modifiers, params)})`;
}

/** Select list over `table`; embeddings become correlated subqueries that build their JSON in PostgreSQL. */
export function selectListSql(items: PlannedSelect[], table: string, params: Params, aliases: Aliases): string {
  return answered(items)
    .map((item) => {
      if (item.kind === 'column') return `${columnSql(table, item.column, item.json, params)}${item.cast ? castSql(item.cast) : ''} as ${ident(item.alias)}`;
      if (item.kind === 'count') return `count(*) as ${ident(item.alias)}`;
      const child = aliases.take('_t');
      const row = aliases.take('_e');
      const source = embedSource(item, table, child, params, aliases);
      const where = embeddedRowsWhere(item, source.link, child, params, aliases);
      const inner = `select ${selectListSql(item.select, child, params, aliases)} from ${source.from} where ${where}`;
      if (item.spread && item.many) {
        // A to-many spread, as PostgREST 13's: each column of the embedded rows becomes an array in the parent's row, in their order.
        const rows = `${inner}${orderSql(item.modifiers.order, child, params, aliases)}${pageSql(item.modifiers, params)}`;
        return outputNames(item.select).map((name) => `(select coalesce(json_agg(${row}.${ident(name)}), '[]') from (${rows}) ${row}) as ${ident(name)}`).join(', ');
      }
      if (item.spread) {
        // The embedded row, looked up once per spread column: each is a scalar in the parent's row.
        const one = `${inner}${toOnePageSql(item, params)}`;
        return outputNames(item.select).map((name) => `(select ${row}.${ident(name)} from (${one}) ${row}) as ${ident(name)}`).join(', ');
      }
      if (item.many) {
        // A count is one row: there is nothing to order.
        const ordered = item.select.some((s) => s.kind === 'count') ? '' : orderSql(item.modifiers.order, child, params, aliases);
        return `(select coalesce(json_agg(${row}), '[]') from (${inner}${ordered}${pageSql(item.modifiers, params)}) ${row}) as ${ident(item.alias)}`;
      }
      return `(select to_json(${row}) from (${inner}${toOnePageSql(item, params)}) ${row}) as ${ident(item.alias)}`;
    })
    .join(', ');
}

/** `exists (…)` for each `!inner` embedding: the parent row needs a matching child. */
export function innerJoinsSql(items: PlannedSelect[], table: string, params: Params, aliases: Aliases): string[] {
  return items.flatMap((item) => (item.kind === 'embed' && item.inner ? [existsSql(item, table, params, aliases)] : []));
}


/** Column list for an INSERT/UPDATE. */
export const columnList = (columns: ColumnInfo[]) => columns.map((c) => ident(c.name)).join(', ');
