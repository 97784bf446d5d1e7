/**
 * PostgREST's transaction-scoped settings: what a request tells SQL about
 * itself (`request.method`, `request.path`, `request.headers`,
 * `request.cookies`, set with the caller's role and claims by execute.ts's
 * setup). Pure.
 */
import type { IncomingHttpHeaders } from 'node:http';

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
