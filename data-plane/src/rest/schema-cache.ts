/**
 * The per-project schema cache the planner reads: built from the tenant's
 * catalog on first use, dropped on schema events (the directory's onEvent),
 * and reloadable on demand (rate-limited) when a request names something the
 * cache does not know yet.
 */
import type { ColumnInfo, FunctionInfo, RelationInfo, RowFunction, SchemaSnapshot } from './schema-model';
import { snapshotOf } from './schema-model';
import { viewColumnSources } from './view-columns';

/** The schema's oid, `$1` its name: found once per read (an InitPlan); no such schema reads as an empty one. */
const NAMESPACE = '(select n.oid from pg_namespace n where n.nspname = $1)';

/**
 * Reads the catalog of one schema (`$1`, its name) in one round trip; run as `authenticator`,
 * which may read pg_catalog. Besides relations, keys and functions: the
 * functions taking one row of a relation (computed fields and
 * relationships), and the query trees of the views that may show a key's
 * columns (a foreign key's, or a primary key's), read by view-columns.ts.
 */
export const CATALOG_QUERY = `
select json_build_object(
  'relations', coalesce((
    select json_agg(json_build_object(
      'name', c.relname, 'oid', c.oid::int8,
      'kind', case when c.relkind in ('r', 'p', 'f') then 'table' else 'view' end, 'relkind', c.relkind,
      'comment', obj_description(c.oid, 'pg_class'),
      'columns', coalesce((
        select json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'nullable', not a.attnotnull,
                                          'hasDefault', a.atthasdef or a.attidentity <> '' or a.attgenerated <> '', 'attnum', a.attnum) order by a.attnum)
        from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), '[]'),
      'primaryKey', coalesce((
        select json_agg(a.attname order by k.ord)
        from pg_constraint con, unnest(con.conkey) with ordinality k(attnum, ord), pg_attribute a
        where con.conrelid = c.oid and con.contype = 'p' and a.attrelid = c.oid and a.attnum = k.attnum), '[]'),
      'uniqueKeys', coalesce((
        select json_agg((select json_agg(a.attname order by k.ord) from unnest(con.conkey) with ordinality k(attnum, ord)
                         join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum) order by con.conname)
        from pg_constraint con where con.conrelid = c.oid and con.contype in ('p', 'u')), '[]')
    ) order by c.relname)
    from pg_class c where c.relnamespace = ${NAMESPACE} and c.relkind in ('r', 'p', 'v', 'm', 'f')), '[]'),
  'foreignKeys', coalesce((
    select json_agg(json_build_object(
      'name', con.conname, 'table', src.relname, 'refTable', dst.relname,
      'columns', (select json_agg(a.attname order by k.ord) from unnest(con.conkey) with ordinality k(attnum, ord)
                  join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.attnum),
      'refColumns', (select json_agg(a.attname order by k.ord) from unnest(con.confkey) with ordinality k(attnum, ord)
                     join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.attnum)))
    from pg_constraint con join pg_class src on src.oid = con.conrelid join pg_class dst on dst.oid = con.confrelid
    where con.contype = 'f' and src.relnamespace = ${NAMESPACE} and dst.relnamespace = ${NAMESPACE}), '[]'),
  'functions', coalesce((
    select json_agg(json_build_object(
      'name', p.proname, 'returnsSet', p.proretset, 'returnsVoid', p.prorettype = 'void'::regtype,
      'volatile', p.provolatile = 'v', 'returnType', format_type(p.prorettype, null),
      'argNames', coalesce(p.proargnames, '{}'), 'argModes', coalesce(p.proargmodes::text[], '{}'),
      'argTypes', array(select format_type(x, null) from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) with ordinality u(x, n) order by n),
      'inputCount', p.pronargs, 'defaultCount', p.pronargdefaults,
      'returnsRowOf', (select rc.relname from pg_class rc
                       where rc.oid = t.typrelid and rc.relnamespace = ${NAMESPACE} and rc.relkind in ('r', 'p', 'v', 'm', 'f')),
      'rowColumns', (select json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'nullable', true, 'hasDefault', false) order by a.attnum)
                     from pg_attribute a where t.typrelid <> 0 and a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped)))
    from pg_proc p join pg_type t on t.oid = p.prorettype
    where p.pronamespace = ${NAMESPACE} and p.prokind = 'f'), '[]'),
  'rowFunctions', coalesce((
    select json_agg(json_build_object(
      'name', p.proname, 'relation', arg.relname, 'type', format_type(p.prorettype, null), 'returnsSet', p.proretset,
      'returnsRowOf', ret.relname, 'oneRow', p.proretset and p.prorows = 1, 'arguments', p.pronargs))
    from pg_proc p
    join pg_type argt on argt.oid = p.proargtypes[0]
    join pg_class arg on arg.oid = argt.typrelid and arg.relnamespace = ${NAMESPACE} and arg.relkind in ('r', 'p', 'v', 'm', 'f')
    left join pg_type rett on rett.oid = p.prorettype
    left join pg_class ret on ret.oid = rett.typrelid and ret.relnamespace = ${NAMESPACE} and ret.relkind in ('r', 'p', 'v', 'm', 'f')
    -- One argument, or more whose others have defaults: what PostgreSQL's attribute notation (people.full_name) calls.
    where p.pronamespace = ${NAMESPACE} and p.prokind = 'f' and p.pronargs >= 1 and p.pronargs - p.pronargdefaults <= 1
      and p.prorettype <> 'void'::regtype), '[]'),
  'views', coalesce((
    -- Only the views that can show a key: those selecting a column in a foreign key of the schema (either side) or in a
    -- primary key, or a column of another view; the others' query trees are not read.
    with key_columns as (
      select k.conrelid as rel, unnest(k.conkey) as col from pg_constraint k where k.contype in ('f', 'p') and k.connamespace = ${NAMESPACE}
      union
      select k.confrelid, unnest(k.confkey) from pg_constraint k where k.contype = 'f' and k.connamespace = ${NAMESPACE}
    ), views as (
      select c.oid, r.oid as rule from pg_class c join pg_rewrite r on r.ev_class = c.oid and r.rulename = '_RETURN'
      where c.relnamespace = ${NAMESPACE} and c.relkind in ('v', 'm')
    )
    select json_agg(json_build_object('oid', v.oid::int8, 'definition', r.ev_action::text))
    from views v join pg_rewrite r on r.oid = v.rule
    where exists (
      select 1 from pg_depend d
      where d.classid = 'pg_rewrite'::regclass and d.objid = v.rule and d.refclassid = 'pg_class'::regclass and d.refobjsubid > 0
        and ((d.refobjid, d.refobjsubid) in (select rel, col from key_columns) or d.refobjid in (select oid from views)))), '[]')
)::text as catalog`;

interface RawFunction {
  name: string;
  returnsSet: boolean;
  returnsVoid: boolean;
  volatile: boolean;
  returnType: string;
  argNames: string[];
  argModes: string[];
  argTypes: string[];
  inputCount: number;
  defaultCount: number;
  rowColumns: ColumnInfo[] | null;
  returnsRowOf?: string | null;
}

/** Turns one pg_proc row into what rpc needs; functions with unnamed inputs cannot be called by name and are left out. */
function functionOf(raw: RawFunction): FunctionInfo | undefined {
  const modes = raw.argModes.length > 0 ? raw.argModes : raw.argTypes.map(() => 'i');
  const inputs: Array<{ name: string; type: string }> = [];
  const outputs: ColumnInfo[] = [];
  modes.forEach((mode, i) => {
    const name = raw.argNames[i] ?? '';
    const type = raw.argTypes[i] ?? 'unknown';
    if (mode === 'i' || mode === 'b' || mode === 'v') inputs.push({ name, type });
    if (mode === 'o' || mode === 'b' || mode === 't') outputs.push({ name, type, nullable: true, hasDefault: false });
  });
  if (inputs.some((a) => a.name === '')) return undefined;
  const firstDefault = inputs.length - raw.defaultCount;
  const info: FunctionInfo = {
    name: raw.name,
    args: inputs.map((a, i) => ({ name: a.name, type: a.type, hasDefault: i >= firstDefault })),
    returnType: raw.returnType,
    returnsSet: raw.returnsSet,
    returnsVoid: raw.returnsVoid,
    volatile: raw.volatile,
    returnsRow: false,
  };
  const columns = modes.includes('t') ? outputs : raw.rowColumns ?? (outputs.length > 1 ? outputs : null);
  if (columns && columns.length > 0) {
    info.resultColumns = columns;
    info.returnsRow = true;
  }
  if (raw.returnsRowOf) info.returnsRowOf = raw.returnsRowOf;
  return info;
}

type RawColumn = ColumnInfo & { attnum?: number };

/** Parses the catalog query's one value, read for `schema`, into a snapshot. */
export function snapshotFromCatalog(catalogJson: string, schema = 'public'): SchemaSnapshot {
  const raw = JSON.parse(catalogJson) as {
    relations: Array<{ name: string; oid?: number; kind: 'table' | 'view'; relkind: RelationInfo['relkind']; comment: string | null; columns: RawColumn[]; primaryKey: string[]; uniqueKeys: string[][] }>;
    foreignKeys: Array<{ name: string; table: string; refTable: string; columns: string[]; refColumns: string[] }>;
    functions: RawFunction[];
    rowFunctions?: Array<Omit<RowFunction, 'returnsRowOf'> & { returnsRowOf: string | null }>;
    views?: Array<{ oid: number; definition: string }>;
  };
  const views = raw.views ?? [];
  const viewColumns = views.length === 0 ? [] : viewColumnSources(views, raw.relations.filter((r) => r.oid !== undefined).map((r) => ({
    oid: r.oid!,
    name: r.name,
    kind: r.kind,
    columns: new Map(r.columns.filter((c) => c.attnum !== undefined).map((c) => [c.attnum!, c.name])),
  })));
  return snapshotOf({
    schema,
    // The attribute numbers only serve to follow views; a column is known by its name.
    relations: raw.relations.map(({ oid: _oid, columns, ...relation }) => ({ ...relation, columns: columns.map(({ attnum: _attnum, ...column }) => column) })),
    foreignKeys: raw.foreignKeys,
    functions: raw.functions.map(functionOf).filter((f): f is FunctionInfo => f !== undefined),
    viewColumns,
    rowFunctions: (raw.rowFunctions ?? []).map(({ returnsRowOf, ...fn }) => (returnsRowOf === null ? fn : { ...fn, returnsRowOf })),
  });
}

/** Minimum age of a snapshot before a miss may reload it: at most one reload per project per this interval. */
const RELOAD_ON_MISS_MS = 100;

/** Snapshots per project and schema, loaded once and shared by concurrent requests. */
export class SchemaCache {
  private readonly entries = new Map<string, Map<string, { snapshot: Promise<SchemaSnapshot>; generation: number }>>();
  private generation = 0;

  constructor(private readonly load: (projectId: string, schema: string) => Promise<SchemaSnapshot>) {}

  /** The snapshot of the project's `schema`, loading it when absent. */
  get(projectId: string, schema = 'public'): Promise<SchemaSnapshot> {
    let schemas = this.entries.get(projectId);
    const entry = schemas?.get(schema);
    if (entry) return entry.snapshot;
    if (!schemas) this.entries.set(projectId, (schemas = new Map()));
    const generation = ++this.generation;
    const snapshot = this.load(projectId, schema);
    schemas.set(schema, { snapshot, generation });
    // A failed load is not cached: the next request tries again.
    snapshot.catch(() => {
      if (this.entries.get(projectId)?.get(schema)?.generation === generation) this.entries.get(projectId)!.delete(schema);
    });
    return snapshot;
  }

  /** Drops the snapshots of every schema of the project (a schema event, a deleted project). */
  invalidate(projectId: string): void {
    this.entries.delete(projectId);
  }

  /**
   * After a miss: a snapshot of the same schema newer than the one used,
   * reloading it when needed. A snapshot younger than {@link RELOAD_ON_MISS_MS}
   * is reloaded once it is that old, so a burst of unknown names costs one
   * catalog read per interval, while a name created just after the last load is still found.
   */
  async reloadAfterMiss(projectId: string, used: SchemaSnapshot): Promise<SchemaSnapshot> {
    const age = Date.now() - used.loadedAt;
    if (age < RELOAD_ON_MISS_MS) await new Promise((resolve) => setTimeout(resolve, RELOAD_ON_MISS_MS - age));
    const current = await this.get(projectId, used.schema);
    if (current !== used) return current;
    const entry = this.entries.get(projectId)?.get(used.schema);
    if (entry && (await entry.snapshot) === used && this.entries.get(projectId)?.get(used.schema) === entry) this.entries.get(projectId)!.delete(used.schema);
    return this.get(projectId, used.schema);
  }

  /** How many projects have a snapshot. */
  get size(): number {
    return this.entries.size;
  }
}
