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

  it('team roles as in Supabase: admins manage members and admins, only an owner touches owners, the last owner stays', async () => {
    const carol = await signUpOperator('Carol');
    const team = await call('POST', '/api/teams', { headers: bearer(operator.token), body: { name: 'roles' } });
    expect(team.status).toBe(201);
    const members = `/api/teams/${team.body.id}/members`;
    const setRole = (by: Operator, who: Operator, role: string) => call('POST', members, { headers: bearer(by.token), body: { email: who.email, role } });
    const roleOf = async (who: Operator) => (await call('GET', '/api/teams', { headers: bearer(who.token) })).body.find((t: { id: string }) => t.id === team.body.id)?.role;
    const refused = (status: number, code: string, hint: unknown = null) => expect.objectContaining({ status, body: { code, message: expect.any(String), details: null, hint } });

    expect((await setRole(operator, other, 'admin')).status).toBe(201);
    // An admin adds members and admins and changes their roles.
    expect((await setRole(other, carol, 'member')).status).toBe(201);
    expect((await setRole(other, carol, 'admin')).status).toBe(201);
    expect((await setRole(other, carol, 'member')).status).toBe(201);
    // An admin neither demotes an owner nor makes one (not even of themselves): 403.
    expect(await setRole(other, operator, 'member')).toEqual(refused(403, 'forbidden'));
    expect(await setRole(other, operator, 'admin')).toEqual(refused(403, 'forbidden'));
    expect(await setRole(other, carol, 'owner')).toEqual(refused(403, 'forbidden'));
    expect(await setRole(other, other, 'owner')).toEqual(refused(403, 'forbidden'));
    expect([await roleOf(operator), await roleOf(other), await roleOf(carol)]).toEqual(['owner', 'admin', 'member']);
    // The last owner cannot be demoted, even by themselves: 409 last_owner.
    expect(await setRole(operator, operator, 'admin')).toEqual(refused(409, 'last_owner', 'make another member an owner first'));
    expect(await roleOf(operator)).toBe('owner');
    // An owner makes another owner; then either may step down, and the one left is the last.
    expect((await setRole(operator, other, 'owner')).status).toBe(201);
    expect((await setRole(operator, operator, 'admin')).status).toBe(201);
    expect(await setRole(operator, other, 'member')).toEqual(refused(403, 'forbidden'));
    expect(await setRole(other, other, 'member')).toEqual(refused(409, 'last_owner', 'make another member an owner first'));
    expect([await roleOf(operator), await roleOf(other), await roleOf(carol)]).toEqual(['admin', 'owner', 'member']);
  });

  it('two owners demoting each other at once leave one owner', async () => {
    const team = await call('POST', '/api/teams', { headers: bearer(operator.token), body: { name: 'duel' } });
    const members = `/api/teams/${team.body.id}/members`;
    expect((await call('POST', members, { headers: bearer(operator.token), body: { email: other.email, role: 'owner' } })).status).toBe(201);
    const answers = await Promise.all([
      call('POST', members, { headers: bearer(operator.token), body: { email: other.email, role: 'member' } }),
      call('POST', members, { headers: bearer(other.token), body: { email: operator.email, role: 'member' } }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403]);
    const roles = await Promise.all([operator, other].map(async (who) => (await call('GET', '/api/teams', { headers: bearer(who.token) })).body.find((t: { id: string }) => t.id === team.body.id).role));
    expect(roles.sort()).toEqual(['member', 'owner']);
  });

  describe('refusals', () => {
    scenarios([
      { name: 'second sign-up with the same email is 409', method: 'POST', url: '/api/auth/signup', body: { get email() { return operator.email.toUpperCase(); }, password: 'another password' }, expectedStatus: 409, expectedContent: ['user_already_exists'] },
      { name: 'short password is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'x@example.com', password: 'short' }, expectedStatus: 400, expectedContent: ['invalid_request', '/password'] },
      { name: 'bad email is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'not-an-email', password: 'long enough password' }, expectedStatus: 400, expectedContent: ['/email'] },
      { name: 'unknown field is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'y@example.com', password: 'long enough password', admin: true }, expectedStatus: 400 },
      { name: 'malformed JSON is 400 invalid_json', method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, raw: '{"email": ', expectedStatus: 400, expectedContent: ['invalid_json'] },
      { name: 'an empty body with a JSON content type is 400 invalid_json, as on the data plane', method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, raw: '', expectedStatus: 400, expectedContent: ['invalid_json', 'request body is not valid JSON'] },
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
