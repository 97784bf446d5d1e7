/**
 * The `{ data, error }` rule, in one place: every HTTP answer and every
 * network failure the client meets becomes a {@link Result} here, so no
 * method throws for either. `error` always has API.md's shape plus `status`.
 */

/** An error as every method resolves it: the answer's body, plus its HTTP status (0 when no answer came). */
export interface ClientError {
  /** A stable word (`invalid_credentials`), PostgreSQL's SQLSTATE (`23505`), or `network_error` when nothing answered. */
  code: string;
  message: string;
  details: unknown;
  hint: string | null;
  /** The HTTP status; 0 when the request got no answer or was never sent. */
  status: number;
}

/** What every method resolves to: check `error` before using `data`. */
export type Result<T> = { data: T; error: null } | { data: null; error: ClientError };

/** The fetch the client calls: the platform's, or one the caller passes in the options. */
export type Fetch = typeof fetch;

/** How an answer's body is read on success. */
export type BodyKind = 'json' | 'blob' | 'text';

/** One HTTP request: a JSON `body` is serialised; `FormData` and `Blob` go as they are. */
export interface RequestSpec {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Defaults to `json`; an empty answer (204) is `null` whatever the kind. */
  as?: BodyKind;
  /** What a success's JSON must be: null when it is that, else what is wrong (the answer becomes `invalid_response`). */
  expect?: (data: unknown) => string | null;
}

export const ok = <T>(data: T): Result<T> => ({ data, error: null });
export const failed = <T = never>(error: ClientError): Result<T> => ({ data: null, error });

/** An error the client decides itself, before or without a request (status 0). */
export function clientError(code: string, message: string, hint: string | null = null): ClientError {
  return { code, message, details: null, hint, status: 0 };
}

/** The request never got an answer: refused, unreachable, reset, aborted. */
export function networkError(cause: unknown): ClientError {
  const reason = cause instanceof Error && cause.cause instanceof Error ? `${cause.message}: ${cause.cause.message}` : messageOf(cause);
  return { code: 'network_error', message: `the request got no answer (${reason})`, details: null, hint: 'check the base URL and the network, then try again', status: 0 };
}

/** An error answer: its flat body when it has one, else a code naming the status. */
export function httpError(status: number, body: unknown): ClientError {
  if (isErrorBody(body)) {
    return { code: String(body.code), message: body.message, details: body.details ?? null, hint: body.hint ?? null, status };
  }
  const text = typeof body === 'string' ? body.slice(0, 500) : '';
  return { code: `http_${status}`, message: text || `the server answered ${status}`, details: null, hint: null, status };
}

/**
 * postgrest-js's answer under the same rule: its `error` (the body as the
 * server sent it, or its own record of a failed fetch at status 0) becomes a
 * {@link ClientError}; `data`, `count` and `status` stay as they are.
 */
export function withClientError<A extends { error: unknown; status: number }>(answer: A): A {
  if (answer.error === null || answer.error === undefined) return answer;
  return { ...answer, error: answer.status === 0 ? networkError(answer.error) : builderError(answer.status, answer.error) };
}

/**
 * postgrest-js records a body that is not JSON as `{ message: body }` (on a
 * success too), and a `maybeSingle()` that found several rows under its own
 * code: both are put in the terms the rest of the client uses.
 */
function builderError(status: number, error: unknown): ClientError {
  const record = error as { code?: unknown; message?: unknown };
  if (record.code === undefined && typeof record.message === 'string') {
    if (status < 400) return { ...clientError('invalid_response', `the server answered ${status} with a body that is not JSON`), status };
    return httpError(status, record.message);
  }
  if (record.code === 'PGRST116' && isErrorBody(error)) return { ...httpError(status, error), code: 'not_single_object' };
  return httpError(status, error);
}

const messageOf = (cause: unknown) =>
  typeof cause === 'object' && cause !== null && typeof (cause as { message?: unknown }).message === 'string' ? (cause as { message: string }).message : String(cause);

function isErrorBody(body: unknown): body is { code: unknown; message: string; details?: unknown; hint?: string | null } {
  return typeof body === 'object' && body !== null && 'code' in body && typeof (body as { message?: unknown }).message === 'string';
}

/** Performs one request and resolves to its Result; never rejects. */
export async function request<T>(fetchImpl: Fetch, spec: RequestSpec): Promise<Result<T>> {
  const kind = spec.as ?? 'json';
  // Serialised apart from the fetch: a body JSON cannot encode (a BigInt, a cycle) is the caller's mistake, and nothing is sent.
  let sent: BodyInit | undefined;
  try {
    sent = bodyOf(spec.body);
  } catch (cause) {
    return failed(clientError('invalid_request', `the request body cannot be sent as JSON (${messageOf(cause)})`));
  }
  let response: Response;
  let body: Blob | string;
  try {
    response = await fetchImpl(spec.url, { method: spec.method, headers: headersOf(spec), body: sent });
    // Read inside the same try: the connection may break while the body comes in.
    body = kind === 'blob' && response.ok ? await response.blob() : await response.text();
  } catch (cause) {
    return failed(networkError(cause));
  }
  if (!response.ok) return failed(httpError(response.status, parseMaybeJson(body as string)));
  return decode<T>(body, kind, response.status, spec.expect);
}

function headersOf(spec: RequestSpec): Record<string, string> {
  const json = spec.body !== undefined && !(spec.body instanceof FormData) && !(spec.body instanceof Blob);
  return json ? { 'content-type': 'application/json', ...spec.headers } : { ...spec.headers };
}

function bodyOf(body: unknown): BodyInit | undefined {
  if (body === undefined || body instanceof FormData || body instanceof Blob) return body;
  return JSON.stringify(body);
}

/** A success's body as asked; an empty answer is `null`, JSON that does not parse an error. */
function decode<T>(body: Blob | string, kind: BodyKind, status: number, expect?: (data: unknown) => string | null): Result<T> {
  const empty = status === 204 || body === '';
  if (kind !== 'json' && !empty) return ok(body as T);
  let data: unknown = null;
  if (!empty) {
    try {
      data = JSON.parse(body as string);
    } catch {
      return failed({ ...clientError('invalid_response', `the server answered ${status} with a body that is not JSON`), status });
    }
  }
  // A caller that will read fields of the answer (a session) is told here, not by a TypeError later.
  const wrong = expect?.(data) ?? null;
  if (wrong) return failed({ ...clientError('invalid_response', `the server answered ${status} with ${wrong}`), status });
  return ok(data as T);
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
