/**
 * Validation's 400: each offending path with a message a client can show,
 * a pattern's meaning rather than the pattern itself.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors';
import { validate } from '../src/validate';
import { UpdateAuthSettingsBody, EndUserSignupBody } from '../src/auth';
import { EventsQuery, TeamRole } from '../src/api';
import { CreateTableBody } from '../src/schema';
import { Type } from '@sinclair/typebox';

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('validate', () => {
  it('answers the value it was given when it matches', () => {
    const body = { email: 'ada@example.com', password: 'correct horse' };
    expect(validate(EndUserSignupBody, body)).toBe(body);
  });

  it('says what a pattern means, never the pattern', () => {
    const nul = refusal(() => validate(EndUserSignupBody, { email: 'ada@example.com', password: 'a\u0000b' }));
    expect(nul).toMatchObject({ status: 400, code: 'invalid_request', message: 'invalid body: /password must not contain a NUL character' });
    const url = refusal(() => validate(UpdateAuthSettingsBody, { siteUrl: 'ftp://example.com' }));
    expect(url.message).toBe('invalid body: /siteUrl must be an http:// or https:// URL without spaces');
    const limit = refusal(() => validate(EventsQuery, { limit: 'ten' }, 'query'));
    expect(limit.message).toBe('invalid query: /limit must be a whole number of at most 4 digits');
    for (const error of [nul, url, limit]) expect(JSON.stringify(error.details)).not.toMatch(/\^|\\x00|\\d/);
  });

  it('names what a choice takes, not "Expected union value"', () => {
    const access = refusal(() => validate(CreateTableBody, { name: 'todos', access: 'public_read', columns: [] }));
    expect(access.message).toBe('invalid body: /access must be one of "public-read", "authenticated", "owner", "private" or "custom"');
    expect(access.details).toEqual([{ path: '/access', message: 'must be one of "public-read", "authenticated", "owner", "private" or "custom"' }]);
    const role = refusal(() => validate(Type.Object({ role: TeamRole }), { role: 7 }));
    expect(role.message).toBe('invalid body: /role must be one of "owner", "admin" or "member"');
    const nullable = refusal(() => validate(Type.Object({ kind: Type.Union([Type.Literal('a'), Type.Null()]) }), { kind: 'b' }));
    expect(nullable.message).toBe('invalid body: /kind must be one of "a" or null');
  });

  it('keeps the other messages, such as a length', () => {
    const long = refusal(() => validate(EndUserSignupBody, { email: 'ada@example.com', password: 'x'.repeat(2000) }));
    expect(long.message).toBe('invalid body: /password Expected string length less or equal to 1024');
  });
});
