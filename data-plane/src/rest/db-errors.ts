/**
 * The one place database errors of the data API become answers, mapped as
 * PostgREST maps them (Error/PgError/ResultError.hs): the SQLSTATE as `code`,
 * PostgreSQL's message, detail and hint, and never our statement, its
 * position or internal query. Only errors PostgreSQL raised with a SQLSTATE
 * are mapped; anything else (a lost connection, our own failure) is not the
 * caller's business and is answered by the caller of this module.
 */
import pg from 'pg';
import { ApiError } from '@baseplane/contracts';
import type { ApiRole } from './execute';

/**
 * HTTP status of a SQLSTATE, after PostgREST's table, in its order. Where we
 * differ it is said: our own statements being wrong (42601, 42P18) and a
 * statement timeout (57014) are not the caller's error.
 */
function statusOf(code: string, message: string, role: ApiRole): number {
  const prefix = code.slice(0, 2);
  if (prefix === '08') return 503; // connection exception
  if (prefix === '09') return 500; // triggered action exception
  if (prefix === '0L' || prefix === '0P') return 403; // invalid grantor, invalid role specification
  if (code === '23503' || code === '23505') return 409; // foreign key, unique violation
  if (code === '25006') return 405; // read-only transaction (a GET calling a volatile function)
  if (code === '21000') return message.endsWith('requires a WHERE clause') ? 400 : 500; // pg-safeupdate is the caller's; a subquery's cardinality is not
  if (code === '22023') return message.startsWith('role') && message.endsWith('does not exist') ? 401 : 400;
  if (prefix === '25' || prefix === '2D' || prefix === '38' || prefix === '39' || prefix === '3B' || prefix === '40') return 500;
  if (prefix === '28') return 403; // invalid authorization specification
  if (code === '53400') return 500; // configuration limit exceeded
  if (prefix === '53') return 503; // insufficient resources
  if (code === '57014') return 504; // statement timeout (PostgREST: 500)
  if (code === '57P01') return 503; // administrator shutdown
  if (code === '54001') return 400; // statement too complex: a JSON value nested deeper than PostgreSQL parses (PostgREST: 500)
  // A write into a view PostgreSQL cannot update (a join, a union, an aggregate, without INSTEAD OF triggers) is the
  // caller's: its message says why (PostgREST: 500).
  if (code === '55000' && /^cannot (insert into|update|delete from|merge into) view "/.test(message)) return 400;
  if (prefix === '54' || prefix === '55' || prefix === '57' || prefix === '58' || prefix === 'F0' || prefix === 'HV' || prefix === 'XX') return 500;
  if (code === 'P0001') return 400; // raise exception in user code
  if (prefix === 'P0') return 500; // other PL/pgSQL errors
  if (code === '42883') return 404; // undefined function
  if (code === '42P01') return 404; // undefined table
  if (code === '42P17') return 500; // infinite recursion
  if (code === '42501') return role === 'anon' ? 401 : 403;
  if (code === '42601' || code === '42P18') return 500; // our statement is wrong (PostgREST: 400)
  if (prefix === 'PT') return ptStatus(code);
  return 400; // any other SQLSTATE, a user-defined one included
}

/** `raise sqlstate 'PT402'` answers 402: PostgREST's convention for a status chosen by SQL; one no response can carry is 500. */
function ptStatus(code: string): number {
  return /^PT[2-5]\d\d$/.test(code) ? Number(code.slice(2)) : 500;
}

/** SQLSTATEs a function raises on purpose: their message is meant for the caller even with a 5xx status. */
const raisedByUser = (code: string) => code.startsWith('PT') || code.startsWith('P0');

/** An answer a function chose whole with `raise sqlstate 'PGRST'`: its status, body and headers. */
export class RaisedAnswer extends ApiError {
  constructor(status: number, code: string, message: string, details: string | null, hint: string | null, readonly headers: Record<string, string>) {
    super(status, code, message, details, hint);
  }
}

/** Headers that frame a body, which stays ours to frame whatever SQL asks (tx-settings.ts too). */
export const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection']);
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/; // what node lets a header value hold

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const textOrNull = (value: unknown) => value === undefined || value === null || typeof value === 'string';
const parsed = (text: string | undefined): unknown => {
  try {
    return JSON.parse(text ?? '');
  } catch {
    return undefined;
  }
};

/**
 * PostgREST's `raise sqlstate 'PGRST' using message = '{"code":…,"message":…,
 * "details":…,"hint":…}', detail = '{"status":402,"headers":{…}}'`: the
 * function picks the answer's status (200-599), headers and body. A message
 * or detail not of that shape is 500 (PostgREST's PGRST121), naming which.
 */
function raisedAnswer(error: pg.DatabaseError): ApiError {
  const body = parsed(error.message);
  const detail = parsed(error.detail);
  const unreadable = (part: 'MESSAGE' | 'DETAIL', text: string | undefined) =>
    new ApiError(500, 'invalid_raise', "could not read the JSON of a RAISE SQLSTATE 'PGRST'", `${part} is not of the shape the answer needs: ${text ?? '(none)'}`,
      `raise sqlstate 'PGRST' using message = '{"code":"…","message":"…","details":null,"hint":null}', detail = '{"status":400,"headers":{}}'`);
  if (!isObject(body) || typeof body.code !== 'string' || typeof body.message !== 'string' || !textOrNull(body.details) || !textOrNull(body.hint)) {
    return unreadable('MESSAGE', error.message);
  }
  const headers = isObject(detail) ? detail.headers : undefined;
  if (!isObject(detail) || !Number.isInteger(detail.status) || (detail.status as number) < 200 || (detail.status as number) > 599 || !isObject(headers)
    || !Object.entries(headers).every(([name, value]) => HEADER_NAME.test(name) && typeof value === 'string' && HEADER_VALUE.test(value))) {
    return unreadable('DETAIL', error.detail);
  }
  // The body is the error's JSON: how it is framed stays ours.
  const kept = Object.entries(headers as Record<string, string>).filter(([name]) => name.toLowerCase() !== 'content-type' && !FRAMING.has(name.toLowerCase()));
  return new RaisedAnswer(detail.status as number, body.code, body.message, (body.details as string | undefined) ?? null, (body.hint as string | undefined) ?? null, Object.fromEntries(kept));
}

/** Maps an error PostgreSQL raised to the answer; `undefined` for anything else. */
export function databaseError(error: unknown, role: ApiRole): ApiError | undefined {
  if (!(error instanceof pg.DatabaseError) || typeof error.code !== 'string') return undefined;
  if (error.code === 'PGRST') return raisedAnswer(error);
  if (!/^[0-9A-Z]{5}$/.test(error.code)) return undefined;
  const code = error.code;
  const message = error.message ?? 'database error';
  const status = statusOf(code, message, role);
  if (status >= 500 && status !== 503 && status !== 504 && !raisedByUser(code)) {
    return new ApiError(500, code, 'the database failed to answer this request');
  }
  return new ApiError(status, code, message, error.detail ?? null, error.hint ?? null);
}
