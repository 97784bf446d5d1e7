/**
 * Database errors become answers as PostgREST maps them: its SQLSTATE table
 * decides the status, PostgreSQL's message, detail and hint pass through,
 * `PTxyz` chooses its own status, and what is not an error PostgreSQL raised
 * (a lost connection, a bug of ours) is left to the caller.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { databaseError } from '../src/rest/db-errors';

/** An ErrorResponse as pg hands it over. */
function raised(code: string, message = `failure ${code}`, more: { detail?: string; hint?: string } = {}): pg.DatabaseError {
  const error = new pg.DatabaseError(message, 0, 'error');
  error.code = code;
  if (more.detail !== undefined) error.detail = more.detail;
  if (more.hint !== undefined) error.hint = more.hint;
  return error;
}

describe('database errors', () => {
  const table: Array<[string, number, string?]> = [
    ['23505', 409], ['23503', 409], ['23502', 400], ['23514', 400], ['23P01', 400],
    ['22P02', 400], ['2201B', 400], ['42703', 400], ['42P01', 404], ['42883', 404], ['25006', 405],
    ['P0001', 400], ['U0001', 400], ['ABCDE', 400], ['0A000', 400],
    ['0LP01', 403], ['28000', 403], ['08006', 503], ['53300', 503], ['57P01', 503], ['57014', 504],
    ['PT402', 402], ['PT418', 418], ['PT503', 503], ['PT200', 200],
    ['21000', 400, 'UPDATE requires a WHERE clause'], ['22023', 401, 'role "ghost" does not exist'], ['22023', 400, 'invalid value'],
    ['55000', 400, 'cannot insert into view "joined"'], ['55000', 400, 'cannot update view "joined"'], ['55000', 400, 'cannot delete from view "joined"'],
  ];
  for (const [code, status, message] of table) {
    it(`${code}${message ? ` (${message})` : ''} answers ${status} with PostgreSQL's words`, () => {
      const answer = databaseError(raised(code, message ?? `failure ${code}`, { detail: 'd', hint: 'h' }), 'authenticated');
      expect(answer).toMatchObject({ status, code, message: message ?? `failure ${code}`, details: 'd', hint: 'h' });
    });
  }

  it('answers 42501 with 401 for anon and 403 for a user', () => {
    expect(databaseError(raised('42501'), 'anon')?.status).toBe(401);
    expect(databaseError(raised('42501'), 'authenticated')?.status).toBe(403);
  });

  it('keeps the words of an internal failure to itself: 500 with its SQLSTATE only', () => {
    for (const code of ['XX000', '58P01', '21000', '40001', '42P17', '42601', '42P18', 'PT999', 'PTABC', 'PT100', 'P0002']) {
      const answer = databaseError(raised(code, 'could not open file "base/16384/2619": secret'), 'service_role');
      expect(answer?.status, code).toBe(500);
      expect(answer?.code).toBe(code);
      if (!code.startsWith('P')) expect(answer?.message, code).toBe('the database failed to answer this request');
    }
    // Raised on purpose by a function (PL/pgSQL's own, or a chosen PT5xx): the caller reads why.
    expect(databaseError(raised('P0002', 'query returned no rows'), 'anon')?.message).toBe('query returned no rows');
    expect(databaseError(raised('PT500', 'try later'), 'anon')).toMatchObject({ status: 500, message: 'try later' });
    // 55000 is the caller's only for a write into a view PostgreSQL cannot update.
    expect(databaseError(raised('55000', 'currval of sequence "s" is not yet defined in this session'), 'anon')?.status).toBe(500);
  });

  it('leaves what PostgreSQL did not raise to the caller, even with a code that looks like a SQLSTATE', () => {
    expect(databaseError(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }), 'anon')).toBeUndefined();
    expect(databaseError(new Error('Connection terminated unexpectedly'), 'anon')).toBeUndefined();
    expect(databaseError(new TypeError('x is undefined'), 'anon')).toBeUndefined();
  });
});
