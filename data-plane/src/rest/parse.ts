/**
 * Stage 1 of a data request: method, path, query string, headers and body
 * become a typed {@link ApiRequest} (PostgREST's `ApiRequest`). Pure: it knows
 * the grammar, not the schema.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { ApiError } from '@baseplane/contracts';
import { embedPath, fieldName, parseFilter, parseLogic, parseOrder, parseSelect, splitOutsideQuotes, type Condition, type OrderTerm, type SelectItem } from './grammar';
import { invalidFilter, invalidJson, invalidRequest, notAcceptable } from './rest-errors';

export type Action = 'read' | 'insert' | 'upsert' | 'update' | 'delete' | 'rpc';
export type ReturnPreference = 'minimal' | 'representation' | 'headers-only';
export type CountPreference = 'exact' | 'planned' | 'estimated';
export type MediaType = 'json' | 'object' | 'csv';

/** Filters, order and paging for one level of the result: the root (`''`) or an embedded path (`author`, `author.posts`). */
export interface Modifiers {
  where: Condition[];
  order: OrderTerm[];
  limit?: number;
  offset?: number;
}

/** A data request, parsed. */
export interface ApiRequest {
  action: Action;
  /** Table/view name, or the function name for rpc. */
  target: string;
  /** Whether HEAD asked: the body is dropped. */
  headOnly: boolean;
  select: SelectItem[];
  /** Keyed by embedding path, `''` for the root. */
  modifiers: Map<string, Modifiers>;
  /** rpc called with GET: query parameters that may be arguments (the planner decides). */
  rpcQuery: Array<[string, string]>;
  prefer: Preferences;
  accept: MediaType;
  /** `nulls=stripped` on the chosen `vnd.pgrst` media type: keys whose value is null are left out of the answer's objects. */
  stripNulls: boolean;
  /** `columns=`: which keys of the body to insert/update. */
  columns?: string[];
  onConflict?: string[];
  /** The JSON body as sent (passed to PostgreSQL as one parameter) and parsed (for its keys). */
  body?: { raw: string; value: unknown };
}

/** The `Prefer` header's preferences this API honours (PostgREST's, but `tx` and `params`). */
export interface Preferences {
  return: ReturnPreference;
  count?: CountPreference;
  resolution?: 'merge-duplicates' | 'ignore-duplicates';
  missingDefault: boolean;
  /** `handling=` as given: `strict` refuses preferences it cannot honour, and makes `max-affected` apply. */
  handling?: 'strict' | 'lenient';
  /** `timezone=`: one of PostgreSQL's `pg_timezone_names`, the transaction's `TimeZone`. */
  timezone?: string;
  /** `max-affected=`: at most this many rows written or answered by a PATCH, DELETE or rpc, under `handling=strict` only. */
  maxAffected?: number;
}

/** The raw request the route hands over. */
export interface RawRequest {
  method: string;
  target: string;
  rpc: boolean;
  /** The query string without `?`. */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body text, when the method carries one. */
  body?: string;
  /** How the body is written when it is not JSON: `Content-Type: text/csv` or `application/x-www-form-urlencoded`. */
  bodyType?: 'csv' | 'form';
  /** The time zone names a `timezone` preference may take: given when the `Prefer` header names one. */
  timeZones?: ReadonlySet<string>;
}

const RESERVED = new Set(['select', 'order', 'limit', 'offset', 'on_conflict', 'columns', 'apikey']);

function header(raw: RawRequest, name: string): string | undefined {
  const value = raw.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function modifiersAt(map: Map<string, Modifiers>, path: string): Modifiers {
  let m = map.get(path);
  if (!m) map.set(path, (m = { where: [], order: [] }));
  return m;
}

function nonNegativeInteger(name: string, text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw invalidFilter(`${name}=${text}: expected a non-negative integer`);
  return Number(text);
}

export function parsePrefer(text: string | undefined, timeZones?: ReadonlySet<string>): Preferences {
  const prefer: Preferences = { return: 'minimal', missingDefault: false };
  let invalid: string[] | undefined;
  let maxAffected: number | undefined;
  for (const token of (text ?? '').split(',').map((t) => t.trim()).filter(Boolean)) {
    const [key, value] = token.split('=').map((s) => s.trim());
    if (key === 'return' && (value === 'minimal' || value === 'representation' || value === 'headers-only')) prefer.return = value;
    else if (key === 'count' && (value === 'exact' || value === 'planned' || value === 'estimated')) prefer.count = value;
    else if (key === 'resolution' && (value === 'merge-duplicates' || value === 'ignore-duplicates')) prefer.resolution = value;
    else if (key === 'missing' && value === 'default') prefer.missingDefault = true;
    else if (key === 'missing' && value === 'null') continue;
    else if (key === 'handling' && (value === 'strict' || value === 'lenient')) prefer.handling = value;
    // A time zone PostgreSQL does not list is not applied (PostgREST answers in the default zone and says nothing).
    else if (key === 'timezone' && value !== undefined && timeZones?.has(value)) prefer.timezone = value;
    else if (key === 'max-affected' && value !== undefined && /^\d{1,15}$/.test(value)) maxAffected = Number(value);
    // Anything else (unknown, or not honoured here: tx, as PostgREST's default db-tx-end refuses it) is ignored, as PostgREST ignores it by default…
    else (invalid ??= []).push(token);
  }
  // …unless the client asked to be told (PostgREST's PGRST122): it must not believe a preference it relies on was applied.
  if (prefer.handling === 'strict' && invalid) throw invalidRequest('Invalid preferences given with handling=strict', `Invalid preferences: ${invalid.join(', ')}`);
  // As in PostgREST, max-affected binds only a client that asked for strict handling.
  if (prefer.handling === 'strict' && maxAffected !== undefined) prefer.maxAffected = maxAffected;
  return prefer;
}

/**
 * Picks the answer's media type from `Accept`, the first range served; 406
 * when none is. PostgREST's `vnd.pgrst.object` and `vnd.pgrst.array` types
 * take `nulls=stripped` (postgrest-js's `stripNulls()`).
 */
export function parseAccept(accept: string | undefined): { media: MediaType; stripNulls: boolean } {
  if (!accept || accept.trim() === '') return { media: 'json', stripNulls: false };
  for (const range of accept.split(',')) {
    const [typeText, ...parameters] = range.split(';');
    const type = typeText!.trim().toLowerCase();
    const stripNulls = parameters.some((parameter) => parameter.replace(/\s/g, '').toLowerCase() === 'nulls=stripped');
    if (type === 'application/vnd.pgrst.object+json' || type === 'application/vnd.pgrst.object') return { media: 'object', stripNulls };
    if (type === 'application/vnd.pgrst.array+json' || type === 'application/vnd.pgrst.array') return { media: 'json', stripNulls };
    if (type === 'application/json' || type === '*/*' || type === 'application/*') return { media: 'json', stripNulls: false };
    if (type === 'text/csv') return { media: 'csv', stripNulls: false };
  }
  throw notAcceptable(accept);
}

/** `Range: 0-9` (items) ⇒ offset and limit; a header that does not read as one is ignored, as PostgREST ignores it. */
function parseRange(text: string | undefined, modifiers: Modifiers): void {
  if (!text) return;
  const match = /^(?:items=)?\s*(\d+)-(\d*)\s*$/.exec(text);
  if (!match) return;
  const from = Number(match[1]);
  const to = match[2] === '' ? undefined : Number(match[2]);
  if (to !== undefined && to < from) throw new ApiError(416, 'range_not_satisfiable', `invalid Range header "${text}"`);
  // Query parameters narrow the header's range, as in PostgREST.
  modifiers.offset ??= from;
  if (to !== undefined) modifiers.limit = Math.min(modifiers.limit ?? Infinity, to - from + 1);
}

/**
 * A CSV body as PostgREST reads one (bulk inserts): a header line of column
 * names, then one line per row, every value a string for PostgreSQL to read
 * in its column's type; an empty field is the empty string, and `NULL`
 * unquoted is null (`"NULL"` quoted stays the word).
 */
function csvRows(text: string): Array<Record<string, string | null>> {
  let lines: Array<Array<string | null>>;
  try {
    lines = parseCsv(text, { cast: (value, context) => (value === 'NULL' && !context.quoting ? null : value), bom: true }) as Array<Array<string | null>>;
  } catch (error) {
    throw invalidRequest('the CSV body could not be read', { reason: (error as Error).message }, 'send a header line of column names, then one line per row, each with as many fields');
  }
  const [names, ...rows] = lines;
  if (!names) throw invalidRequest('the CSV body has no header line', null, 'send a header line of column names first');
  const seen = new Set<string>();
  for (const name of names) {
    if (name === null || name === '' || seen.has(name)) throw invalidRequest('the CSV header must name each column once', { header: names });
    seen.add(name);
  }
  return rows.map((fields) => Object.fromEntries(names.map((name, i) => [name!, fields[i] ?? null])));
}

/**
 * A form body as PostgREST reads one: one object whose values are the
 * fields' texts, for PostgreSQL to read in each column's or argument's type.
 * A name given twice is refused rather than one of its values dropped.
 */
function formObject(text: string): Record<string, string> {
  // No prototype: a field named `__proto__` is one more field.
  const fields: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(text)) {
    if (name in fields) throw invalidRequest(`the form body gives "${name}" twice`, null, 'send each field once');
    fields[name] = value;
  }
  return fields;
}

function parseBody(raw: RawRequest, action: Action): ApiRequest['body'] {
  if (raw.bodyType === 'form' && raw.body !== undefined && raw.body.trim() !== '') {
    const value = formObject(raw.body);
    return { raw: JSON.stringify(value), value };
  }
  if (raw.bodyType === 'csv') {
    if (action !== 'insert') throw new ApiError(415, 'unsupported_media_type', 'a text/csv body is read by POST to a table only', null, 'send application/json');
    if (raw.body === undefined || raw.body.trim() === '') throw invalidRequest('a CSV body is required');
    const value = csvRows(raw.body);
    return { raw: JSON.stringify(value), value };
  }
  if (raw.body === undefined || raw.body.trim() === '') {
    if (action === 'insert' || action === 'upsert' || action === 'update') throw invalidJson('a JSON body is required');
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.body);
  } catch {
    throw invalidJson();
  }
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (action === 'insert' && !(isObject(value) || (Array.isArray(value) && value.every(isObject)))) {
    throw invalidJson('the body must be a JSON object or an array of objects');
  }
  if ((action === 'update' || action === 'upsert' || action === 'rpc') && !isObject(value)) throw invalidJson('the body must be a JSON object');
  return { raw: raw.body, value };
}

/** Splits the query string the way PostgREST reads it: form encoding, so `+` is a space (a plus comes as %2B). */
function queryPairs(query: string): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? '' : part.slice(eq + 1);
    let pair: [string, string];
    try {
      pair = [decodeURIComponent(key.replace(/\+/g, ' ')), decodeURIComponent(value.replace(/\+/g, ' '))];
    } catch {
      throw invalidRequest('the query string is not valid percent-encoding');
    }
    // PostgreSQL's text holds no NUL, and a name would carry it into the statement's own text (an alias, a JSON path's key).
    if (pair[0].includes('\0') || pair[1].includes('\0')) throw invalidRequest('the query string holds a NUL character (%00)', null, 'PostgreSQL text cannot hold one');
    pairs.push(pair);
  }
  return pairs;
}

/** `columns=`/`on_conflict=`: names split at commas outside double quotes, each unquoted. */
function namesOf(text: string): string[] {
  return splitOutsideQuotes(text, ',').map((name) => fieldName(name.trim())).filter(Boolean);
}

const TABLE_ACTIONS: Partial<Record<string, Action>> = { GET: 'read', HEAD: 'read', POST: 'insert', PATCH: 'update', PUT: 'upsert', DELETE: 'delete' };
const RPC_ACTIONS: Partial<Record<string, Action>> = { GET: 'rpc', HEAD: 'rpc', POST: 'rpc' };

/** What a method does to its target; the root (`/rest/v1/`, no table) is read by its own route only, as in PostgREST. */
function actionOf(raw: RawRequest): Action {
  const method = raw.method.toUpperCase();
  const action = raw.rpc ? RPC_ACTIONS[method] : raw.target === '' ? undefined : TABLE_ACTIONS[method];
  if (!action) throw new ApiError(405, 'method_not_allowed', `${method} is not allowed here`);
  return action;
}

/** Parses one data request. Throws the API error for anything malformed. */
export function parseRequest(raw: RawRequest): ApiRequest {
  const action = actionOf(raw);
  const modifiers = new Map<string, Modifiers>([['', { where: [], order: [] }]]);
  const accepted = parseAccept(header(raw, 'accept'));
  const request: ApiRequest = {
    action,
    target: raw.target,
    headOnly: raw.method.toUpperCase() === 'HEAD',
    select: [{ kind: 'star' }],
    modifiers,
    rpcQuery: [],
    prefer: parsePrefer(header(raw, 'prefer'), raw.timeZones),
    accept: accepted.media,
    stripNulls: accepted.stripNulls,
  };
  const rpcGet = action === 'rpc' && raw.method.toUpperCase() !== 'POST';
  // Filters may repeat (they AND); a parameter that takes one value may not, rather than the last one silently winning.
  const single = new Set<string>();
  for (const [key, value] of queryPairs(raw.query)) {
    // `embedding.column`, each part bare or double-quoted (`"a.b"=eq.1`, as PostgREST's pFieldName).
    const segments = splitOutsideQuotes(key, '.');
    const tail = segments[segments.length - 1]!;
    if (key === 'select' || key === 'columns' || key === 'on_conflict' || tail === 'limit' || tail === 'offset' || tail === 'order') {
      if (single.has(key)) throw invalidFilter(`${key} given twice`);
      single.add(key);
    }
    if (key === 'select') {
      request.select = parseSelect(value);
      continue;
    }
    if (key === 'apikey') continue;
    if (key === 'columns') {
      request.columns = namesOf(value);
      continue;
    }
    if (key === 'on_conflict') {
      request.onConflict = namesOf(value);
      continue;
    }
    const negatedLogic = segments.length >= 2 && segments[segments.length - 2] === 'not' && (tail === 'or' || tail === 'and');
    const path = segments.slice(0, negatedLogic ? -2 : -1).map(fieldName).reduce(embedPath, '');
    if (tail === 'order' || tail === 'limit' || tail === 'offset' || tail === 'or' || tail === 'and') {
      const m = modifiersAt(modifiers, path);
      if (tail === 'order') m.order = parseOrder(value);
      else if (tail === 'limit') m.limit = nonNegativeInteger(key, value);
      else if (tail === 'offset') m.offset = nonNegativeInteger(key, value);
      else m.where.push(parseLogic(tail, negatedLogic, value));
      continue;
    }
    if (rpcGet && segments.length === 1) {
      request.rpcQuery.push([key, value]);
      continue;
    }
    if (RESERVED.has(key) || tail === '') throw invalidFilter(`"${key}" is not a valid filter`);
    modifiersAt(modifiers, path).where.push(parseFilter(tail, value));
  }
  // As PostgREST (ApiRequest.getRanges, after RFC 9110): the Range header is read on GET only, so it never narrows a write.
  if (raw.method.toUpperCase() === 'GET') parseRange(header(raw, 'range'), modifiersAt(modifiers, ''));
  // A PUT writes the one row its key filters name: a page of it means nothing (PostgREST's PutLimitNotAllowedError).
  const root = modifiers.get('')!;
  if (action === 'upsert' && (root.limit !== undefined || root.offset !== undefined)) throw invalidRequest('limit/offset querystring parameters are not allowed for PUT');
  request.body = action === 'read' || action === 'delete' ? undefined : rpcGet ? undefined : parseBody(raw, action);
  return request;
}
