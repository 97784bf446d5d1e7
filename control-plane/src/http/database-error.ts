/**
 * The one place a PostgreSQL error becomes an API error: its SQLSTATE as
 * `code`, PostgreSQL's own message, detail, hint and position; never our SQL.
 */
import { ApiError } from '@baseplane/contracts';

interface PgError {
  code?: string;
  message?: string;
  detail?: string;
  hint?: string;
  position?: string;
  table?: string;
  column?: string;
  constraint?: string;
}

/** Status for a SQLSTATE as PostgREST maps it; the SQL console answers 400 for all of them. */
export function statusOfSqlState(code: string): number {
  if (code === '23505' || code === '23503') return 409;
  if (code === '42501') return 403;
  if (code === '42P01' || code === '42883') return 404;
  if (code === '57014') return 408;
  if (code.startsWith('08') || code === '57P01' || code === '57P03') return 503;
  return 400;
}

export function isDatabaseError(error: unknown): error is PgError & { code: string } {
  return typeof (error as PgError)?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as PgError).code!);
}

/** Maps a database error; anything else is passed back unchanged for the caller to rethrow. */
export function toApiError(error: unknown, status?: number): unknown {
  if (error instanceof ApiError || !isDatabaseError(error)) return error;
  return new ApiError(
    status ?? statusOfSqlState(error.code),
    error.code,
    error.message ?? 'database error',
    {
      detail: error.detail ?? null,
      position: error.position ? Number(error.position) : null,
      table: error.table ?? null,
      column: error.column ?? null,
      constraint: error.constraint ?? null,
    },
    error.hint ?? null,
  );
}
