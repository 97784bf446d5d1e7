/**
 * PostgREST's transaction-scoped settings: what a request tells SQL about
 * itself (`request.method`, `request.path`, `request.headers`,
 * `request.cookies`, set with the caller's role and claims by execute.ts's
 * setup), and what SQL tells the answer (`response.status`,
 * `response.headers`, read back in the statement's own row, sql.ts). Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { FRAMING, HEADER_NAME, HEADER_VALUE } from './db-errors';
import { invalidResponseHeaders, invalidResponseStatus } from './rest-errors';

/** The `request.*` settings of one request, each the text `set_config` takes. */
export interface RequestSettings {
  method: string;
  /** The path under the API's root, as sent (`/posts`, `/rpc/my_fn`), as PostgREST's (Supabase's gateway strips `/rest/v1`). */
  path: string;
  /** A JSON object of the headers but `Cookie`, by lower-case name. */
  headers: string;
  /** A JSON object of the `Cookie` header's cookies. */
  cookies: string;
}

/**
 * The headers as PostgREST passes them, `Cookie` left out (it is
 * `request.cookies`). Authorization and apikey stay: they are the caller's
 * own, and policies may want them. The gateway adds only the standard
 * `X-Forwarded-*`, which name the client and the public host.
 */
function headersJson(headers: IncomingHttpHeaders): string {
  // The common request: node's object as it is, one stringify.
  if (headers.cookie === undefined && headers['set-cookie'] === undefined) return JSON.stringify(headers);
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'cookie' || value === undefined) continue;
    kept[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return JSON.stringify(kept);
}

/** `a=1; b=2` as `{"a":"1","b":"2"}`, values as sent (not decoded); a name given twice keeps its last value, as PostgREST's. */
export function cookiesJson(header: string | undefined): string {
  if (header === undefined || header === '') return '{}';
  // No prototype: a cookie named `__proto__` is one more cookie.
  const cookies: Record<string, string> = Object.create(null);
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    const name = (at < 0 ? pair : pair.slice(0, at)).trim();
    if (name !== '') cookies[name] = at < 0 ? '' : pair.slice(at + 1).trim();
  }
  return JSON.stringify(cookies);
}

/** The `request.*` settings of a request whose path under the API's root is `path`. */
export function requestSettingsOf(method: string, path: string, headers: IncomingHttpHeaders): RequestSettings {
  return { method, path, headers: headersJson(headers), cookies: cookiesJson(headers.cookie) };
}

/** What the statement read back of `response.*` at its end (null: not set, or set to ''). */
export interface ResponseSettings {
  response_status?: string | null;
  response_headers?: string | null;
}

/**
 * `response.status` as the answer's status: digits only, 200 to 599 (an
 * `raise sqlstate 'PGRST'` answer's range), else 500 as PostgREST's
 * PGRST112.
 */
function statusOf(text: string): number {
  const status = /^\d{3}$/.test(text.trim()) ? Number(text) : NaN;
  if (!(status >= 200 && status <= 599)) throw invalidResponseStatus(text);
  return status;
}

/**
 * `response.headers`: a JSON array of objects of one header each,
 * `[{"Set-Cookie":"a=1"},{"Set-Cookie":"b=2"}]`, else 500 as PostgREST's
 * PGRST111. A name HTTP or node would refuse, or a value it cannot carry,
 * is of the wrong shape too.
 */
function headersOf(text: string): Array<[string, string]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidResponseHeaders(text);
  }
  if (!Array.isArray(parsed)) throw invalidResponseHeaders(text);
  return parsed.map((entry: unknown) => {
    const pairs = typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? Object.entries(entry) : [];
    const [name, value] = pairs[0] ?? [];
    if (pairs.length !== 1 || typeof value !== 'string' || !HEADER_NAME.test(name!) || !HEADER_VALUE.test(value)) throw invalidResponseHeaders(text);
    return [name!.toLowerCase(), value];
  });
}

/**
 * The answer's status and headers after what SQL set: `response.status`
 * replaces the status, and `response.headers` replaces our header of the
 * same name (`Content-Type`, `Location`, …, as PostgREST lets them) or adds
 * it; a name given more than once is sent as many times. How the body is
 * framed stays ours (Content-Length, Transfer-Encoding, Connection).
 */
export function withResponseSettings<A extends { status: number; headers: Record<string, string | string[]> }>(answer: A, row: ResponseSettings): A {
  const status = row.response_status;
  const headers = row.response_headers;
  if ((status === null || status === undefined) && (headers === null || headers === undefined)) return answer;
  const out = { ...answer, headers: { ...answer.headers } };
  if (status !== null && status !== undefined) out.status = statusOf(status);
  if (headers !== null && headers !== undefined) {
    const set = new Map<string, string[]>();
    for (const [name, value] of headersOf(headers)) {
      if (FRAMING.has(name)) continue;
      const values = set.get(name);
      if (values) values.push(value);
      else set.set(name, [value]);
    }
    for (const [name, values] of set) out.headers[name] = values.length === 1 ? values[0]! : values;
  }
  return out;
}
