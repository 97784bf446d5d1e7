/**
 * Reads a tenant's `public` schema from the live system catalogs: tables,
 * columns, primary and foreign keys, RLS and policies, and the other objects
 * whose names a new table cannot take. The catalog is the truth, so what SQL
 * changed shows as well as what commands changed.
 */
import type { PoolClient } from 'pg';
import { apiTypeName } from '@baseplane/contracts';

export interface ColumnInfo {
  name: string;
  /** As API.md spells it (`int8`, `varchar(20)`); a type outside its list as PostgreSQL names it. */
  type: string;
  nullable: boolean;
  default: string | null;
  unique: boolean;
  isPrimaryKey: boolean;
  isIdentity: boolean;
}

export interface ForeignKeyInfo {
  name: string;
  columns: string[];
  references: { table: string; columns: string[] };
  onDelete: string;
  onUpdate: string;
}

export interface PolicyInfo {
  name: string;
  command: string;
  roles: string[];
  using: string | null;
  check: string | null;
}

export interface TableInfo {
  name: string;
  schema: 'public';
  columns: ColumnInfo[];
  primaryKey: string[];
  foreignKeys: ForeignKeyInfo[];
  rlsEnabled: boolean;
  access: string;
  policies: PolicyInfo[];
}

const ACTIONS: Record<string, string> = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };

/** All tables of `public` (or just `only`), ordered by name. */
export async function readCatalog(client: PoolClient, only?: string): Promise<TableInfo[]> {
  const tables = await client.query<{ oid: number; name: string; rls: boolean; access: string | null }>(
    `select c.oid, c.relname as name, c.relrowsecurity as rls, obj_description(c.oid, 'pg_class') as access
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p') and ($1::text is null or c.relname = $1)
     order by c.relname`,
    [only ?? null],
  );
  if (tables.rows.length === 0) return [];
  const oids = tables.rows.map((t) => t.oid);
  // One query at a time: pg runs a connection's queries one after another anyway, and warns (pg 9 refuses) when
  // a second is sent before the first has answered.
  const columns = await client.query<{ table_oid: number; name: string; type: string; nullable: boolean; default: string | null; identity: string }>(
    `select a.attrelid as table_oid, a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
            not a.attnotnull as nullable, pg_get_expr(d.adbin, d.adrelid) as default, a.attidentity as identity
     from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
     where a.attrelid = any($1) and a.attnum > 0 and not a.attisdropped
     order by a.attrelid, a.attnum`,
    [oids],
  );
  const constraints = await client.query<{ table_oid: number; name: string; type: string; columns: string[]; ref_table: string | null; ref_columns: string[] | null; on_delete: string; on_update: string }>(
    `select con.conrelid as table_oid, con.conname as name, con.contype as type,
            array(select a.attname from unnest(con.conkey) with ordinality k(n, i)
                  join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.n order by k.i)::text[] as columns,
            rc.relname as ref_table,
            case when con.contype = 'f' then array(select a.attname from unnest(con.confkey) with ordinality k(n, i)
                  join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.n order by k.i)::text[] end as ref_columns,
            con.confdeltype as on_delete, con.confupdtype as on_update
     from pg_constraint con left join pg_class rc on rc.oid = con.confrelid
     where con.conrelid = any($1) and con.contype in ('p', 'u', 'f')
     order by con.conname`,
    [oids],
  );
  const policies = await client.query<{ table_oid: number; name: string; command: string; roles: string[]; using: string | null; check: string | null }>(
    `select p.polrelid as table_oid, p.polname as name,
            case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end as command,
            case when p.polroles = '{0}' then array['public'] else array(select rolname from pg_roles where oid = any(p.polroles) order by rolname) end::text[] as roles,
            pg_get_expr(p.polqual, p.polrelid) as using, pg_get_expr(p.polwithcheck, p.polrelid) as check
     from pg_policy p where p.polrelid = any($1) order by p.polname`,
    [oids],
  );
  return tables.rows.map((table) => {
    const own = constraints.rows.filter((c) => c.table_oid === table.oid);
    const primaryKey = own.find((c) => c.type === 'p')?.columns ?? [];
    const uniqueSingles = new Set(own.filter((c) => c.type === 'u' && c.columns.length === 1).map((c) => c.columns[0]!));
    return {
      name: table.name,
      schema: 'public' as const,
      columns: columns.rows
        .filter((c) => c.table_oid === table.oid)
        .map((c) => ({
          name: c.name,
          type: apiTypeName(c.type),
          nullable: c.nullable,
          default: c.default,
          unique: uniqueSingles.has(c.name) || (primaryKey.length === 1 && primaryKey[0] === c.name),
          isPrimaryKey: primaryKey.includes(c.name),
          isIdentity: c.identity !== '',
        })),
      primaryKey,
      foreignKeys: own
        .filter((c) => c.type === 'f')
        .map((c) => ({
          name: c.name,
          columns: c.columns,
          references: { table: c.ref_table!, columns: c.ref_columns ?? [] },
          onDelete: ACTIONS[c.on_delete] ?? 'no action',
          onUpdate: ACTIONS[c.on_update] ?? 'no action',
        })),
      rlsEnabled: table.rls,
      access: /^baseplane:access=([a-z-]+)$/.exec(table.access ?? '')?.[1] ?? 'custom',
      policies: policies.rows.filter((p) => p.table_oid === table.oid).map(({ table_oid: _, ...p }) => p),
    };
  });
}

/** An object of `public` other than a table whose name a new table cannot take: a relation of another kind, or a type. */
export interface OtherObject {
  name: string;
  kind: string;
}

/** What schema commands are decided against: the tables, and the other names already taken. */
export interface SchemaFacts {
  tables: TableInfo[];
  otherObjects: OtherObject[];
  /**
   * Names a recorded change frees only once it is applied (a dropped table's, a dropped or renamed column's): the
   * change can still fail (a foreign key depends on it, a value does not convert), so they stay taken until then.
   */
  held?: { tables: string[]; columns: Array<{ table: string; column: string }> };
}

export async function readSchemaFacts(client: PoolClient): Promise<SchemaFacts> {
  return { tables: await readCatalog(client), otherObjects: await readOtherObjects(client) };
}

/**
 * Relations of `public` that are not tables (views, materialized views,
 * sequences, indexes, foreign tables, composite types) and its types (enums,
 * domains, ranges and their multiranges), since a table's row type takes its
 * name too. Array types made along with another type are left out: PostgreSQL
 * renames them out of a new table's way.
 */
export async function readOtherObjects(client: PoolClient): Promise<OtherObject[]> {
  const { rows } = await client.query<OtherObject>(
    `select c.relname as name,
            case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' when 'i' then 'index'
                           when 'I' then 'index' when 'f' then 'foreign table' when 'c' then 'type' else 'relation' end as kind
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind not in ('r', 'p')
     union all
     select t.typname, 'type'
     from pg_type t join pg_namespace n on n.oid = t.typnamespace
     where n.nspname = 'public' and t.typrelid = 0 and not exists (select 1 from pg_type e where e.typarray = t.oid)
     order by name`,
  );
  return rows;
}
