/** `/api/auth` and `/api/teams` over HTTP through the gateway. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { MISLEADING_ADDRESSES } from '../../deploy/test/addresses';
import { bearer, call, scenarios, signUpOperator, someIp, someUntrustedIngress, TRUSTED_INGRESS, type Operator } from '../../deploy/test/http';

let operator: Operator;
let other: Operator;
beforeAll(async () => {
  operator = await signUpOperator('Ada');
  other = await signUpOperator('Bob');
});

describe('platform accounts', () => {
  it('signs up with a personal team and logs in with either case of the email', async () => {
    const email = `Case-${randomUUID()}@Example.com`;
    const ip = { 'x-forwarded-for': someIp() };
    const signup = await call('POST', '/api/auth/signup', { headers: ip, body: { email, password: 'long enough password' } });
    expect(signup.status).toBe(201);
    expect(signup.body).toMatchObject({ expiresIn: 3600, user: { email }, team: { name: expect.any(String) } });
    expect(signup.text).not.toContain('password');
    const login = await call('POST', '/api/auth/login', { headers: ip, body: { email: email.toLowerCase(), password: 'long enough password' } });
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
      { name: 'second sign-up with the same email is 409', method: 'POST', url: '/api/auth/signup', headers: () => ({ 'x-forwarded-for': someIp() }), body: { get email() { return operator.email.toUpperCase(); }, password: 'another password' }, expectedStatus: 409, expectedContent: ['user_already_exists'] },
      { name: 'short password is 400 weak_password, as on the data plane', method: 'POST', url: '/api/auth/signup', body: { email: 'x@example.com', password: 'short' }, expectedStatus: 400, expectedContent: ['weak_password', 'at least 8 characters'] },
      { name: 'bad email is 400 invalid_email, as on the data plane', method: 'POST', url: '/api/auth/signup', body: { email: 'not-an-email', password: 'long enough password' }, expectedStatus: 400, expectedContent: ['invalid_email'] },
      { name: 'an address with a control character is 400 invalid_email', method: 'POST', url: '/api/auth/signup', body: { email: 'a\u0007b@example.com', password: 'long enough password' }, expectedStatus: 400, expectedContent: ['invalid_email'] },
      ...MISLEADING_ADDRESSES.map((misleading) => ({ name: `${misleading}, another mailbox to a mailer, is 400 invalid_email`, method: 'POST', url: '/api/auth/signup', body: { email: misleading, password: 'long enough password' }, expectedStatus: 400, expectedContent: ['invalid_email'] })),
      { name: 'adding a member by a malformed address is 400 invalid_email', method: 'POST', url: () => `/api/teams/${operator.teamId}/members`, headers: () => bearer(operator.token), body: { email: 'not-an-email' }, expectedStatus: 400, expectedContent: ['invalid_email'] },
      { name: 'unknown field is 400', method: 'POST', url: '/api/auth/signup', body: { email: 'y@example.com', password: 'long enough password', admin: true }, expectedStatus: 400 },
      { name: 'malformed JSON is 400 invalid_json', method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, raw: '{"email": ', expectedStatus: 400, expectedContent: ['invalid_json'] },
      { name: 'an empty body with a JSON content type is no body, as on the data plane: 400 invalid_request', method: 'POST', url: '/api/auth/login', headers: { 'content-type': 'application/json' }, raw: '', expectedStatus: 400, expectedContent: ['invalid_request'] },
      { name: 'wrong password is 400 invalid_credentials', method: 'POST', url: '/api/auth/login', headers: () => ({ 'x-forwarded-for': someIp() }), body: { get email() { return operator.email; }, password: 'wrong password!' }, expectedStatus: 400, expectedContent: ['invalid_credentials'] },
      { name: 'unknown email answers exactly like a wrong password', method: 'POST', url: '/api/auth/login', headers: () => ({ 'x-forwarded-for': someIp() }), body: { email: 'nobody@example.com', password: 'wrong password!' }, expectedStatus: 400, expectedContent: ['invalid_credentials', 'invalid email or password'] },
      { name: 'me without a token is 401', method: 'GET', url: '/api/auth/me', expectedStatus: 401 },
      { name: 'me with a tampered token is 401 invalid_token', method: 'GET', url: '/api/auth/me', headers: () => bearer(operator.token.slice(0, -3) + 'abc'), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'me with an alg:none token is 401', method: 'GET', url: '/api/auth/me', headers: () => bearer(unsigned(operator.token)), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'unknown route is 404 in the error shape', method: 'GET', url: '/api/nothing-here', expectedStatus: 404, expectedContent: ['not_found'] },
    ]);
  });
});

describe('rate limits on the door (per client IP, X-Forwarded-For from the local gateway)', () => {
  const login = (ip: string, email: string, password: string) => call('POST', '/api/auth/login', { headers: { 'x-forwarded-for': ip }, body: { email, password } });

  it('holds back an address tried wrong 10 times from one IP, the right password too, with Retry-After; another IP still signs in', async () => {
    const ada = await signUpOperator('Ada');
    const ip = someIp();
    for (let i = 0; i < 10; i++) expect((await login(ip, ada.email, 'wrong password!')).status).toBe(400);
    const held = await login(ip, ada.email, 'correct horse battery');
    expect(held.status, held.text).toBe(429);
    expect(held.body).toMatchObject({ code: 'rate_limited', details: { retryAfter: expect.any(Number) } });
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(held.text).not.toContain('accessToken');
    // Another spelling of the address is the same account, and the same bucket.
    expect((await login(ip, ada.email.toUpperCase(), 'correct horse battery')).status).toBe(429);
    expect((await login(someIp(), ada.email, 'correct horse battery')).status).toBe(200);
  });

  it('never counts a login with the right password', async () => {
    const bob = await signUpOperator('Bob');
    const ip = someIp();
    for (let i = 0; i < 12; i++) expect((await login(ip, bob.email, 'correct horse battery')).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await login(ip, bob.email, 'wrong password!')).status).toBe(400);
    expect((await login(ip, bob.email, 'correct horse battery')).status).toBe(200);
  });

  it('takes at most 10 wrong tries sent at once for one address from one IP', async () => {
    const carol = await signUpOperator('Carol');
    const ip = someIp();
    const tries = await Promise.all(Array.from({ length: 16 }, () => login(ip, carol.email, 'wrong password!')));
    expect(tries.filter((t) => t.status === 400)).toHaveLength(10);
    expect(tries.filter((t) => t.status === 429)).toHaveLength(6);
  });

  it('holds back an IP after 100 failed logins over any addresses, unknown ones too', async () => {
    const dave = await signUpOperator('Dave');
    const ip = someIp();
    const tries = await Promise.all(Array.from({ length: 100 }, (_, i) => login(ip, `nobody-${i}-${randomUUID()}@example.com`, 'wrong password!')));
    expect(tries.map((t) => t.status)).toEqual(Array(100).fill(400));
    expect((await login(ip, dave.email, 'correct horse battery')).status).toBe(429);
    expect((await login(someIp(), dave.email, 'correct horse battery')).status).toBe(200);
  });

  it('knows the client behind an ingress TRUSTED_PROXIES names, and takes an ingress it does not name for the client', async () => {
    const erin = await signUpOperator('Erin');
    const client = someIp();
    for (let i = 0; i < 10; i++) expect((await login(`${client}, ${TRUSTED_INGRESS}`, erin.email, 'wrong password!')).status).toBe(400);
    expect((await login(`${client}, ${TRUSTED_INGRESS}`, erin.email, 'correct horse battery')).status).toBe(429);
    // Another client behind the same ingress is another IP.
    expect((await login(`${someIp()}, ${TRUSTED_INGRESS}`, erin.email, 'correct horse battery')).status).toBe(200);

    // Behind an ingress not named, its clients all count as it: what it says of them could be anything.
    const frank = await signUpOperator('Frank');
    const ingress = someUntrustedIngress();
    for (let i = 0; i < 10; i++) expect((await login(`${someIp()}, ${ingress}`, frank.email, 'wrong password!')).status).toBe(400);
    expect((await login(`${someIp()}, ${ingress}`, frank.email, 'correct horse battery')).status).toBe(429);
    expect((await login(ingress, frank.email, 'correct horse battery')).status).toBe(429);
  });

  it('takes 30 sign-ups from one IP in 5 minutes, a taken address counted too, and makes nothing of the 31st', async () => {
    const ip = someIp();
    const signup = (email: string) => call('POST', '/api/auth/signup', { headers: { 'x-forwarded-for': ip }, body: { email, password: 'long enough password' } });
    const taken = await signup(`taken-${randomUUID()}@example.com`);
    expect(taken.status).toBe(201);
    expect((await signup(taken.body.user.email)).status).toBe(409);
    for (let i = 0; i < 28; i++) expect((await signup(`many-${i}-${randomUUID()}@example.com`)).status).toBe(201);
    const refusedEmail = `refused-${randomUUID()}@example.com`;
    const refused = await signup(refusedEmail);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await login(someIp(), refusedEmail, 'long enough password')).status).toBe(400);
    expect((await call('POST', '/api/auth/signup', { headers: { 'x-forwarded-for': someIp() }, body: { email: refusedEmail, password: 'long enough password' } })).status).toBe(201);
  });
});

/** The same claims re-encoded with alg "none" and no signature. */
function unsigned(token: string): string {
  const [, payload] = token.split('.');
  return `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
}
