/**
 * The client's pure rules: how answers become `{ data, error }` (including
 * the odd ones the real stack never gives: a body that is not JSON, an HTML
 * error page), sessions and their expiry, the storage key, and social
 * login's two URL steps.
 */
import { describe, expect, it } from 'vitest';
import { httpError, networkError, request, withClientError } from '../src/result';
import { claimsOf, parseStoredSession, refreshMarginOf, sessionFrom } from '../src/auth/session';
import { projectStorageKeyOf, storageKeyOf } from '../src/auth/session-storage';
import { providerSignInUrl, readProviderCallback } from '../src/auth/provider-login';
import type { User } from '../src/types';

const user = { id: 'u1', email: 'a@example.com' } as User;
const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('the result rule', () => {
  it('keeps an error body’s fields and adds the status', () => {
    expect(httpError(409, { code: 'user_already_exists', message: 'taken', details: null, hint: 'sign in' })).toEqual({ code: 'user_already_exists', message: 'taken', details: null, hint: 'sign in', status: 409 });
    expect(httpError(502, '<html>bad gateway</html>')).toEqual({ code: 'http_502', message: '<html>bad gateway</html>', details: null, hint: null, status: 502 });
  });

  it('turns postgrest-js’s answers into the same shape', () => {
    const answer = { data: null, error: { code: '42501', message: 'denied', details: null, hint: null }, count: null, status: 401, statusText: '' };
    expect(withClientError(answer).error).toEqual({ code: '42501', message: 'denied', details: null, hint: null, status: 401 });
    const offline = withClientError({ data: null, error: { message: 'TypeError: fetch failed', details: '', hint: '', code: '' }, count: null, status: 0 });
    expect(offline.error).toMatchObject({ code: 'network_error', status: 0, message: expect.stringContaining('fetch failed') });
    const fine = { data: [1], error: null, count: null, status: 200 };
    expect(withClientError(fine)).toBe(fine);
  });

  it('puts postgrest-js’s records of a body that is not JSON, and of several rows for maybeSingle, in the client’s terms', () => {
    const answer = (status: number, error: object) => withClientError({ data: null, error, count: null, status, statusText: '' }).error;
    expect(answer(200, { message: '<html>hi</html>' })).toMatchObject({ code: 'invalid_response', status: 200 });
    expect(answer(502, { message: '<html>bad gateway</html>' })).toEqual({ code: 'http_502', message: '<html>bad gateway</html>', details: null, hint: null, status: 502 });
    expect(answer(406, { code: 'PGRST116', message: 'JSON object requested, multiple (or no) rows returned', details: 'Results contain 2 rows', hint: null })).toMatchObject({ code: 'not_single_object', status: 406 });
  });

  it('names the cause of a failed fetch', () => {
    const cause = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
    expect(networkError(cause).message).toContain('ECONNREFUSED');
  });

  it('resolves a fetch that throws, a success that is not JSON and an empty answer without throwing', async () => {
    expect((await request(() => Promise.reject(new TypeError('offline')), { method: 'GET', url: 'http://x/' })).error).toMatchObject({ code: 'network_error', status: 0 });
    expect((await request(async () => new Response('<html>'), { method: 'GET', url: 'http://x/' })).error).toMatchObject({ code: 'invalid_response', status: 200 });
    expect(await request(async () => new Response(null, { status: 204 }), { method: 'POST', url: 'http://x/' })).toEqual({ data: null, error: null });
  });

  it('refuses a body JSON cannot encode (a BigInt, a cycle) as invalid_request, without sending it', async () => {
    let sent = 0;
    const fetchImpl = async () => {
      sent += 1;
      return new Response('{}');
    };
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const body of [{ amount: 10n }, cyclic]) {
      const answer = await request(fetchImpl, { method: 'POST', url: 'http://x/', body });
      expect(answer).toEqual({ data: null, error: { code: 'invalid_request', message: expect.stringContaining('JSON'), details: null, hint: null, status: 0 } });
    }
    expect(sent).toBe(0);
  });
});

describe('sessions', () => {
  it('take their expiry from the token, else from expiresIn', () => {
    const session = sessionFrom({ accessToken: jwt({ exp: 2_000_000_000 }), refreshToken: 'r', expiresIn: 3600 }, user);
    expect(session).toMatchObject({ expiresAt: 2_000_000_000, tokenType: 'bearer', user });
    const opaque = sessionFrom({ accessToken: 'opaque', refreshToken: 'r', expiresIn: 60 }, user);
    expect(opaque.expiresAt).toBeCloseTo(Date.now() / 1000 + 60, -1);
  });

  it('read a token’s claims, and nothing from garbage', () => {
    expect(claimsOf(jwt({ ref: 'project-1', sub: 'u1' }))).toMatchObject({ ref: 'project-1', sub: 'u1' });
    expect(claimsOf('garbage')).toBeNull();
    expect(claimsOf('a.%%%.c')).toBeNull();
  });

  it('are refreshed a minute before expiry, or a quarter of a short life', () => {
    const session = (expiresIn: number) => sessionFrom({ accessToken: 'x', refreshToken: 'r', expiresIn }, user);
    expect(refreshMarginOf(session(3600))).toBe(60);
    expect(refreshMarginOf(session(60))).toBe(15);
    expect(refreshMarginOf(session(3600), 5)).toBe(5);
  });

  it('come back from storage only when whole', () => {
    const session = sessionFrom({ accessToken: 'x', refreshToken: 'r', expiresIn: 60 }, user);
    expect(parseStoredSession(JSON.stringify(session))).toEqual(session);
    expect(parseStoredSession('{"accessToken":"x"}')).toBeNull();
    expect(parseStoredSession('not json')).toBeNull();
    expect(parseStoredSession(null)).toBeNull();
  });

  it('are stored under a key of their own per base URL and project, whatever the anon key', () => {
    expect(projectStorageKeyOf('http://a', 'p1')).toMatch(/^baseplane\.auth\.p1\.[0-9a-f]{8}$/);
    expect(projectStorageKeyOf('http://a', 'p1')).toBe(projectStorageKeyOf('http://a', 'p1'));
    expect(projectStorageKeyOf('http://a', 'p1')).not.toBe(projectStorageKeyOf('http://a', 'p2'));
    expect(projectStorageKeyOf('http://a', 'p1')).not.toBe(projectStorageKeyOf('http://b', 'p1'));
  });

  it('are stored under a key of their own per base URL and anon key when the project is not known', () => {
    expect(storageKeyOf('http://a', 'k1')).toMatch(/^baseplane\.auth\.[0-9a-f]{8}$/);
    expect(storageKeyOf('http://a', 'k1')).toBe(storageKeyOf('http://a', 'k1'));
    expect(storageKeyOf('http://a', 'k1')).not.toBe(storageKeyOf('http://a', 'k2'));
    expect(storageKeyOf('http://a', 'k1')).not.toBe(storageKeyOf('http://b', 'k1'));
  });
});

describe('social login URLs', () => {
  it('asks for the provider’s address with an absolute redirect', () => {
    expect(providerSignInUrl('http://h/rest/v1/auth', 'github', 'https://app.example.com/cb?x=1').data).toBe(
      `http://h/rest/v1/auth/signin/github?redirect_to=${encodeURIComponent('https://app.example.com/cb?x=1')}`,
    );
    expect(providerSignInUrl('http://h/rest/v1/auth', 'google', '/cb').error).toMatchObject({ code: 'invalid_request', status: 0 });
  });

  it('reads the tokens, or the refusal, from the callback’s hash', () => {
    expect(readProviderCallback('https://app/cb#accessToken=a&refreshToken=r&expiresIn=3600&tokenType=bearer').data).toEqual({ accessToken: 'a', refreshToken: 'r', expiresIn: 3600, tokenType: 'bearer' });
    expect(readProviderCallback('https://app/cb#error=access_denied&error_description=no%20thanks').error).toMatchObject({ code: 'access_denied', message: 'no thanks' });
    expect(readProviderCallback('https://app/cb#accessToken=a').error?.code).toBe('no_session');
    expect(readProviderCallback('').error?.code).toBe('no_session');
  });
});
