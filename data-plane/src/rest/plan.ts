/**
 * Stage 2 of a data request: a parsed {@link ApiRequest} and the project's
 * schema cache become a {@link Plan} (PostgREST's `Plan`). Pure. Unknown
 * tables, columns, relationships and functions are refused here, so the SQL
 * builder only ever sees names the catalog gave us.
 */
import type { ApiRequest, CountPreference, MediaType, ReturnPreference } from './parse';
import { checkModifierPaths, planModifiers, planSelect, type PlannedCondition, type PlannedModifiers, type PlannedSelect, type Source } from './plan-select';
import { ambiguousFunction, csvOfScalars, filterRequired, invalidRequest, unknownColumn, unknownFunction, unknownTable } from './rest-errors';
import type { ColumnInfo, FunctionArg, FunctionInfo, RelationInfo, SchemaSnapshot } from './schema-model';
import { parseFilter } from './grammar';

interface PlanBase {
  /** The schema its names are in (the snapshot's): the statement qualifies them with it. */
  schema: string;
  media: MediaType;
  headOnly: boolean;
  count?: CountPreference;
  /** `nulls=stripped`: keys whose value is null are left out of the answer's objects (json_strip_nulls, as PostgREST). */
  stripNulls?: boolean;
  /** `Prefer: handling=` as given (echoed in `Preference-Applied`). */
  handling?: 'strict' | 'lenient';
  /** `Prefer: timezone=`, a zone PostgreSQL lists: the transaction's `TimeZone`. */
  timezone?: string;
  /** `Prefer: max-affected=` under `handling=strict`, on a PATCH, DELETE or rpc: more rows written or answered is refused before COMMIT. */
  maxAffected?: number;
}

export interface ReadPlan extends PlanBase {
  kind: 'read';
  relation: RelationInfo;
  select: PlannedSelect[];
  modifiers: PlannedModifiers;
  /** The row cap ({@link PlanLimits.maxRows}) when there is one: `count=estimated` counts exactly up to it. */
  maxRows?: number;
}

export interface WritePlanBase extends PlanBase {
  relation: RelationInfo;
  return: ReturnPreference;
  /** What representation answers with (also used for the Location of headers-only). */
  select: PlannedSelect[];
}

export interface InsertPlan extends WritePlanBase {
  kind: 'insert';
  columns: ColumnInfo[];
  body: string;
  onConflict?: { columns: ColumnInfo[]; action: 'merge' | 'ignore' };
  /**
   * `Prefer: missing=default` with objects of differing keys: one insert per
   * key set, each taking its objects out of the body by position (1-based),
   * so PostgreSQL reads every value as sent.
   */
  groups?: Array<{ columns: ColumnInfo[]; ordinals: number[] }>;
  /** PUT: one row put in place by its primary key (answers 200/204, not 201). */
  put?: boolean;
  /** PUT: the eq filters on the primary key, which the body's row must meet to be written (compared by PostgreSQL, in the column's type). */
  keyFilters?: PlannedCondition[];
}

export interface UpdatePlan extends WritePlanBase {
  kind: 'update';
  columns: ColumnInfo[];
  body: string;
  modifiers: PlannedModifiers;
}

export interface DeletePlan extends WritePlanBase {
  kind: 'delete';
  modifiers: PlannedModifiers;
}

export interface RpcPlan extends PlanBase {
  kind: 'rpc';
  fn: FunctionInfo;
  /** The arguments given; `value` is the query parameter's text of a GET (a POST's come from `argsJson`). */
  args: Array<{ arg: FunctionArg; value?: string }>;
  /** POST: the body as sent, from which PostgreSQL reads each argument in its type (json_to_record), so numbers keep every digit. */
  argsJson?: string;
  /** For functions returning rows of a known shape: select and modifiers on them. */
  select?: PlannedSelect[];
  modifiers: PlannedModifiers;
}

export type Plan = ReadPlan | InsertPlan | UpdatePlan | DeletePlan | RpcPlan;

/** What the service bounds in every plan. */
export interface PlanLimits {
  /**
   * DATA_API_MAX_ROWS: the most rows a read, or an rpc returning a set, answers
   * (PostgREST's `db-max-rows`, Supabase's `max_rows`). A `limit` or `Range`
   * above it is cut to it; writes are not capped, as in PostgREST.
   */
  maxRows?: number;
}

/** `modifiers` with its limit cut to `maxRows`. */
function capped(modifiers: PlannedModifiers, maxRows: number | undefined): PlannedModifiers {
  if (maxRows === undefined || (modifiers.limit !== undefined && modifiers.limit <= maxRows)) return modifiers;
  return { ...modifiers, limit: maxRows };
}

function relationOf(snapshot: SchemaSnapshot, name: string): RelationInfo {
  const relation = snapshot.relations.get(name);
  if (!relation) throw unknownTable(name, snapshot.schema);
  return relation;
}

function base(request: ApiRequest, snapshot: SchemaSnapshot): PlanBase {
  const planned: PlanBase = { schema: snapshot.schema, media: request.accept, headOnly: request.headOnly };
  const { count, handling, timezone, maxAffected } = request.prefer;
  if (request.stripNulls) planned.stripNulls = true;
  if (count) planned.count = count;
  if (handling) planned.handling = handling;
  if (timezone !== undefined) planned.timezone = timezone;
  // PostgREST counts the rows a PATCH or DELETE touched and the rows an rpc answered; other writes are not bound.
  if (maxAffected !== undefined && (request.action === 'update' || request.action === 'delete' || request.action === 'rpc')) planned.maxAffected = maxAffected;
  return planned;
}

/** The body's keys (the union over an array), or `columns=` when given. */
function bodyColumns(request: ApiRequest, relation: RelationInfo): ColumnInfo[] {
  const value = request.body?.value;
  let names: string[];
  if (request.columns) names = request.columns;
  else {
    const set = new Set<string>();
    for (const row of Array.isArray(value) ? value : [value]) for (const key of Object.keys((row ?? {}) as object)) set.add(key);
    names = [...set];
  }
  return names.map((name) => {
    const column = relation.columnsByName.get(name);
    if (!column) throw unknownColumn(name, relation.name);
    return column;
  });
}

function planWriteSelect(snapshot: SchemaSnapshot, request: ApiRequest, relation: RelationInfo): PlannedSelect[] {
  return planSelect(snapshot, relation, request.select, request.modifiers, '');
}

/** Plans one request against one project's schema snapshot. */
export function planRequest(request: ApiRequest, snapshot: SchemaSnapshot, limits: PlanLimits = {}): Plan {
  switch (request.action) {
    case 'read': {
      const relation = relationOf(snapshot, request.target);
      const select = planSelect(snapshot, relation, request.select, request.modifiers, '');
      checkModifierPaths(request.modifiers, select);
      const plan: ReadPlan = { kind: 'read', ...base(request, snapshot), relation, select, modifiers: capped(planModifiers(relation, request.modifiers, '', select), limits.maxRows) };
      if (limits.maxRows !== undefined) plan.maxRows = limits.maxRows;
      return plan;
    }
    case 'insert': {
      const relation = relationOf(snapshot, request.target);
      const columns = bodyColumns(request, relation);
      const select = planWriteSelect(snapshot, request, relation);
      const plan: InsertPlan = { kind: 'insert', ...base(request, snapshot), relation, return: request.prefer.return, select, columns, body: request.body!.raw };
      const groups = request.prefer.missingDefault ? keyGroups(request.body!.value, relation, request.columns) : undefined;
      if (groups && groups.length > 1) plan.groups = groups;
      if (request.prefer.resolution) {
        const names = request.onConflict ?? relation.primaryKey;
        if (names.length === 0) throw invalidRequest(`"${relation.name}" has no primary key; name the conflict columns with on_conflict=`);
        plan.onConflict = {
          columns: names.map((name) => relation.columnsByName.get(name) ?? (() => { throw unknownColumn(name, relation.name); })()),
          action: request.prefer.resolution === 'merge-duplicates' ? 'merge' : 'ignore',
        };
      }
      return plan;
    }
    case 'upsert':
      return planPut(request, snapshot);
    case 'update': {
      const relation = relationOf(snapshot, request.target);
      const modifiers = planModifiers(relation, request.modifiers, '');
      if (modifiers.where.length === 0) throw filterRequired('PATCH');
      return { kind: 'update', ...base(request, snapshot), relation, return: request.prefer.return, select: planWriteSelect(snapshot, request, relation), columns: bodyColumns(request, relation), body: request.body!.raw, modifiers };
    }
    case 'delete': {
      const relation = relationOf(snapshot, request.target);
      const modifiers = planModifiers(relation, request.modifiers, '');
      if (modifiers.where.length === 0) throw filterRequired('DELETE');
      return { kind: 'delete', ...base(request, snapshot), relation, return: request.prefer.return, select: planWriteSelect(snapshot, request, relation), modifiers };
    }
    case 'rpc': {
      const plan = planRpc(request, snapshot);
      if (plan.fn.returnsSet) plan.modifiers = capped(plan.modifiers, limits.maxRows);
      return plan;
    }
  }
}

/** Distinct key sets a `Prefer: missing=default` bulk insert may carry (each is one INSERT of the statement). */
export const MAX_KEY_SETS = 100;

/**
 * The objects of a bulk insert grouped by their set of keys (first-seen
 * order), each group as the positions of its objects in the body: the values
 * stay in the body's text, which PostgreSQL reads (JSON numbers parsed here
 * would lose the digits of bigints and numerics).
 */
function keyGroups(value: unknown, relation: RelationInfo, only: string[] | undefined): InsertPlan['groups'] {
  if (!Array.isArray(value)) return undefined;
  const allowed = only ? new Set(only) : undefined;
  const groups = new Map<string, { names: string[]; ordinals: number[] }>();
  (value as Array<Record<string, unknown>>).forEach((row, index) => {
    // With columns=, keys outside it are ignored, as they are without missing=default.
    const names = Object.keys(row).filter((name) => !allowed || allowed.has(name)).sort();
    const key = JSON.stringify(names);
    let group = groups.get(key);
    if (!group) {
      // Each key set is an INSERT of its own in the statement, and PostgreSQL plans them all at once: a few
      // thousand (a small body of objects with every subset of 12 columns) took gigabytes of its memory.
      if (groups.size === MAX_KEY_SETS) {
        throw invalidRequest(`under Prefer: missing=default a bulk insert takes objects of at most ${MAX_KEY_SETS} different sets of keys`, null, 'give the objects the same keys (null where a value is not known), or send them in several requests');
      }
      group = { names, ordinals: [] };
      groups.set(key, group);
    }
    group.ordinals.push(index + 1);
  });
  return [...groups.values()].map(({ names, ordinals }) => ({
    columns: names.map((name) => relation.columnsByName.get(name) ?? (() => { throw unknownColumn(name, relation.name); })()),
    ordinals,
  }));
}

/**
 * PUT: PostgREST's single-row upsert. The filters must be `eq` on exactly the
 * primary key; that the body carries the same key is checked by the statement
 * itself (it writes the row only then) and the row count before COMMIT, as
 * PostgREST does, so values are compared in the column's type.
 */
function planPut(request: ApiRequest, snapshot: SchemaSnapshot): InsertPlan {
  const relation = relationOf(snapshot, request.target);
  const where = planModifiers(relation, request.modifiers, '').where;
  const pk = relation.primaryKey;
  const keyed = new Set(where.map((c) => (c.kind === 'filter' && c.op === 'eq' && !c.negate && !c.json && !c.quantifier ? c.column.name : '')));
  if (pk.length === 0 || where.length !== pk.length || !pk.every((name) => keyed.has(name))) {
    throw invalidRequest('PUT needs an eq filter on each primary key column and no other filter', { primaryKey: pk });
  }
  const columns = bodyColumns(request, relation);
  return {
    kind: 'insert',
    ...base(request, snapshot),
    relation,
    return: request.prefer.return,
    select: planWriteSelect(snapshot, request, relation),
    columns,
    body: request.body!.raw,
    onConflict: { columns: pk.map((name) => relation.columnsByName.get(name)!), action: 'merge' },
    put: true,
    keyFilters: where,
  };
}

function planRpc(request: ApiRequest, snapshot: SchemaSnapshot): RpcPlan {
  const given = new Map<string, unknown>();
  const body = request.body?.value;
  if (body && typeof body === 'object') for (const [k, v] of Object.entries(body)) given.set(k, v);
  const overloads = snapshot.functions.get(request.target) ?? [];
  // Query parameters of a GET are arguments when an overload has such an argument; the rest filter the result.
  const argNames = new Set(overloads.flatMap((fn) => fn.args.map((a) => a.name)));
  const filters: Array<[string, string]> = [];
  for (const [key, value] of request.rpcQuery) {
    if (argNames.has(key)) given.set(key, value);
    else filters.push([key, value]);
  }
  const matching = overloads.filter((candidate) => {
    const names = new Set(candidate.args.map((a) => a.name));
    return [...given.keys()].every((k) => names.has(k)) && candidate.args.every((a) => a.hasDefault || given.has(a.name));
  });
  const fn = matching[0];
  if (!fn) throw unknownFunction(request.target, snapshot.schema);
  // Overloads the argument names cannot tell apart: PostgREST answers 300 (PGRST203) rather than pick one by catalog order.
  if (matching.length > 1) throw ambiguousFunction(request.target, snapshot.schema, matching.map((f) => `${f.name}(${f.args.map((a) => `${a.name} => ${a.type}`).join(', ')})`));
  // CSV needs columns to name in its header line: a scalar has none, so it is refused rather than answered as JSON under text/csv.
  if (request.accept === 'csv' && !fn.resultColumns && !fn.returnsVoid) throw csvOfScalars(fn.name, snapshot.schema);
  const plan: RpcPlan = { kind: 'rpc', ...base(request, snapshot), fn, args: [], modifiers: { where: [], order: [] } };
  if (request.body) {
    plan.args = fn.args.filter((a) => given.has(a.name)).map((arg) => ({ arg }));
    if (plan.args.length > 0) plan.argsJson = request.body.raw;
  } else {
    plan.args = fn.args.filter((a) => given.has(a.name)).map((arg) => ({ arg, value: String(given.get(arg.name)) }));
  }
  if (fn.resultColumns) {
    const root = request.modifiers.get('')!;
    for (const [key, value] of filters) root.where.push(parseFilter(key, value));
    // Rows of a relation's type are read as that relation's (PostgREST's funcTableName): embeddings follow its keys,
    // computed fields and relationships are its; other rows have columns only.
    const relation = fn.returnsRowOf === undefined ? undefined : snapshot.relations.get(fn.returnsRowOf);
    const source: Source = relation ?? { name: fn.name, columns: fn.resultColumns, columnsByName: new Map(fn.resultColumns.map((c) => [c.name, c])) };
    plan.select = planSelect(snapshot, source, request.select, request.modifiers, '');
    checkModifierPaths(request.modifiers, plan.select);
    plan.modifiers = planModifiers(source, request.modifiers, '', plan.select);
  } else if (filters.length > 0) {
    throw unknownFunction(request.target, snapshot.schema);
  } else if (fn.returnsSet) {
    // A set of scalars has no columns to filter or order by, but is paged like rows.
    const { limit, offset } = request.modifiers.get('') ?? {};
    if (limit !== undefined) plan.modifiers.limit = limit;
    if (offset !== undefined) plan.modifiers.offset = offset;
  }
  return plan;
}
