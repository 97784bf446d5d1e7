/**
 * End-user sign-up, sign-in, refresh, me and logout over HTTP: ES256 tokens
 * of the project's own key, refresh tokens spent on use (a reuse revokes the
 * session), emails stored lowercased, and every refusal in the API.md error
 * shape (a NUL character or an oversized body included, on every endpoint).
 */
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantDatabaseName } from '@baseplane/contracts';
import { MISLEADING_ADDRESSES } from '../../deploy/test/addresses';
import { call, createProject, scenarios, signUpOperator, someIp, someUntrustedIngress, TRUSTED_INGRESS, type ProjectAnswer } from '../../deploy/test/http';

let project: ProjectAnswer;
let other: ProjectAnswer;
const email = `Ada-${randomUUID()}@Example.com`;
/** As it is stored, and answered: lowercased, as GoTrue does. */
const stored = email.toLowerCase();
const password = 'correct horse battery';
const key = () => ({ apikey: project.anonKey });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  const operator = await signUpOperator('Auth');
  [project, other] = [await createProject(operator, 'auth app'), await createProject(operator, 'other app')];
});

describe('sign-up and sign-in', () => {
  let session: { accessToken: string; refreshToken: string; user: { id: string; lastSignInAt: string } };

  it('signs up: 201 with a session whose token is the project’s ES256 JWT, the email lowercased', async () => {
    const answer = await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email, password, firstName: 'Ada', lastName: 'Lovelace' } });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body).toMatchObject({ expiresIn: 3600, tokenType: 'bearer', user: { email: stored, firstName: 'Ada', lastName: 'Lovelace', emailVerified: false, providers: ['email'] } });
    expect(answer.text).not.toMatch(/argon2|password/i);
    session = answer.body;
    const jwks = await call('GET', '/rest/v1/auth/.well-known/jwks.json', { headers: key() });
    expect(decodeProtectedHeader(session.accessToken)).toMatchObject({ alg: 'ES256', kid: jwks.body.keys[0].kid });
    const claims = decodeJwt(session.accessToken);
    expect(claims).toMatchObject({ sub: session.user.id, role: 'authenticated', aud: 'authenticated', email: stored, email_verified: false, ref: project.id, session_id: expect.any(String) });
    expect(claims.exp! - claims.iat!).toBe(3600);
  });

  it('answers GET /me for the Bearer token alone, and with the apikey', async () => {
    const alone = await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) });
    expect(alone.status, alone.text).toBe(200);
    expect(alone.body).toMatchObject({ id: session.user.id, email: stored, username: null, emailVerified: false });
    const withKey = await call('GET', '/rest/v1/auth/me', { headers: { ...key(), ...bearer(session.accessToken) } });
    expect(withKey.body.id).toBe(session.user.id);
  });

  it('signs in with the email in any case', async () => {
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email: email.toUpperCase(), password } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user.id).toBe(session.user.id);
    expect(answer.body.user.lastSignInAt).not.toBeNull();
  });

  it('answers the user as this sign-in leaves them: its lastSignInAt, as GET /me then shows it', async () => {
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } });
    expect(answer.status, answer.text).toBe(200);
    const me = await call('GET', '/rest/v1/auth/me', { headers: bearer(answer.body.accessToken) });
    expect(answer.body.user.lastSignInAt).toBe(me.body.lastSignInAt);
    expect(Date.parse(answer.body.user.lastSignInAt)).toBeGreaterThan(Date.parse(session.user.lastSignInAt));
  });

  it('still signs in a user whose email was stored as typed, and keeps it taken in any case', async () => {
    const typed = `Old-${randomUUID()}@Example.COM`;
    const signedUp = await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: typed, password } });
    expect(signedUp.status, signedUp.text).toBe(201);
    // As rows were written before emails were lowercased.
    await onTenant((db) => db.query('update auth.users set email = $2 where id = $1', [signedUp.body.user.id, typed]));
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email: typed.toLowerCase(), password } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user.id).toBe(signedUp.body.user.id);
    const again = await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: typed.toLowerCase(), password } });
    expect(again.body.code).toBe('user_already_exists');
  });

  it('signs in with an address that JavaScript and PostgreSQL lower differently (İ), typed as at sign-up', async () => {
    const typed = `Dİnç-${randomUUID()}@Example.com`;
    const signedUp = await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: typed, password } });
    expect(signedUp.status, signedUp.text).toBe(201);
    expect(signedUp.body.user.email).toBe(typed.toLowerCase());
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email: typed, password } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user.id).toBe(signedUp.body.user.id);
  });

  describe('refusals', () => {
    scenarios([
      { name: 'a second sign-up with the same email, in another case, is 409', method: 'POST', url: '/rest/v1/auth/signup', headers: key, body: { email: email.toUpperCase(), password }, expectedStatus: 409, expectedContent: ['user_already_exists'] },
      { name: 'a short password is 400 weak_password', method: 'POST', url: '/rest/v1/auth/signup', headers: key, body: { email: 'b@example.com', password: 'short' }, expectedStatus: 400, expectedContent: ['weak_password'] },
      { name: 'a bad email is 400 invalid_email', method: 'POST', url: '/rest/v1/auth/signup', headers: key, body: { email: 'nope', password }, expectedStatus: 400, expectedContent: ['invalid_email'] },
      ...MISLEADING_ADDRESSES.map((misleading) => ({ name: `${misleading}, another mailbox to a mailer, is 400 invalid_email`, method: 'POST', url: '/rest/v1/auth/signup', headers: key, body: { email: misleading, password }, expectedStatus: 400, expectedContent: ['invalid_email'] })),
      { name: 'an unknown field is 400', method: 'POST', url: '/rest/v1/auth/signup', headers: key, body: { email: 'c@example.com', password, role: 'admin' }, expectedStatus: 400 },
      { name: 'no apikey is 401', method: 'POST', url: '/rest/v1/auth/signup', body: { email: 'd@example.com', password }, expectedStatus: 401, expectedContent: ['missing_api_key'] },
      { name: 'a wrong password is 400 invalid_credentials', method: 'POST', url: '/rest/v1/auth/signin', headers: key, body: { email, password: 'wrong password' }, expectedStatus: 400, expectedContent: ['invalid_credentials'] },
      { name: 'an unknown email answers exactly the same', method: 'POST', url: '/rest/v1/auth/signin', headers: key, body: { email: 'nobody@example.com', password: 'wrong password' }, expectedStatus: 400, expectedContent: ['invalid_credentials', 'invalid email or password'] },
      { name: 'the user of one project cannot sign in to another', method: 'POST', url: '/rest/v1/auth/signin', headers: () => ({ apikey: other.anonKey }), body: { email, password }, expectedStatus: 400, expectedContent: ['invalid_credentials'] },
      { name: 'me without a token is 401', method: 'GET', url: '/rest/v1/auth/me', headers: key, expectedStatus: 401, expectedContent: ['no_session'] },
      { name: 'me with a tampered token is 401', method: 'GET', url: '/rest/v1/auth/me', headers: () => bearer(session.accessToken.slice(0, -4) + 'AAAA'), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'me with an alg:none token is 401', method: 'GET', url: '/rest/v1/auth/me', headers: () => bearer(unsigned(session.accessToken)), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'me with the token of another project’s key is 401', method: 'GET', url: '/rest/v1/auth/me', headers: () => ({ apikey: other.anonKey, ...bearer(session.accessToken) }), expectedStatus: 401, expectedContent: ['invalid_token'] },
      { name: 'me with garbage is 401', method: 'GET', url: '/rest/v1/auth/me', headers: () => bearer('not.a.jwt'), expectedStatus: 401 },
      // Spec §4.2: every auth endpoint but GET /me requires the apikey.
      { name: 'logout with a token but no apikey is 401 missing_api_key', method: 'POST', url: '/rest/v1/auth/logout', headers: () => bearer(session.accessToken), body: {}, expectedStatus: 401, expectedContent: ['missing_api_key'] },
      { name: 'logout with neither is 401 missing_api_key', method: 'POST', url: '/rest/v1/auth/logout', body: {}, expectedStatus: 401, expectedContent: ['missing_api_key'] },
    ]);

    it('an 11 MB body is 413 payload_too_large, through the gateway and straight to each replica', async () => {
      const bases = [inject('baseUrl'), ...inject('servicePorts').dataPlanes.map((port) => `http://127.0.0.1:${port}`)];
      for (const base of bases) {
        const answer = await oversizedPost(new URL('/rest/v1/auth/signup', base), key(), 11 * 1024 * 1024);
        expect([base, answer.status, answer.body.code]).toEqual([base, 413, 'payload_too_large']);
        expect(Object.keys(answer.body).sort()).toEqual(['code', 'details', 'hint', 'message']);
      }
    });
  });
});

/**
 * POSTs a JSON body of `bytes` announced by its length, sending only its
 * first 64 KiB until the answer comes: the server refuses from the length
 * alone. (A client that writes on after an early answer may see the
 * connection reset before it reads the answer; that race is the client's.)
 */
function oversizedPost(url: URL, headers: Record<string, string>, bytes: number): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': String(bytes) } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => { text += chunk; });
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
        request.destroy();
      });
    });
    request.on('error', reject);
    request.write(`{"email":"big-${randomUUID()}@example.com","password":"${'x'.repeat(64 * 1024)}`);
  });
}

describe('failed sign-ins', () => {
  const from = (ip: string) => () => ({ ...key(), 'x-forwarded-for': ip });
  const signin = (ip: string, body: { email: string; password: string }) => call('POST', '/rest/v1/auth/signin', { headers: from(ip)(), body });
  const statuses = async (tries: Array<() => Promise<{ status: number }>>) => (await Promise.all(tries.map((t) => t()))).map((a) => a.status);
  let user: string;

  beforeAll(async () => {
    user = `limited-${randomUUID()}@example.com`;
    expect((await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: user, password } })).status).toBe(201);
  });

  it('holds back an address tried ten times in vain from one IP (429, Retry-After), the right password too, but not from another IP', async () => {
    const ip = someIp();
    expect(await statuses(Array.from({ length: 10 }, () => () => signin(ip, { email: user, password: 'wrong password' })))).toEqual(Array(10).fill(400));
    const held = await signin(ip, { email: user.toUpperCase(), password });
    expect(held.status, held.text).toBe(429);
    expect(held.body).toMatchObject({ code: 'rate_limited', details: { retryAfter: expect.any(Number) } });
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(800);
    expect((await signin(ip, { email: user, password: 'wrong password' })).status).toBe(429);
    const elsewhere = await signin(someIp(), { email: user, password });
    expect(elsewhere.status, elsewhere.text).toBe(200);
  });

  it('knows the client behind an ingress TRUSTED_PROXIES names, and takes an ingress it does not name for the client', async () => {
    const client = someIp();
    const tries = (forwardedFor: () => string) => Array.from({ length: 10 }, () => () => signin(forwardedFor(), { email: user, password: 'wrong password' }));
    expect(await statuses(tries(() => `${client}, ${TRUSTED_INGRESS}`))).toEqual(Array(10).fill(400));
    expect((await signin(`${client}, ${TRUSTED_INGRESS}`, { email: user, password })).status).toBe(429);
    expect((await signin(`${someIp()}, ${TRUSTED_INGRESS}`, { email: user, password })).status).toBe(200);

    const ingress = someUntrustedIngress();
    expect(await statuses(tries(() => `${someIp()}, ${ingress}`))).toEqual(Array(10).fill(400));
    expect((await signin(`${someIp()}, ${ingress}`, { email: user, password })).status).toBe(429);
  });

  it('counts an address in its one form: a variant PostgreSQL would lower alike (İ for i) is another address, not a way past the limit', async () => {
    const ip = someIp();
    const plain = `limited-i-${randomUUID()}@example.com`;
    expect((await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: plain, password } })).status).toBe(201);
    expect(await statuses(Array.from({ length: 10 }, () => () => signin(ip, { email: plain, password: 'wrong password' })))).toEqual(Array(10).fill(400));
    expect((await signin(ip, { email: plain, password })).status).toBe(429);
    const variant = await signin(ip, { email: plain.replace('limited-i', 'limited-İ'), password });
    expect([variant.status, variant.body.code]).toEqual([400, 'invalid_credentials']);
  });

  it('lets at most ten of many wrong passwords tried at once be checked: the rest are held back before the check', async () => {
    const ip = someIp();
    const answers = await Promise.all(Array.from({ length: 30 }, () => signin(ip, { email: user, password: 'wrong password' })));
    const count = (status: number) => answers.filter((answer) => answer.status === status).length;
    expect({ 400: count(400), 429: count(429) }).toEqual({ 400: 10, 429: 20 });
    expect(answers.find((answer) => answer.status === 400)!.body.code).toBe('invalid_credentials');
    expect((await signin(ip, { email: user, password })).status).toBe(429);
  });

  it('never counts a sign-in that succeeds', async () => {
    const ip = someIp();
    for (let i = 0; i < 12; i++) expect((await signin(ip, { email: user, password })).status).toBe(200);
    expect((await signin(ip, { email: user, password: 'wrong password' })).status).toBe(400);
  });

  it('holds back an IP after a hundred failures over any addresses, and no other IP', async () => {
    const ip = someIp();
    const tries = Array.from({ length: 100 }, (_, i) => () => signin(ip, { email: `nobody-${i}-${randomUUID()}@example.com`, password: 'wrong password' }));
    for (let i = 0; i < tries.length; i += 10) expect(await statuses(tries.slice(i, i + 10))).toEqual(Array(10).fill(400));
    const held = await signin(ip, { email: user, password });
    expect(held.status, held.text).toBe(429);
    expect((await signin(someIp(), { email: user, password })).status).toBe(200);
  });
});

describe('sign-ups from one IP', () => {
  const signup = (headers: Record<string, string>, ip: string, address = `many-${randomUUID()}@example.com`) =>
    call('POST', '/rest/v1/auth/signup', { headers: { ...headers, 'x-forwarded-for': ip }, body: { email: address, password } });

  it('holds back an IP after thirty sign-ups in five minutes, a taken address counted too (429, Retry-After), and no other IP', async () => {
    const ip = someIp();
    const taken = `taken-${randomUUID()}@example.com`;
    expect((await signup(key(), ip, taken)).status).toBe(201);
    expect((await signup(key(), ip, taken)).status).toBe(409);
    for (let i = 0; i < 28; i += 7) {
      const answers = await Promise.all(Array.from({ length: 7 }, () => signup(key(), ip)));
      expect(answers.map((a) => a.status)).toEqual(Array(7).fill(201));
    }
    const address = `held-${randomUUID()}@example.com`;
    const held = await signup(key(), ip, address);
    expect(held.status, held.text).toBe(429);
    expect(held.body).toMatchObject({ code: 'rate_limited', details: { retryAfter: expect.any(Number) } });
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(250);
    // Refused before anything was made: the address is free from another IP.
    const elsewhere = await signup(key(), someIp(), address);
    expect(elsewhere.status, elsewhere.text).toBe(201);
  });

  it('never holds back the service key', async () => {
    const ip = someIp();
    for (let i = 0; i < 35; i += 7) {
      const answers = await Promise.all(Array.from({ length: 7 }, () => signup({ apikey: project.serviceKey }, ip)));
      expect(answers.map((a) => a.status)).toEqual(Array(7).fill(201));
    }
    expect((await signup(key(), ip)).status).toBe(201);
  });
});

describe('a NUL character in any string field', () => {
  // PostgreSQL cannot store it (22021): the shared string type of contracts/src/auth.ts refuses it at validation, on every endpoint.
  let token = '';
  beforeAll(async () => {
    const answer = await call('POST', '/rest/v1/auth/signup', { headers: key(), body: { email: `nul-${randomUUID()}@example.com`, password } });
    expect(answer.status, answer.text).toBe(201);
    token = answer.body.accessToken;
  });
  const nul = () => `nul\u0000-${randomUUID()}@example.com`;
  const signedIn = () => ({ ...key(), ...bearer(token) });
  const service = () => ({ apikey: project.serviceKey });
  const rows: [string, string, string, Record<string, string> | (() => Record<string, string>), object][] = [
    ['POST', '/signup', 'email', key, { email: nul(), password }],
    ['POST', '/signup', 'firstName', key, { email: `nul-${randomUUID()}@example.com`, password, firstName: 'A\u0000B' }],
    ['POST', '/signup', 'password', key, { email: `nul-${randomUUID()}@example.com`, password: `${password}\u0000` }],
    ['POST', '/signin', 'email', key, { email: nul(), password }],
    ['POST', '/refresh', 'refreshToken', key, { refreshToken: 'a\u0000b' }],
    ['POST', '/forgot-password', 'email', key, { email: nul() }],
    ['POST', '/magic-link', 'email', key, { email: nul() }],
    ['POST', '/magic-link/verify', 'otp', key, { otp: '12345\u0000' }],
    ['POST', '/resend', 'email', key, { email: nul(), type: 'signup' }],
    ['POST', '/verify-email', 'email', key, { otp: '123456', email: nul() }],
    ['POST', '/reset-password', 'newPassword', key, { otp: '123456', newPassword: 'long enough\u0000password' }],
    ['PATCH', '/me', 'username', signedIn, { username: 'a\u0000' }],
    ['POST', '/change-email', 'newEmail', signedIn, { newEmail: nul() }],
    ['POST', '/change-email/verify', 'otp', signedIn, { otp: '\u0000' }],
    ['POST', '/invite', 'email', service, { email: nul() }],
  ];
  scenarios(rows.map(([method, path, field, headers, body]) => ({
    name: `${method} ${path} with one in ${field} is 400 invalid_request`,
    method,
    url: `/rest/v1/auth${path}`,
    headers,
    body,
    expectedStatus: 400,
    expectedContent: ['invalid_request', field, 'must not contain a NUL character'],
    notExpectedContent: ['x00'],
  })));
});

describe('browsers', () => {
  it('answers a CORS preflight for the auth routes, and marks their answers readable from any origin', async () => {
    const preflight = await call('OPTIONS', '/rest/v1/auth/signin', { headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'apikey, content-type' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('apikey');
    const refused = await call('POST', '/rest/v1/auth/signin', { headers: { ...key(), origin: 'https://app.example.com' }, body: { email, password: 'wrong password' } });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('refresh tokens', () => {
  async function signIn() {
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } });
    expect(answer.status).toBe(200);
    return answer.body as { accessToken: string; refreshToken: string };
  }
  const refresh = (refreshToken: string) => call('POST', '/rest/v1/auth/refresh', { headers: key(), body: { refreshToken } });

  it('rotates on every use and answers without the user', async () => {
    const first = await signIn();
    const second = await refresh(first.refreshToken);
    expect(second.status, second.text).toBe(200);
    expect(Object.keys(second.body).sort()).toEqual(['accessToken', 'expiresIn', 'refreshToken', 'tokenType']);
    expect(second.body.refreshToken).not.toBe(first.refreshToken);
    expect(decodeJwt(second.body.accessToken).session_id).toBe(decodeJwt(first.accessToken).session_id);
    const third = await refresh(second.body.refreshToken);
    expect(third.status).toBe(200);
  });

  it('revokes the whole session when a spent token comes back after the grace', async () => {
    const first = await signIn();
    const second = (await refresh(first.refreshToken)).body;
    // The grace for a client's own concurrent refresh is 10 s; age the rotation past it.
    await ageLastRotation(first.accessToken);
    const reused = await refresh(first.refreshToken);
    expect(reused.status).toBe(401);
    expect(reused.body.code).toBe('refresh_token_reused');
    expect((await refresh(second.refreshToken)).body.code).toBe('refresh_token_invalid');
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(second.accessToken) })).status).toBe(401);
  });

  it('revokes the session for a token spent several rotations ago, even within the grace of the last one', async () => {
    const first = await signIn();
    const second = (await refresh(first.refreshToken)).body;
    const third = (await refresh(second.refreshToken)).body;
    const reused = await refresh(first.refreshToken);
    expect(reused.body.code).toBe('refresh_token_reused');
    expect((await refresh(third.refreshToken)).body.code).toBe('refresh_token_invalid');
  });

  it('lets a client refreshing twice at once within the grace keep its session: both get the same next token', async () => {
    const first = await signIn();
    const [a, b] = await Promise.all([refresh(first.refreshToken), refresh(first.refreshToken)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.refreshToken).toBe(b.body.refreshToken);
    // The one a tab got a moment later, too.
    const late = await refresh(first.refreshToken);
    expect(late.status).toBe(200);
    expect(late.body.refreshToken).toBe(a.body.refreshToken);
    expect((await refresh(a.body.refreshToken)).status).toBe(200);
  });

  it('refuses an unknown refresh token', async () => {
    expect((await refresh('nope')).body.code).toBe('refresh_token_invalid');
  });

  it('refuses a forged or altered token without harming the session it names', async () => {
    const first = await signIn();
    const bytes = Buffer.from(first.refreshToken, 'base64url');
    // The session and generation it names, with a MAC it did not come with; then a later generation, also unsigned.
    const forged = Buffer.concat([bytes.subarray(0, 20), Buffer.alloc(32, 7)]).toString('base64url');
    const ahead = Buffer.from(bytes);
    ahead.writeUInt32BE(5, 16);
    for (const token of [forged, ahead.toString('base64url'), `${first.refreshToken}x`, first.refreshToken.slice(0, -1)]) {
      const answer = await refresh(token);
      expect(answer.status).toBe(401);
      expect(answer.body.code).toBe('refresh_token_invalid');
    }
    // Another project's key does not make it either.
    const elsewhere = await call('POST', '/rest/v1/auth/refresh', { headers: { apikey: other.anonKey }, body: { refreshToken: first.refreshToken } });
    expect(elsewhere.body.code).toBe('refresh_token_invalid');
    expect((await refresh(first.refreshToken)).status).toBe(200);
  });

  it('refuses the newer token, as invalid, when the database lost its rotation in a crash (the client signs in again)', async () => {
    const first = await signIn();
    const second = (await refresh(first.refreshToken)).body;
    // What a crash before the WAL flush can leave behind (rotations commit without waiting for it): the session back on the first token.
    const { rowCount } = await onTenant((db) =>
      db.query('update auth.sessions set refresh_generation = 0, refresh_hash = $2 where id = $1', [
        decodeJwt(first.accessToken).session_id,
        createHash('sha256').update(first.refreshToken).digest('hex'),
      ]),
    );
    expect(rowCount).toBe(1);
    const answer = await refresh(second.refreshToken);
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('refresh_token_invalid');
  });

  it('keeps only the hash of the current token, one row per session however often it refreshes', async () => {
    const first = await signIn();
    let token = first.refreshToken;
    for (let i = 0; i < 3; i++) token = (await refresh(token)).body.refreshToken;
    const { rows } = await onTenant((db) =>
      db.query('select refresh_generation, refresh_hash from auth.sessions where id = $1', [decodeJwt(first.accessToken).session_id]),
    );
    expect(rows).toEqual([{ refresh_generation: 3, refresh_hash: createHash('sha256').update(token).digest('hex') }]);
  });

  it('logs out one session, or all of them', async () => {
    const one = await signIn();
    const two = await signIn();
    expect((await call('POST', '/rest/v1/auth/logout', { headers: { ...key(), ...bearer(one.accessToken) } })).status).toBe(204);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(one.accessToken) })).status).toBe(401);
    expect((await refresh(one.refreshToken)).body.code).toBe('refresh_token_invalid');
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(two.accessToken) })).status).toBe(200);
    expect((await call('POST', '/rest/v1/auth/logout', { headers: { ...key(), ...bearer(two.accessToken) }, body: { scope: 'global' } })).status).toBe(204);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(two.accessToken) })).status).toBe(401);
  });

  it('takes a JSON content type over no body as no body, as fetch wrappers send it on a POST without one (a logout), and a route that needs a body still refuses it', async () => {
    const json = { 'content-type': 'application/json' };
    const session = await signIn();
    expect((await call('POST', '/rest/v1/auth/logout', { headers: { ...key(), ...bearer(session.accessToken), ...json }, raw: '' })).status).toBe(204);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(401);
    const signin = await call('POST', '/rest/v1/auth/signin', { headers: { ...key(), ...json }, raw: '' });
    expect([signin.status, signin.body.code]).toEqual([400, 'invalid_request']);
    const broken = await call('POST', '/rest/v1/auth/signin', { headers: { ...key(), ...json }, raw: '{"email":' });
    expect([broken.status, broken.body.code]).toEqual([400, 'invalid_json']);
  });
});

describe('a column added to auth.users', () => {
  it('keeps sessions working: the checks and rotations prepared before it still answer', async () => {
    const signIn = async () => (await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } })).body as { accessToken: string; refreshToken: string };
    const sessions = await Promise.all(Array.from({ length: 8 }, signIn));
    // Every replica's connections prepare the session check and the rotation first.
    const use = (session: { accessToken: string; refreshToken: string }) => Promise.all([
      call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) }),
      call('POST', '/rest/v1/auth/refresh', { headers: key(), body: { refreshToken: session.refreshToken } }),
    ]);
    for (const answers of await Promise.all(sessions.map(use))) expect(answers.map((a) => a.status)).toEqual([200, 200]);
    await onTenant((db) => db.query('alter table auth.users add column favourite_colour text'));
    const fresh = await Promise.all(Array.from({ length: 8 }, signIn));
    for (const answers of await Promise.all(fresh.map(use))) {
      expect(answers.map((a) => a.status), answers.map((a) => a.text).join(' ')).toEqual([200, 200]);
    }
    const me = await call('GET', '/rest/v1/auth/me', { headers: bearer(fresh[0]!.accessToken) });
    expect(me.body).not.toHaveProperty('favourite_colour');
  });
});

/** The same claims re-encoded with alg "none" and no signature. */
function unsigned(token: string): string {
  const [, payload] = token.split('.');
  return `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
}

/** Runs `work` on the project's tenant database as its superuser. */
async function onTenant<T>(work: (db: pg.Client) => Promise<T>): Promise<T> {
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(project.id)}`;
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

/** Moves the last rotation of the session of `accessToken` 60 s into the past, as if the client came back later. */
async function ageLastRotation(accessToken: string): Promise<void> {
  const { rowCount } = await onTenant((db) =>
    db.query(`update auth.sessions set rotated_at = rotated_at - interval '60 seconds' where id = $1`, [decodeJwt(accessToken).session_id]),
  );
  expect(rowCount).toBe(1);
}
