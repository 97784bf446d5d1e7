/**
 * How the management and storage parts reach the API: a base URL, the fetch
 * to use and the credentials of the moment, with paths and query strings
 * built one way. The answer goes through the result rule (result.ts).
 */
import { request, type BodyKind, type Fetch, type Result } from './result.js';

export interface Transport {
  baseUrl: string;
  fetch: Fetch;
  /** The credential headers to send now (they change as tokens refresh). */
  headers(): Promise<Record<string, string>>;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface CallOptions {
  query?: Query;
  body?: unknown;
  as?: BodyKind;
  headers?: Record<string, string>;
}

/** `path` is joined to the base URL; undefined query values are left out. */
export async function send<T>(transport: Transport, method: string, path: string, options: CallOptions = {}): Promise<Result<T>> {
  const headers = { ...(await transport.headers()), ...options.headers };
  const spec = { method, url: transport.baseUrl + path + queryString(options.query), headers, body: options.body };
  return request<T>(transport.fetch, options.as ? { ...spec, as: options.as } : spec);
}

function queryString(query: Query | undefined): string {
  const entries = Object.entries(query ?? {}).filter((entry): entry is [string, string | number | boolean] => entry[1] !== undefined);
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()}`;
}

/** One path segment, escaped (a table, bucket or id never splits the path). */
export const segment = (value: string) => encodeURIComponent(value);
