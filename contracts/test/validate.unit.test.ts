/**
 * Validation's 400: each offending path with a message a client can show,
 * a pattern's meaning rather than the pattern itself.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors';
import { validate } from '../src/validate';
import { UpdateAuthSettingsBody, EndUserSignupBody } from '../src/auth';
import { EventsQuery } from '../src/api';

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

  it('keeps the other messages, such as a length', () => {
    const long = refusal(() => validate(EndUserSignupBody, { email: 'ada@example.com', password: 'x'.repeat(2000) }));
    expect(long.message).toBe('invalid body: /password Expected string length less or equal to 1024');
  });
});
