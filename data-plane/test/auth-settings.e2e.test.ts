/**
 * What a project's auth settings do on the data plane, over HTTP against the
 * real stack: required email verification, closed sign-ups, token and code
 * lifetimes, password length, and the project's own SMTP server. Each change
 * is an event the data plane's directory follows within a second.
 */
import { randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findFreePort } from '../../deploy/local/src/net';
import { apikey, bearer, call, createProject, signUpOperator, someIp, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { codeFor, inbox } from '../../deploy/test/inbox';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { expectSameTime } from './auth-timing';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
const password = 'correct horse battery';
const address = () => `user-${randomUUID()}@example.com`;
const anon = () => apikey(project.anonKey);
const signUp = (email: string, secret = password) => call('POST', '/rest/v1/auth/signup', { headers: anon(), body: { email, password: secret } });
const signIn = (email: string) => call('POST', '/rest/v1/auth/signin', { headers: anon(), body: { email, password } });

/** Changes settings; the data plane must show `effect` within a second of the answer. */
async function settle(changes: object, effect: () => Promise<boolean>): Promise<void> {
  const answer = await call('PATCH', `/api/projects/${project.id}/auth/settings`, { headers: bearer(operator.token), body: changes });
  expect(answer.status, answer.text).toBe(200);
  const deadline = Date.now() + 1000;
  // A loop rather than expect.poll, which vitest allows in tests only (this also runs in hooks).
  while (!(await effect())) {
    if (Date.now() > deadline) throw new Error(`the data plane did not show ${JSON.stringify(changes)} within a second`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  operator = await signUpOperator('Settings');
  project = await createProject(operator, 'settings app');
  tenant = await connectTenant(project.id);
});
afterAll(async () => {
  await tenant.end();
});

describe('require email verification', () => {
  const probe = address();
  beforeAll(async () => {
    // The probe exists unverified before the switch; signing it in shows when the switch has arrived.
    expect((await signUp(probe)).status).toBe(201);
    await settle({ requireEmailVerification: true }, async () => (await signIn(probe)).status === 403);
  });
  afterAll(async () => {
    await settle({ requireEmailVerification: false }, async () => (await signIn(probe)).status === 200);
  });

  it('signs up with a session whose token says unverified, and mails a code', async () => {
    const email = address();
    const answer = await signUp(email);
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body.user.emailVerified).toBe(false);
    expect(decodeJwt(answer.body.accessToken).email_verified).toBe(false);
    expect(await codeFor(operator.token, email, { mentions: 'settings app' })).toMatch(/^\d{6}$/);
  });

  it('refuses sign-in and refresh until the email is verified, then lets them through', async () => {
    const email = address();
    const session = (await signUp(email)).body;
    const refused = await signIn(email);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('email_not_verified');
    // Paths the base URL serves; a user who signed up before verification was required got no code, and may ask for one.
    expect(refused.body.hint).toContain('POST /rest/v1/auth/verify-email');
    expect(refused.body.hint).toContain('POST /rest/v1/auth/resend');
    const refresh = await call('POST', '/rest/v1/auth/refresh', { headers: anon(), body: { refreshToken: session.refreshToken } });
    expect(refresh.status).toBe(403);
    expect(refresh.body.code).toBe('email_not_verified');

    const otp = await codeFor(operator.token, email);
    const verified = await call('POST', '/rest/v1/auth/verify-email', { headers: { ...anon(), ...bearer(session.accessToken) }, body: { otp } });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user.emailVerified).toBe(true);
    const signedIn = await signIn(email);
    expect(signedIn.status).toBe(200);
    expect(decodeJwt(signedIn.body.accessToken).email_verified).toBe(true);
    // The refused refresh did not spend the token.
    expect((await call('POST', '/rest/v1/auth/refresh', { headers: anon(), body: { refreshToken: session.refreshToken } })).status).toBe(200);
  });

  it('lets no one sign up an address ahead of its owner: once the owner signs in by magic link, the sign-up’s password and session are gone', async () => {
    const email = address();
    const squatter = (await signUp(email, 'the squatter’s password')).body;
    const mailed = (await inbox(operator.token, email)).length;
    expect((await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email } })).status).toBe(200);
    const otp = await codeFor(operator.token, email, { after: mailed });
    const owner = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: anon(), body: { otp, email } });
    expect(owner.status, owner.text).toBe(200);
    expect(owner.body.user).toMatchObject({ id: squatter.user.id, emailVerified: true, providers: [] });
    // The address is verified now: what the squatter holds would pass, were it not cleared.
    const signedIn = await call('POST', '/rest/v1/auth/signin', { headers: anon(), body: { email, password: 'the squatter’s password' } });
    expect(signedIn.body.code).toBe('invalid_credentials');
    expect((await call('POST', '/rest/v1/auth/refresh', { headers: anon(), body: { refreshToken: squatter.refreshToken } })).body.code).toBe('refresh_token_invalid');
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(squatter.accessToken) })).status).toBe(401);
    // The owner may set a password of their own.
    const set = await call('PATCH', '/rest/v1/auth/me', { headers: { ...anon(), ...bearer(owner.body.accessToken) }, body: { password: 'the owner’s password' } });
    expect(set.status, set.text).toBe(200);
    expect((await call('POST', '/rest/v1/auth/signin', { headers: anon(), body: { email, password: 'the owner’s password' } })).status).toBe(200);
  });

  it('never says whether an unknown address exists: a wrong password is still invalid_credentials', async () => {
    const answer = await call('POST', '/rest/v1/auth/signin', { headers: anon(), body: { email: probe, password: 'not the password' } });
    expect(answer.body.code).toBe('invalid_credentials');
  });
});

describe('closed sign-ups', () => {
  const known = address();
  const others = Array.from({ length: 11 }, address);
  beforeAll(async () => {
    for (const email of [known, ...others]) expect((await signUp(email)).status).toBe(201);
    await settle({ allowSignups: false }, async () => (await signUp(address())).status === 403);
  });
  afterAll(async () => {
    await settle({ allowSignups: true }, async () => (await signUp(address())).status === 201);
  });

  it('refuses sign-up with 403 signups_disabled', async () => {
    const answer = await signUp(address());
    expect(answer.status).toBe(403);
    expect(answer.body.code).toBe('signups_disabled');
  });

  it('answers a magic link for an unknown address like any other, but makes no user and sends nothing', async () => {
    const stranger = address();
    const a = await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email: stranger } });
    const b = await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email: known } });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
    await codeFor(operator.token, known);
    expect(await inbox(operator.token, stranger)).toHaveLength(0);
    expect((await tenant.client.query('select 1 from auth.users where lower(email) = lower($1)', [stranger])).rowCount).toBe(0);
  });

  it('answers a magic link for a known address in the time it answers an unknown one (the mail goes after the answer)', async () => {
    const magicLink = (email: string) => call('POST', '/rest/v1/auth/magic-link', { headers: { ...anon(), 'x-forwarded-for': someIp() }, body: { email } });
    await expectSameTime((i) => magicLink(others[i]!), () => magicLink(address()));
    expect(await codeFor(operator.token, others[10]!)).toMatch(/^\d{6}$/);
  });
});

describe('lifetimes and password length', () => {
  afterAll(async () => {
    await call('PATCH', `/api/projects/${project.id}/auth/settings`, { headers: bearer(operator.token), body: { accessTokenTtl: 3600, refreshTokenTtl: 2592000, otpTtl: 600, passwordMinLength: 8 } });
  });

  it('issues tokens and codes for as long as the project says, and takes its password length', async () => {
    const email = address();
    expect((await signUp(email)).status).toBe(201);
    await settle({ accessTokenTtl: 120, refreshTokenTtl: 7200, otpTtl: 180, passwordMinLength: 24 }, async () => (await signIn(email)).body.expiresIn === 120);

    const session = (await signIn(email)).body;
    const claims = decodeJwt(session.accessToken);
    expect(claims.exp! - claims.iat!).toBe(120);
    const { rows } = await tenant.client.query<{ seconds: number }>(
      `select extract(epoch from (s.refresh_expires_at - s.rotated_at))::int as seconds from auth.sessions s
       where s.id = $1`,
      [decodeJwt(session.accessToken).session_id],
    );
    expect(rows[0]!.seconds).toBe(7200);

    await call('POST', '/rest/v1/auth/forgot-password', { headers: anon(), body: { email } });
    await codeFor(operator.token, email, { mentions: 'valid for 3 minutes' });
    const code = await tenant.client.query<{ seconds: number }>(
      `select extract(epoch from (expires_at - created_at))::int as seconds from auth.one_time_codes where lower(email) = lower($1) order by created_at desc limit 1`,
      [email],
    );
    expect(code.rows[0]!.seconds).toBe(180);

    const weak = await signUp(address(), 'twenty-three characters');
    expect(weak.status).toBe(400);
    expect(weak.body.code).toBe('weak_password');
    expect((await signUp(address(), 'twenty-four characters!!')).status).toBe(201);
  });
});

describe('the project’s own SMTP server', () => {
  const known = address();
  beforeAll(async () => {
    expect((await signUp(known)).status).toBe(201);
  });
  afterAll(async () => {
    await call('PATCH', `/api/projects/${project.id}/auth/settings`, { headers: bearer(operator.token), body: { smtp: null } });
  });

  it('sends through it: a dead one is a 503 and nothing is kept, a live one delivers', async () => {
    const email = address();
    const deadPort = await findFreePort();
    await settle({ smtp: { url: `smtp://127.0.0.1:${deadPort}`, from: 'Settings App <hello@settings.example>' } }, async () =>
      (await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email: address() } })).status === 503,
    );
    const failed = await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email } });
    expect(failed.status).toBe(503);
    expect(failed.body.code).toBe('email_unavailable');
    expect(failed.text).not.toContain(String(deadPort));
    const kept = await tenant.client.query('select 1 from auth.one_time_codes where lower(email) = lower($1) and used_at is null', [email]);
    expect(kept.rowCount).toBe(0);
    // Nor the user the magic link made for it, as a sign-up whose mail fails.
    expect((await tenant.client.query('select 1 from auth.users where lower(email) = lower($1)', [email])).rowCount).toBe(0);
    // An answer that must not tell whether the address has an account cannot be a 503 for known ones only.
    const forgotten = await call('POST', '/rest/v1/auth/forgot-password', { headers: anon(), body: { email: known } });
    const unknown = await call('POST', '/rest/v1/auth/forgot-password', { headers: anon(), body: { email: address() } });
    expect([forgotten.status, forgotten.body]).toEqual([unknown.status, unknown.body]);
    expect(unknown.status).toBe(200);

    // The stack's dev inbox is a real SMTP server too: as the project's own, it receives.
    await settle({ smtp: { url: inject('smtpUrl'), from: 'Settings App <hello@settings.example>' } }, async () =>
      (await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email: address() } })).status === 200,
    );
    expect((await call('POST', '/rest/v1/auth/magic-link', { headers: anon(), body: { email } })).status).toBe(200);
    expect(await codeFor(operator.token, email)).toMatch(/^\d{6}$/);
  });
});

describe('the fleet', () => {
  it('has a settings change on every data-plane replica within a second', async () => {
    const replicas = inject('servicePorts').dataPlanes.map((port) => `http://127.0.0.1:${port}`);
    expect(replicas.length).toBeGreaterThanOrEqual(2);
    // Asked directly on each replica's port, not through the gateway.
    const refusesShort = async (base: string) => {
      const response = await fetch(`${base}/rest/v1/auth/signup`, {
        method: 'POST',
        headers: { apikey: project.anonKey, 'content-type': 'application/json' },
        body: JSON.stringify({ email: address(), password: 'twenty characters ok' }),
      });
      return response.status === 400 && ((await response.json()) as { code: string }).code === 'weak_password';
    };
    try {
      await settle({ passwordMinLength: 30 }, async () => (await Promise.all(replicas.map(refusesShort))).every(Boolean));
    } finally {
      await call('PATCH', `/api/projects/${project.id}/auth/settings`, { headers: bearer(operator.token), body: { passwordMinLength: 8 } });
    }
  });
});

