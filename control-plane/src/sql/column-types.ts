/**
 * The console's `columns`: each result field with PostgreSQL's name of its
 * type (`format_type`). Built-in types are the same in every database and are
 * cached for the process; a project's own types (enums, domains, …) have
 * OIDs of that database only and are looked up each time.
 */
import type { PoolClient } from 'pg';
import type { SqlColumn } from '@baseplane/contracts';
import type { ResultField } from './last-result-query';

/** OIDs below this are assigned at initdb (FirstNormalObjectId). */
const FIRST_USER_OID = 16384;
const builtInNames = new Map<string, string>();

const keyOf = (field: ResultField) => `${field.dataTypeID}:${field.dataTypeModifier}`;

export async function columnsOf(client: PoolClient, fields: ResultField[]): Promise<SqlColumn[]> {
  const names = new Map<string, string>();
  const unknown: ResultField[] = [];
  for (const field of fields) {
    const cached = field.dataTypeID < FIRST_USER_OID ? builtInNames.get(keyOf(field)) : undefined;
    if (cached === undefined) unknown.push(field);
    else names.set(keyOf(field), cached);
  }
  if (unknown.length > 0) {
    // Qualified throughout: the query may have changed the session's search_path.
    const { rows } = await client.query<{ name: string | null }>(
      `select pg_catalog.format_type(t.oid, t.typmod) as name
       from rows from (pg_catalog.unnest($1::pg_catalog.oid[]), pg_catalog.unnest($2::pg_catalog.int4[])) with ordinality as t (oid, typmod, n)
       order by t.n`,
      [unknown.map((f) => f.dataTypeID), unknown.map((f) => f.dataTypeModifier)],
    );
    unknown.forEach((field, i) => {
      const name = rows[i]?.name ?? 'unknown';
      names.set(keyOf(field), name);
      if (field.dataTypeID < FIRST_USER_OID) builtInNames.set(keyOf(field), name);
    });
  }
  return fields.map((field) => ({ name: field.name, dataType: names.get(keyOf(field)) ?? 'unknown' }));
}
