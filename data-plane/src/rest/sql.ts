/**
 * Stage 3 of a data request: a {@link Plan} becomes one parameterised
 * statement (PostgREST's `Query`) whose single row carries the answer's body,
 * built by PostgreSQL as JSON, and the counts: `body`, `page_count`, `total`
 * and, for `Prefer: return=headers-only`, `location`; last, what the
 * transaction set of `response.*` ({@link RESPONSE_SETTINGS}). Pure.
 */
import type { DeletePlan, InsertPlan, Plan, ReadPlan, RpcPlan, UpdatePlan } from './plan';
import { outputNames, type PlannedSelect } from './plan-select';
import type { ResponseSettings } from './tx-settings';
import { Aliases, Params, columnList, ident, innerJoinsSql, orderSql, pageSql, qualified, selectListSql, whereSql } from './sql-parts';

/** One statement and its parameters. */
export interface Statement {
  text: string;
  values: unknown[];
  /**
   * `count=planned|estimated`: an EXPLAIN whose row estimate is the answer's
   * total, or with `above`, only when the statement's exact `total` (counted up
   * to one row past `above`) is past `above`.
   */
  estimate?: { text: string; values: unknown[]; above?: number };
  /** `Prefer: timezone`: the transaction's `TimeZone`, set with the caller's role. */
  timezone?: string;
  /**
   * The transaction's `search_path` for a schema other than `public`: that
   * schema, then `public`, as PostgREST sets it (its `db-extra-search-path`),
   * so the schema's functions find its names unqualified.
   */
  searchPath?: string;
}

/** What the one row of every statement carries. */
export interface StatementRow extends ResponseSettings {
  body: string | null;
  page_count: number;
  total: string | number | null;
  location?: string | null;
  /** An upsert into a table ({@link countsInserted}): how many of the rows written were inserted, not updated. */
  inserted?: string | number | null;
}

/**
 * PostgREST's `response.status` and `response.headers`, read as the last
 * columns of the statement's row, as PostgREST reads them: in the same round
 * trip, after what the row's other columns ran (the target list is computed
 * in order, an aggregate's after its rows), so a function, policy or BEFORE
 * trigger may set them. An AFTER trigger runs once the row is out, as in
 * PostgREST, too late.
 */
export const RESPONSE_SETTINGS =
  ", nullif(pg_catalog.current_setting('response.headers', true), '') as response_headers, nullif(pg_catalog.current_setting('response.status', true), '') as response_status";

type BodyShape = 'json' | 'object' | 'csv' | 'none';

function bodyShape(plan: Plan): BodyShape {
  if (plan.kind !== 'read' && plan.kind !== 'rpc' && plan.return !== 'representation') return 'none';
  if (plan.headOnly) return 'none';
  return plan.media === 'object' ? 'object' : plan.media === 'csv' ? 'csv' : 'json';
}

/** `json`, or with `nulls=stripped` the same without the keys whose value is null, at every depth (PostgREST's json_strip_nulls). */
const stripped = (plan: Plan, json: string) => (plan.stripNulls ? `json_strip_nulls(${json})` : json);

/** The aggregate that turns the rows of `_s` into the answer's body. */
function bodySql(plan: Plan, shape: BodyShape, select: PlannedSelect[]): string {
  switch (shape) {
    case 'none':
      return 'null::text';
    case 'json':
      return `coalesce(${stripped(plan, 'json_agg(_s)')}, '[]')::text`;
    case 'object':
      return `case when count(*) = 1 then ${stripped(plan, '(json_agg(_s) -> 0)')}::text end`;
    case 'csv': {
      // Every field quoted, quotes doubled (RFC 4180); NULL is an empty field. The header comes from respond.
      const fields = outputNames(select).map((name) => `coalesce('"' || replace(_s.${ident(name)}::text, '"', '""') || '"', '')`);
      return `coalesce(string_agg(${fields.length === 0 ? "''" : fields.join(` || ',' || `)}, E'\\n'), '')`;
    }
  }
}

function readSql(plan: ReadPlan): Statement {
  const params = new Params(plan.schema);
  const aliases = new Aliases();
  const t = '_t0';
  const from = `${qualified(plan.schema, plan.relation.name)} ${t}`;
  const list = selectListSql(plan.select, t, params, aliases);
  /** The rows' condition (filters and inner embeddings) with its values in `into`; the page's shares its aliases. */
  const whereIn = (into: Params, named = new Aliases()) => [whereSql(plan.modifiers.where, t, into, named), ...innerJoinsSql(plan.select, t, into, named)].join(' and ');
  const where = whereIn(params, aliases);
  const page = `select ${list} from ${from} where ${where}${orderSql(plan.modifiers.order, t, params, aliases)}${pageSql(plan.modifiers, params)}`;
  let total = 'null::bigint';
  let estimate: Statement['estimate'];
  if (plan.count === 'planned' || plan.count === 'estimated') {
    // The planner's estimate, as PostgREST gives it: cheap on a large table, where an exact count is not.
    const countParams = new Params(plan.schema);
    estimate = { text: `explain (format json) select 1 from ${from} where ${whereIn(countParams)}`, values: countParams.values };
    if (plan.count === 'estimated' && plan.maxRows !== undefined) {
      // As PostgREST: exact up to the row cap, counted over at most one row more; the estimate only past it.
      total = `(select count(*) from (select 1 from ${from} where ${whereIn(params)} limit ${params.add(plan.maxRows + 1)}) _c)`;
      estimate.above = plan.maxRows;
    }
  } else if (plan.count) {
    total = `(select count(*) from ${from} where ${whereIn(params)})`;
  }
  return {
    text: `select ${bodySql(plan, bodyShape(plan), plan.select)} as body, count(*)::int as page_count, ${total} as total${RESPONSE_SETTINGS} from (${page}) _s`,
    values: params.values,
    ...(estimate ? { estimate } : {}),
  };
}

/**
 * Whether the statement tells inserted rows from updated ones, which an
 * upsert's status needs (PostgREST answers 200 for a POST upsert that
 * inserted nothing, 201 for a PUT that inserted its row), by the system
 * column `xmax`: 0 on a row this statement inserted, the updating
 * transaction's id on a row it updated. Only an ordinary table's RETURNING
 * may read it (a partitioned table's refuses with 0A000, a view has none).
 */
export function countsInserted(plan: Plan): boolean {
  return plan.kind === 'insert' && plan.onConflict?.action === 'merge' && plan.relation.relkind === 'r';
}

/** The answer over the rows a write returned (CTE `pgrst_mutation`). */
function mutationAnswerSql(plan: InsertPlan | UpdatePlan | DeletePlan, params: Params): string {
  const shape = bodyShape(plan);
  const t = '_t0';
  const list = shape === 'none' ? '' : selectListSql(plan.select, t, params, new Aliases());
  const pk = plan.relation.primaryKey;
  const location =
    plan.return === 'headers-only' && pk.length > 0
      ? `(select to_json(_k)::text from (select ${pk.map((c) => `${t}.${ident(c)}`).join(', ')} from pgrst_mutation ${t} limit 1) _k)`
      : 'null::text';
  const counts = countsInserted(plan);
  const inserted = counts ? '(select count(*) from pgrst_mutation where pgrst_inserted)' : 'null::bigint';
  // The answer's rows are the relation's columns alone (not `pgrst_inserted`), so that a computed field's or
  // relationship's function can take them as a row of the relation.
  const rows = counts ? `(select ${columnList(plan.relation.columns)} from pgrst_mutation) ${t}` : `pgrst_mutation ${t}`;
  return `select ${bodySql(plan, shape, plan.select)} as body, count(*)::int as page_count, count(*) as total, ${location} as location, ${inserted} as inserted${RESPONSE_SETTINGS} from (select ${list} from ${rows}) _s`;
}

/**
 * One INSERT … SELECT of `rows` (a FROM item of body rows typed as the
 * table's, aliased `_r`) into `columns`, with the plan's conflict clause and,
 * for a PUT, its key filters on the body's row.
 */
function insertOf(plan: InsertPlan, columnsToInsert: InsertPlan['columns'], rows: string, params: Params): string {
  const table = qualified(plan.schema, plan.relation.name);
  const columns = columnList(columnsToInsert);
  let conflict = '';
  if (plan.onConflict) {
    const target = columnList(plan.onConflict.columns);
    const updates = columnsToInsert.filter((c) => !plan.onConflict!.columns.includes(c));
    conflict =
      plan.onConflict.action === 'ignore' || updates.length === 0
        ? ` on conflict (${target}) do nothing`
        : ` on conflict (${target}) do update set ${updates.map((c) => `${ident(c.name)} = excluded.${ident(c.name)}`).join(', ')}`;
  }
  const where = plan.keyFilters ? ` where ${whereSql(plan.keyFilters, '_r', params, new Aliases())}` : '';
  const returning = countsInserted(plan) ? 'returning *, xmax = 0 as pgrst_inserted' : 'returning *';
  return columnsToInsert.length === 0
    ? `insert into ${table} select from ${rows}${where}${conflict} ${returning}`
    : `insert into ${table} (${columns}) select ${columns} from ${rows}${where}${conflict} ${returning}`;
}

/** The body's objects (one, or an array) as rows of the table. */
function bodyRows(plan: InsertPlan, payload: string): string {
  return `(select * from json_populate_recordset(null::${qualified(plan.schema, plan.relation.name)}, (select case when json_typeof(j) = 'array' then j else json_build_array(j) end from (select ${payload}::json as j) _p))) _r`;
}

/**
 * The objects of the body array whose key set is group `group`, in body order,
 * as rows of the table: taken out by PostgreSQL from `elements` (the body's
 * elements, split once), never re-encoded. `groupOf` is an int[] whose n-th
 * entry is the group of the n-th object, so each object's test is one lookup.
 */
function bodyRowsOfGroup(plan: InsertPlan, groupOf: string, group: number): string {
  return `(select _o.* from pgrst_body _e cross join lateral json_populate_record(null::${qualified(plan.schema, plan.relation.name)}, _e.j) _o where (${groupOf}::int[])[_e.n] = ${group} order by _e.n) _r`;
}

function insertSql(plan: InsertPlan): Statement {
  const params = new Params(plan.schema);
  if (plan.groups) {
    // Prefer: missing=default — one INSERT per set of keys, so each leaves out (defaults) what its objects lack.
    // The body is split into its elements once, and each object's group is looked up by position: an `= any(positions)`
    // per group scanned every position for every object (quadratic), and a split per group read the body once per group.
    const payload = params.add(plan.body);
    const groupOf: number[] = [];
    plan.groups.forEach((group, i) => { for (const ordinal of group.ordinals) groupOf[ordinal - 1] = i; });
    const groupParam = params.add(groupOf);
    const body = `pgrst_body as materialized (select _e.j, _e.n from json_array_elements(${payload}::json) with ordinality _e(j, n))`;
    const ctes = plan.groups.map((group, i) => `pgrst_g${i} as (${insertOf(plan, group.columns, bodyRowsOfGroup(plan, groupParam, i), params)})`);
    const union = plan.groups.map((_, i) => `select * from pgrst_g${i}`).join(' union all ');
    return { text: `with ${body}, ${ctes.join(', ')}, pgrst_mutation as (${union}) ${mutationAnswerSql(plan, params)}`, values: params.values };
  }
  const insert = insertOf(plan, plan.columns, bodyRows(plan, params.add(plan.body)), params);
  return { text: `with pgrst_mutation as (${insert}) ${mutationAnswerSql(plan, params)}`, values: params.values };
}

/**
 * The WHERE of a PATCH/DELETE: its filters, and with `limit` (and `order`)
 * only the first rows they match, picked by ctid (tables only, as PostgREST).
 */
function mutationWhereSql(plan: UpdatePlan | DeletePlan, table: string, t: string, params: Params): string {
  // A write's filters and order name its table's columns only (no embedding): there are no subqueries to alias.
  const where = whereSql(plan.modifiers.where, t, params, new Aliases());
  if (plan.modifiers.limit === undefined && (plan.modifiers.offset ?? 0) === 0) return where;
  const l = '_l0';
  const chosen = `select ${l}.ctid from ${table} ${l} where ${whereSql(plan.modifiers.where, l, params, new Aliases())}${orderSql(plan.modifiers.order, l, params, new Aliases())}${pageSql(plan.modifiers, params)}`;
  return `${where} and ${t}.ctid = any(array(${chosen}))`;
}

function updateSql(plan: UpdatePlan): Statement {
  const params = new Params(plan.schema);
  const t = '_t0';
  const table = qualified(plan.schema, plan.relation.name);
  let mutation: string;
  if (plan.columns.length === 0) {
    // Nothing to set: PostgREST answers no rows without touching the table.
    mutation = `select * from ${table} ${t} where false`;
  } else {
    const payload = params.add(plan.body);
    const sets = plan.columns.map((c) => `${ident(c.name)} = _b.${ident(c.name)}`).join(', ');
    mutation = `update ${table} ${t} set ${sets} from json_populate_record(null::${table}, ${payload}::json) _b where ${mutationWhereSql(plan, table, t, params)} returning ${t}.*`;
  }
  return { text: `with pgrst_mutation as (${mutation}) ${mutationAnswerSql(plan, params)}`, values: params.values };
}

function deleteSql(plan: DeletePlan): Statement {
  const params = new Params(plan.schema);
  const t = '_t0';
  const table = qualified(plan.schema, plan.relation.name);
  const mutation = `delete from ${table} ${t} where ${mutationWhereSql(plan, table, t, params)} returning ${t}.*`;
  return { text: `with pgrst_mutation as (${mutation}) ${mutationAnswerSql(plan, params)}`, values: params.values };
}

/**
 * The call of the plan's function with named arguments, and the FROM item
 * its arguments come from: a POST's are read by PostgreSQL out of the body as
 * sent, each in its parameter's type from the catalog (json_to_record, as
 * PostgREST does), so no value passes through a JavaScript number; a GET's
 * are the query's texts, whose type PostgreSQL infers from the function.
 */
function callOf(plan: RpcPlan, params: Params): { call: string; from?: string } {
  const fn = qualified(plan.schema, plan.fn.name);
  if (plan.argsJson === undefined) {
    return { call: `${fn}(${plan.args.map(({ arg, value }) => `${ident(arg.name)} => ${params.add(value ?? null)}`).join(', ')})` };
  }
  const record = plan.args.map(({ arg }) => `${ident(arg.name)} ${arg.type}`).join(', ');
  return {
    call: `${fn}(${plan.args.map(({ arg }) => `${ident(arg.name)} => _a.${ident(arg.name)}`).join(', ')})`,
    from: `json_to_record(${params.add(plan.argsJson)}::json) as _a(${record})`,
  };
}

/**
 * An rpc. A set-returning function under `Prefer: count=exact` is called once
 * in a CTE (`pgrst_source`, as PostgREST names it) holding its filtered rows:
 * the page reads from it and `total` counts it, so the function never runs
 * twice (a volatile one would do its work twice).
 */
function rpcSql(plan: RpcPlan): Statement {
  const params = new Params(plan.schema);
  const { call, from } = callOf(plan, params);
  // The arguments' row, when there is one, comes first in FROM; the call (in FROM or in the select list) reads it.
  const fromArgs = from === undefined ? '' : ` from ${from}`;
  const before = from === undefined ? '' : `${from}, `;
  const shape = bodyShape(plan);
  const counted = plan.fn.returnsSet && plan.count === 'exact';
  /** The answer's row over `rows`; counted, `source` is the CTE the page reads and `total` counts. */
  const answer = (body: string, rows: string, source?: string): Statement => ({
    text: source === undefined
      ? `select ${body} as body, count(*)::int as page_count, null::bigint as total${RESPONSE_SETTINGS} from ${rows}`
      : `with pgrst_source as (${source}) select ${body} as body, count(*)::int as page_count, (select count(*) from pgrst_source) as total${RESPONSE_SETTINGS} from ${rows}`,
    values: params.values,
  });
  if (plan.fn.returnsVoid) return { text: `select ${call}, null::text as body, 0 as page_count, null::bigint as total${RESPONSE_SETTINGS}${fromArgs}`, values: params.values };
  if (plan.select && plan.fn.resultColumns) {
    const t = '_t0';
    const aliases = new Aliases();
    // Its filters and `!inner` embeddings, as a read's rows have them.
    const where = [whereSql(plan.modifiers.where, t, params, aliases), ...innerJoinsSql(plan.select, t, params, aliases)].join(' and ');
    const filtered = `${before}${call} ${t} where ${where}`;
    const list = selectListSql(plan.select, t, params, aliases);
    const page = `${orderSql(plan.modifiers.order, t, params, aliases)}${pageSql(plan.modifiers, params)}`;
    if (counted) return answer(bodySql(plan, shape, plan.select), `(select ${list} from pgrst_source ${t}${page}) _s`, `select ${t}.* from ${filtered}`);
    const rows = `select ${list} from ${filtered}${page}`;
    // One row: answered as an object, as PostgREST does for a function returning a single composite.
    if (!plan.fn.returnsSet) return { text: `select (select ${stripped(plan, 'to_json(_s)')} from (${rows}) _s)::text as body, 1 as page_count, null::bigint as total${RESPONSE_SETTINGS}`, values: params.values };
    return answer(bodySql(plan, shape, plan.select), `(${rows}) _s`);
  }
  if (plan.fn.returnsSet) {
    // Under the single-object media type the one value itself (checked to be one in respond), as PostgREST answers `7`, not `[7]`.
    const scalars = shape === 'object' ? `case when count(*) = 1 then (json_agg(_s.v) -> 0)::text end` : `coalesce(json_agg(_s.v), '[]')::text`;
    const page = pageSql(plan.modifiers, params);
    if (counted) return answer(scalars, `(select _s.v from pgrst_source _s${page}) _s`, `select _s.v from ${before}${call} as _s(v)`);
    return answer(scalars, page === '' ? `${before}${call} as _s(v)` : `(select _s.v from ${before}${call} as _s(v)${page}) _s`);
  }
  return { text: `select to_json(${call})::text as body, 1 as page_count, null::bigint as total${RESPONSE_SETTINGS}${fromArgs}`, values: params.values };
}

/** Builds the one statement of a plan. */
export function statementFor(plan: Plan): Statement {
  const statement = statementOf(plan);
  if (plan.timezone !== undefined) statement.timezone = plan.timezone;
  if (plan.schema !== 'public') statement.searchPath = `${ident(plan.schema)}, public`;
  return statement;
}

function statementOf(plan: Plan): Statement {
  switch (plan.kind) {
    case 'read':
      return readSql(plan);
    case 'insert':
      return insertSql(plan);
    case 'update':
      return updateSql(plan);
    case 'delete':
      return deleteSql(plan);
    case 'rpc':
      return rpcSql(plan);
  }
}
