/**
 * The project's OpenAPI description (`GET /rest/v1/`), made from its schema
 * snapshot the way PostgREST makes it: a path per table, view and function,
 * a definition per table with its columns. Pure.
 */
import type { ColumnInfo, SchemaSnapshot } from './schema-model';

/** A JSON-schema type for a PostgreSQL type, as PostgREST maps them. */
function schemaOf(column: ColumnInfo): Record<string, unknown> {
  const type = column.type;
  const base: Record<string, unknown> = { format: type };
  if (type.endsWith('[]')) return { ...base, type: 'array', items: schemaOf({ ...column, type: type.slice(0, -2) }) };
  if (/^(smallint|integer|bigint)$/.test(type)) return { ...base, type: 'integer' };
  if (/^(numeric|real|double precision)/.test(type)) return { ...base, type: 'number' };
  if (type === 'boolean') return { ...base, type: 'boolean' };
  if (type === 'json' || type === 'jsonb') return base;
  return { ...base, type: 'string' };
}

const FILTER_HINT = 'PostgREST filters: <column>=<operator>.<value>';

/** The OpenAPI 3 document of one project. */
export function openApiOf(snapshot: SchemaSnapshot, info: { title: string; description: string; serverUrl: string }): Record<string, unknown> {
  const paths: Record<string, unknown> = { '/': { get: { summary: 'OpenAPI description (this document)', responses: { 200: { description: 'OK' } } } } };
  const schemas: Record<string, unknown> = {};
  for (const relation of snapshot.relations.values()) {
    const ref = { $ref: `#/components/schemas/${relation.name}` };
    const list = { description: 'OK', content: { 'application/json': { schema: { type: 'array', items: ref } } } };
    const operations: Record<string, unknown> = {
      get: { tags: [relation.name], summary: `read ${relation.name}`, description: FILTER_HINT, responses: { 200: list, 206: { description: 'Partial Content' } } },
    };
    if (relation.kind === 'table') {
      const body = { content: { 'application/json': { schema: { oneOf: [ref, { type: 'array', items: ref }] } } } };
      operations.post = { tags: [relation.name], summary: `insert into ${relation.name}`, requestBody: body, responses: { 201: { description: 'Created' } } };
      operations.patch = { tags: [relation.name], summary: `update ${relation.name} (a filter is required)`, requestBody: body, responses: { 200: list, 204: { description: 'No Content' } } };
      operations.delete = { tags: [relation.name], summary: `delete from ${relation.name} (a filter is required)`, responses: { 200: list, 204: { description: 'No Content' } } };
    }
    paths[`/${relation.name}`] = operations;
    schemas[relation.name] = {
      type: 'object',
      required: relation.columns.filter((c) => !c.nullable && !c.hasDefault).map((c) => c.name),
      properties: Object.fromEntries(
        relation.columns.map((c) => [c.name, { ...schemaOf(c), ...(relation.primaryKey.includes(c.name) ? { description: 'Note: this is a Primary Key.<pk/>' } : {}) }]),
      ),
      ...(relation.comment ? { description: relation.comment } : {}),
    };
  }
  for (const [name, overloads] of snapshot.functions) {
    const fn = overloads[0]!;
    const args = { type: 'object', properties: Object.fromEntries(fn.args.map((a) => [a.name, schemaOf({ name: a.name, type: a.type, nullable: true, hasDefault: a.hasDefault })])), required: fn.args.filter((a) => !a.hasDefault).map((a) => a.name) };
    paths[`/rpc/${name}`] = {
      post: { tags: ['(rpc)'], summary: `call ${name}`, requestBody: { content: { 'application/json': { schema: args } } }, responses: { 200: { description: 'OK' } } },
      ...(fn.volatile ? {} : { get: { tags: ['(rpc)'], summary: `call ${name} (arguments as query parameters)`, responses: { 200: { description: 'OK' } } } }),
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: info.title, version: '1', description: info.description },
    servers: [{ url: info.serverUrl }],
    paths,
    components: { schemas, securitySchemes: { apikey: { type: 'apiKey', in: 'header', name: 'apikey' } } },
    security: [{ apikey: [] }],
  };
}
