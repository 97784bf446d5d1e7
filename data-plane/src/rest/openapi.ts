/**
 * The project's OpenAPI description (`GET /rest/v1/`), made from its schema
 * snapshot the way PostgREST makes it: a Swagger 2.0 document (OpenAPI 2.0,
 * which is what PostgREST serves and what tools reading it expect) with a
 * path per table, view and function, a definition per relation with its
 * columns, and the shared query parameters. Pure.
 */
import type { ColumnInfo, FunctionInfo, RelationInfo, SchemaSnapshot } from './schema-model';

/** A JSON-schema type for a PostgreSQL type, as PostgREST maps them; `format` is the PostgreSQL type. */
function schemaOf(type: string): Record<string, unknown> {
  if (type.endsWith('[]')) return { format: type, type: 'array', items: { type: (schemaOf(type.slice(0, -2)).type as string | undefined) ?? 'string' } };
  if (/^(smallint|integer|bigint)$/.test(type)) return { format: type, type: 'integer' };
  if (/^(numeric|real|double precision)/.test(type)) return { format: type, type: 'number' };
  if (type === 'boolean') return { format: type, type: 'boolean' };
  if (type === 'json' || type === 'jsonb') return { format: type };
  return { format: type, type: 'string' };
}

/** A JSON pointer's segment in a URI fragment: a table may be named `a/b` or `a~b`. */
const pointer = (name: string) => encodeURIComponent(name.replace(/~/g, '~0').replace(/\//g, '~1'));
const ref = (name: string) => ({ $ref: `#/parameters/${pointer(name)}` });
const definition = (name: string) => ({ $ref: `#/definitions/${pointer(name)}` });
const ROWS = ['select', 'order', 'range', 'rangeUnit', 'offset', 'limit', 'preferCount'];

/** Query parameters every read or write shares, as PostgREST lists them under `parameters`. */
const SHARED_PARAMETERS: Record<string, Record<string, unknown>> = {
  select: { name: 'select', description: 'Filtering Columns', required: false, in: 'query', type: 'string' },
  order: { name: 'order', description: 'Ordering', required: false, in: 'query', type: 'string' },
  range: { name: 'Range', description: 'Limiting and Pagination', required: false, in: 'header', type: 'string' },
  rangeUnit: { name: 'Range-Unit', description: 'Limiting and Pagination', required: false, default: 'items', in: 'header', type: 'string' },
  offset: { name: 'offset', description: 'Limiting and Pagination', required: false, in: 'query', type: 'string' },
  limit: { name: 'limit', description: 'Limiting and Pagination', required: false, in: 'query', type: 'string' },
  on_conflict: { name: 'on_conflict', description: 'On Conflict', required: false, in: 'query', type: 'string' },
  preferCount: { name: 'Prefer', description: 'Preference', required: false, in: 'header', type: 'string', enum: ['count=exact', 'count=planned', 'count=estimated'] },
  preferReturn: { name: 'Prefer', description: 'Preference', required: false, in: 'header', type: 'string', enum: ['return=representation', 'return=minimal', 'return=headers-only'] },
  preferPost: { name: 'Prefer', description: 'Preference', required: false, in: 'header', type: 'string', enum: ['return=representation', 'return=minimal', 'return=headers-only', 'resolution=ignore-duplicates', 'resolution=merge-duplicates', 'missing=default'] },
};

function definitionOf(relation: RelationInfo): Record<string, unknown> {
  const required = relation.columns.filter((c) => !c.nullable && !c.hasDefault).map((c) => c.name);
  return {
    type: 'object',
    ...(required.length > 0 ? { required } : {}),
    properties: Object.fromEntries(
      relation.columns.map((c) => [c.name, { ...schemaOf(c.type), ...(relation.primaryKey.includes(c.name) ? { description: 'Note:\nThis is a Primary Key.<pk/>' } : {}) }]),
    ),
    ...(relation.comment ? { description: relation.comment } : {}),
  };
}

/** One `rowFilter.<table>.<column>` parameter: a column filtered as `<column>=<operator>.<value>`. */
const rowFilterOf = (column: ColumnInfo) => ({ name: column.name, required: false, in: 'query', type: 'string', format: column.type });

function relationPath(relation: RelationInfo, parameters: Record<string, unknown>): Record<string, unknown> {
  const tags = [relation.name];
  const filters = relation.columns.map((c) => {
    const name = `rowFilter.${relation.name}.${c.name}`;
    parameters[name] = rowFilterOf(c);
    return ref(name);
  });
  const rows = { description: 'OK', schema: { type: 'array', items: definition(relation.name) } };
  const operations: Record<string, unknown> = {
    get: { tags, parameters: [...filters, ...ROWS.map(ref)], responses: { 200: rows, 206: { description: 'Partial Content' } } },
  };
  if (relation.kind === 'table') {
    const body = `body.${relation.name}`;
    parameters[body] = { name: relation.name, description: relation.name, required: false, in: 'body', schema: definition(relation.name) };
    operations.post = { tags, parameters: [ref(body), ref('select'), ref('preferPost')], responses: { 201: { description: 'Created' } } };
    operations.patch = { tags, parameters: [...filters, ref(body), ref('preferReturn')], responses: { 204: { description: 'No Content' } } };
    operations.delete = { tags, parameters: [...filters, ref('preferReturn')], responses: { 204: { description: 'No Content' } } };
  }
  return operations;
}

function functionPath(fn: FunctionInfo): Record<string, unknown> {
  const tags = ['(rpc) ' + fn.name];
  const required = fn.args.filter((a) => !a.hasDefault).map((a) => a.name);
  const args = {
    name: 'args',
    required: true,
    in: 'body',
    schema: { type: 'object', ...(required.length > 0 ? { required } : {}), properties: Object.fromEntries(fn.args.map((a) => [a.name, schemaOf(a.type)])) },
  };
  const ok = { 200: { description: 'OK' } };
  const operations: Record<string, unknown> = { post: { tags, produces: ['application/json', 'application/vnd.pgrst.object+json'], parameters: [args], responses: ok } };
  // Arguments of a GET come as query parameters, in their text form.
  if (!fn.volatile) operations.get = { tags, parameters: fn.args.map((a) => ({ name: a.name, required: !a.hasDefault, in: 'query', type: 'string', format: a.type })), responses: ok };
  return operations;
}

/** The Swagger 2.0 document of one project, served under `serverUrl` (its host and path become `host` and `basePath`). */
export function openApiOf(snapshot: SchemaSnapshot, info: { title: string; description: string; serverUrl: string }): Record<string, unknown> {
  const server = new URL(info.serverUrl);
  const parameters: Record<string, unknown> = { ...SHARED_PARAMETERS };
  const paths: Record<string, unknown> = {
    '/': { get: { tags: ['Introspection'], summary: 'OpenAPI description (this document)', produces: ['application/openapi+json', 'application/json'], responses: { 200: { description: 'OK' } } } },
  };
  const definitions: Record<string, unknown> = {};
  for (const relation of snapshot.relations.values()) {
    paths[`/${relation.name}`] = relationPath(relation, parameters);
    definitions[relation.name] = definitionOf(relation);
  }
  // Overloads share a path; the first stands for them, as in PostgREST.
  for (const [name, overloads] of snapshot.functions) paths[`/rpc/${name}`] = functionPath(overloads[0]!);
  return {
    swagger: '2.0',
    info: { title: info.title, description: info.description, version: '1' },
    host: server.host,
    basePath: server.pathname.replace(/\/$/, '') || '/',
    schemes: [server.protocol.replace(/:$/, '')],
    consumes: ['application/json', 'application/vnd.pgrst.object+json;nulls=stripped', 'application/vnd.pgrst.object+json', 'text/csv', 'application/x-www-form-urlencoded'],
    produces: ['application/json', 'application/vnd.pgrst.object+json;nulls=stripped', 'application/vnd.pgrst.object+json', 'text/csv'],
    paths,
    definitions,
    parameters,
    securityDefinitions: { apikey: { type: 'apiKey', in: 'header', name: 'apikey' } },
    security: [{ apikey: [] }],
  };
}
