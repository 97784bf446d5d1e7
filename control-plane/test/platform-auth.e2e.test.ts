/** `/api/auth` and `/api/teams` over HTTP through the gateway. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, scenarios, signUpOperator, type Operator } from '../../deploy/test/http';

let operator: Operator;
let other: Operator;
beforeAll(async () => {
  operator = await signUpOperator('Ada');
  other = await signUpOperator('Bob');
});

describe('platform accounts', () => {
  it('signs up with a personal team and logs in with either case of the email', async () => {
    const email = `Case-${randomUUID()}@Example.com`;
    const signup = await call('POST', '/api/auth/signup', { body: { email, password: 'long enough password' } });
    expect(signup.status).toBe(201);
    expect(signup.body).toMatchObject({ expiresIn: 3600, user: { email }, team: { name: expect.any(String) } });
    expect(signup.text).not.toContain('password');
    const login = await call('POST', '/api/auth/login', { body: { email: email.toLowerCase(), password: 'long enough password' } });
    expect(login.status).toBe(200);
    expect(login.body.team.id).toBe(signup.body.team.id);
    const me = await call('GET', '/api/auth/me', { headers: bearer(login.body.accessToken) });
    expect(me.body).toMatchObject({ id: signup.body.user.id, teams: [{ id: signup.body.team.id, role: 'owner' }] });
  });

  it('refreshes once: the spent refresh token is refused', async () => {
    const fresh = await call('POST', '/api/auth/refresh', { body: { refreshToken: operator.refreshToken } });
    expect(fresh.status).toBe(200);
    expect(fresh.body.refreshToken).not.toBe(operator.refreshToken);
    const again = await call('POST', '/api/auth/refresh', { body: { refreshToken: operator.refreshToken } });
    expect(again.status).toBe(401);
    expect(again.body.code).toBe('refresh_token_invalid');
    operator.refreshToken = fresh.body.refreshToken;
  });

  it('adds a member to a team, who then sees it', async () => {
    const team = await call('POST', '/api/teams', { headers: bearer(operator.token), body: { name: 'shared' } });
    expect(team.status).toBe(201);
    const added = await call('POST', `/api/teams/${team.body.id}/members`, { headers: bearer(operator.token), body: { email: other.email, role: 'member' } });
    expect(added.status).toBe(201);
    const teams = await call('GET', '/api/teams', { headers: bearer(other.token) });
    expect(teams.body.map((t: { id: string }) => t.id)).toContain(team.body.id);
    const notMine = await call('POST', `/api/teams/${team.body.id}/members`, { headers: bearer(other.token), body: { email: operator.email } });
    expect(notMine.status).toBe(403);
  });

  describe('refusals', () => {
    scenarios([
      { name: 'second sign-up with the same email is 409', method: 'POST', url: '/api/auth/signup', body: { get email() { return operator.email.toUpperCase(); }, password: 'another password' }, expectedStatus: 409, expectedContent: ['user_already_exists'] },
      { name: 'short password is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'x@example.com', password: 'short' }, expectedStatus: 400, expectedContent: ['invalid_request', '/password'] },
      { name: 'bad email is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'not-an-email', password: 'long enough password' }, expectedStatus: 400, expectedContent: ['/email'] },
      { name: 'unknown field is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'y@example.com', password: 'long enough password', admin: true }, expectedStatus: 400 },
      { name: 'malformed JSON is 400 invalid_json', method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, raw: '{"email": ', expectedStatus: 400, expectedContent: ['invalid_json'] },
      { name: 'wrong password is 400 invalid_credentials', method: 'POST', url: '/api/auth/login', body: { get email() { return operator.email; }, password: 'wrong password!' }, expectedStatus: 400, expectedContent: ['invalid_credentials'] },
      { name: 'unknown email answers exactly like a wrong password', method: 'POST', url: '/api/auth/login', body: { email: 'nobody@example.com', password: 'wrong password!' }, expectedStatus: 400, expectedContent: ['invalid_credentials', 'invalid email or password'] },
      { name: 'me without a token is 401', method: 'GET', url: '/api/auth/me', expectedStatus: 401 },
      { name: 'me with a tampered token is 401 invalid_token', method: 'GET', url: '/api/auth/me', headers: () => bearer(operator.token.slice(0, -3) + 'abc'), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'me with an alg:none token is 401', method: 'GET', url: '/api/auth/me', headers: () => bearer(unsigned(operator.token)), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'unknown route is 404 in the error shape', method: 'GET', url: '/api/nothing-here', expectedStatus: 404, expectedContent: ['not_found'] },
    ]);
  });
});

/** The same claims re-encoded with alg "none" and no signature. */
function unsigned(token: string): string {
  const [, payload] = token.split('.');
  return `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
}
