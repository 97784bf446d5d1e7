/**
 * The data API's own refusals, in the API.md error shape, with the PostgREST
 * equivalent in `details` where PostgREST has one, so a PostgREST user
 * recognises them. Database errors are mapped in execute's error mapper.
 */
import { ApiError } from '@baseplane/contracts';

/** A query string, header or body the PostgREST grammar does not accept. */
export const invalidFilter = (message: string, details: unknown = null) => new ApiError(400, 'invalid_filter', message, details, null);
export const invalidRequest = (message: string, details: unknown = null, hint: string | null = null) =>
  new ApiError(400, 'invalid_request', message, details, hint);
export const invalidJson = (message = 'request body is not valid JSON') => new ApiError(400, 'invalid_json', message);

/** A name the schema cache does not know: the planner may reload the cache once and retry. */
export class UnknownNameError extends ApiError {
  constructor(status: number, code: string, message: string, hint: string | null = null) {
    super(status, code, message, null, hint);
  }
}

export const unknownTable = (name: string, schema: string) =>
  new UnknownNameError(404, '42P01', `relation "${schema}.${name}" does not exist`, `the tables and views of schema ${schema} are served here; another exposed schema is asked for with Accept-Profile or Content-Profile`);
export const unknownColumn = (column: string, table: string, hint: string | null = null) =>
  new UnknownNameError(400, 'unknown_column', `column "${column}" of relation "${table}" does not exist`, hint);
export const unknownRelationship = (from: string, to: string) =>
  new UnknownNameError(400, 'unknown_relation', `could not find a relationship between "${from}" and "${to}"`, 'embedding follows foreign keys in either direction');
export const unknownFunction = (name: string, schema: string) =>
  new UnknownNameError(404, 'not_found', `function ${schema}.${name} with these arguments not found`, `functions of schema ${schema} are callable here with named arguments`);

/**
 * A related order (`order=name(col)`) naming no embedding of its level's
 * `select=` (PostgREST's PGRST108); a write's order takes its table's columns only.
 */
export const notEmbedded = (name: string, onRead = true) =>
  onRead
    ? new ApiError(400, 'invalid_filter', `"${name}" is not an embedded resource in this request`, null, `include ${name}(…) in select=, under that name (an embedding's alias when it has one)`)
    : new ApiError(400, 'invalid_filter', `"${name}" is not an embedded resource in this request`, null, 'a PATCH or DELETE is ordered by its own columns only');
/** A related order on a to-many embedding, which has no one value per parent row (PostgREST's PGRST118). */
export const relatedOrderNotToOne = (parent: string, name: string) =>
  new ApiError(400, 'invalid_filter', `A related order on "${name}" is not possible`, `"${parent}" and "${name}" do not form a many-to-one or one-to-one relationship`, `order the embedding's own rows with ${name}.order=<column>`);
/** More than one relationship fits an embedding (PostgREST's PGRST201); `hint` is a `!hint` that would pick the first. */
export const ambiguousEmbedding = (from: string, to: string, candidates: string[], hint = candidates[0] ?? 'fk') =>
  new ApiError(300, 'ambiguous_relation', `more than one relationship was found for "${from}" and "${to}"`, candidates, `name one with !<foreign key> or !<column>, e.g. ${to}!${hint}(...)`);
export const ambiguousFunction = (name: string, schema: string, candidates: string[]) =>
  new ApiError(300, 'ambiguous_function', `could not choose the best candidate function between: ${candidates.join(', ')}`, candidates, `rename the arguments of ${schema}.${name}'s overloads so that their names tell them apart`);
export const notSingleObject = (rows: number) =>
  new ApiError(406, 'not_single_object', 'JSON object requested, multiple (or no) rows returned', `the result contains ${rows} rows`);
export const maxAffectedExceeded = (rows: number) =>
  new ApiError(400, 'max_affected_exceeded', 'Query result exceeds max-affected preference constraint', `The query affects ${rows} rows`, 'narrow the filters, or raise max-affected');
export const putKeyMismatch = (primaryKey: string[]) =>
  new ApiError(400, 'invalid_request', 'payload values do not match URL in primary key column(s)', { primaryKey }, 'the body must carry the primary key the eq filters name');
export const filterRequired = (method: string) =>
  new ApiError(400, 'filter_required', `${method} requires a filter`, null, 'add a filter such as ?id=eq.1; to touch every row use a filter that matches all');
export const notAcceptable = (accept: string) =>
  new ApiError(406, 'not_acceptable', `none of these media types are available: ${accept}`, null, 'application/json, application/vnd.pgrst.object+json and text/csv are');
export const csvOfScalars = (fn: string, schema: string) =>
  new ApiError(406, 'not_acceptable', `text/csv is not available for ${schema}.${fn}, which returns a scalar or a set of scalars`, null, 'ask for application/json or application/vnd.pgrst.object+json');
/** `response.status` set to what is no status (PostgREST's PGRST112, 500: the function's fault, not the caller's). */
export const invalidResponseStatus = (value: string) =>
  new ApiError(500, 'invalid_response_status', 'response.status guc must be a valid status code', `response.status is "${value}"`, "set_config('response.status', '201', true): a status of 200 to 599");
/** `response.headers` not of PostgREST's shape (its PGRST111, 500). */
export const invalidResponseHeaders = (value: string) =>
  new ApiError(500, 'invalid_response_headers', 'response.headers guc must be a JSON array composed of objects with a single key and a string value', `response.headers is ${value}`,
    `set_config('response.headers', '[{"X-My-Header":"value"}]', true)`);
