/**
 * The one place database errors of the data API become answers, mapped as
 * PostgREST maps them: the SQLSTATE as `code`, PostgreSQL's message, detail
 * and hint, and never our statement, its position or internal query.
 */
import { ApiError } from '@baseplane/contracts';
import type { ApiRole } from './execute';

interface PgError {
  code?: string;
  message?: string;
  detail?: string;
  hint?: string;
}

/** HTTP status of a SQLSTATE, after PostgREST's table. */
function statusOf(code: string, role: ApiRole): number {
  if (code === '42501') return role === 'anon' ? 401 : 403;
  if (code === '23505' || code === '23503' || code === '23P01') return 409;
  if (code === '42P01' || code === '42883') return 404;
  if (code === '25006') return 405; // read-only transaction (a GET calling a volatile function)
  if (code === '57014') return 504; // statement timeout
  if (code === '53300' || code === '53400' || code.startsWith('08')) return 503;
  if (code === '42601' || code === '42P18') return 500; // our statement is wrong: not the caller's business
  if (code === 'P0001') return 400; // raise exception in user code
  if (code.startsWith('22') || code.startsWith('23') || code === '42703' || code === '42804' || code === '42P02' || code === '2201B') return 400;
  if (code.startsWith('42')) return 400;
  return 500;
}

/** Maps an error thrown by pg to the answer; `undefined` when it is not a database error. */
export function databaseError(error: unknown, role: ApiRole): ApiError | undefined {
  const e = error as PgError;
  if (!e || typeof e.code !== 'string' || !/^[0-9A-Z]{5}$/.test(e.code)) return undefined;
  const status = statusOf(e.code, role);
  if (status >= 500 && status !== 503 && status !== 504) {
    return new ApiError(500, e.code, 'the database failed to answer this request');
  }
  return new ApiError(status, e.code, e.message ?? 'database error', e.detail ?? null, e.hint ?? null);
}
