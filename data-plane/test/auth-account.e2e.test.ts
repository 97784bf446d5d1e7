/**
 * A signed-in user changing their account over HTTP against the real stack:
 * PATCH /me (profile, password, with and without a required reauthentication),
 * change-email and its code, reauth, and the service key's invite. Codes are
 * read back from the real SMTP dev inbox.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { StoredAuthSettings } from '@baseplane/contracts';
import { ANY_VERSION, EventStore } from '../../control-plane/src/event-store/event-store';
import { MISLEADING_ADDRESSES } from '../../deploy/test/addresses';
import { apikey, bearer, call, createProject, dataPlanesCaughtUp, scenarios, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { codeFor, inbox } from '../../deploy/test/inbox';

let operator: Operator;
let project: ProjectAnswer;
let other: ProjectAnswer;
const password = 'correct horse battery';
const address = () => `user-${randomUUID()}@example.com`;
const anon = () => apikey(project.anonKey);
const withToken = (token: string) => ({ ...anon(), ...bearer(token) });

async function signUp(email = address()) {
  const answer = await call('POST', '/rest/v1/auth/signup', { headers: anon(), body: { email, password } });
  expect(answer.status, answer.text).toBe(201);
  return { email, ...answer.body } as { email: string; accessToken: string; refreshToken: string; user: { id: string } };
}

const signIn = (email: string, secret = password) => call('POST', '/rest/v1/auth/signin', { headers: anon(), body: { email, password: secret } });
/** Changes the project's auth settings and answers once every replica has them (the answer promises them within a second). */
async function settings(body: object) {
  const answer = await call('PATCH', `/api/projects/${project.id}/auth/settings`, { headers: bearer(operator.token), body });
  if (answer.status === 200) await dataPlanesCaughtUp();
  return answer;
}

/** Records settings as the control plane did before its API checked URLs with `new URL()`, and waits for every replica. */
async function recordSettingsOfOld(changes: Partial<StoredAuthSettings>) {
  const db = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
  try {
    const metadata = { actor: operator.accountId, at: new Date().toISOString(), correlationId: randomUUID(), causationId: null, schemaVersion: 1 };
    await new EventStore(db).appendToStream(`project-${project.id}`, ANY_VERSION, [{ type: 'AuthSettingsUpdated', data: { projectId: project.id, changes }, metadata }]);
  } finally {
    await db.end();
  }
  await dataPlanesCaughtUp();
}

beforeAll(async () => {
  operator = await signUpOperator('Accounts');
  [project, other] = [await createProject(operator, 'account app'), await createProject(operator, 'other account app')];
});

describe('PATCH /me', () => {
  it('changes the profile', async () => {
    const user = await signUp();
    const answer = await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { firstName: 'Ada', username: 'ada' } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ id: user.user.id, firstName: 'Ada', username: 'ada', lastName: null });
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(user.accessToken) })).body.username).toBe('ada');
  });

  it('changes the password: other sessions end, this one stays', async () => {
    const user = await signUp();
    const elsewhere = (await signIn(user.email)).body;
    const answer = await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { password: 'a much newer password' } });
    expect(answer.status, answer.text).toBe(200);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(user.accessToken) })).status).toBe(200);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(elsewhere.accessToken) })).status).toBe(401);
    expect((await signIn(user.email)).status).toBe(400);
    expect((await signIn(user.email, 'a much newer password')).status).toBe(200);
  });

  describe('refusals', () => {
    let token = '';
    beforeAll(async () => {
      token = (await signUp()).accessToken;
    });
    scenarios([
      { name: 'no token is 401 no_session', method: 'PATCH', url: '/rest/v1/auth/me', headers: anon, body: { firstName: 'x' }, expectedStatus: 401, expectedContent: ['no_session'] },
      { name: 'a weak password is 400 weak_password', method: 'PATCH', url: '/rest/v1/auth/me', headers: () => withToken(token), body: { password: 'short' }, expectedStatus: 400, expectedContent: ['weak_password'] },
      { name: 'an unknown field is 400', method: 'PATCH', url: '/rest/v1/auth/me', headers: () => withToken(token), body: { email: 'x@example.com' }, expectedStatus: 400 },
      { name: 'the token with another project’s key is 401', method: 'PATCH', url: '/rest/v1/auth/me', headers: () => ({ apikey: other.anonKey, ...bearer(token) }), body: { firstName: 'x' }, expectedStatus: 401, expectedContent: ['invalid_token'] },
      // Spec §4.2: only GET /me takes the token without the apikey.
      { name: 'the token without the apikey is 401 missing_api_key', method: 'PATCH', url: '/rest/v1/auth/me', headers: () => bearer(token), body: { firstName: 'x' }, expectedStatus: 401, expectedContent: ['missing_api_key'] },
    ]);
  });
});

describe('reauthentication', () => {
  it('is required for a password change when the project says so, and a verified code opens a window for one', async () => {
    expect((await settings({ requireReauthForPasswordChange: true })).status).toBe(200);
    try {
      const user = await signUp();
      const refused = await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { password: 'a much newer password' } });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('reauthentication_required');
      // A profile change needs none.
      expect((await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { lastName: 'L' } })).status).toBe(200);

      expect((await call('POST', '/rest/v1/auth/reauth', { headers: withToken(user.accessToken) })).status).toBe(200);
      const otp = await codeFor(operator.token, user.email, { mentions: 'account app' });
      const wrong = await call('POST', '/rest/v1/auth/reauth/verify', { headers: withToken(user.accessToken), body: { otp: otp === '000000' ? '111111' : '000000' } });
      expect(wrong.body.code).toBe('otp_invalid');
      const verified = await call('POST', '/rest/v1/auth/reauth/verify', { headers: withToken(user.accessToken), body: { otp } });
      expect(verified.status, verified.text).toBe(200);
      expect(Date.parse(verified.body.reauthenticatedUntil)).toBeGreaterThan(Date.now());
      const changed = await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { password: 'a much newer password' } });
      expect(changed.status, changed.text).toBe(200);

      // The window belongs to that session only.
      const second = (await signIn(user.email, 'a much newer password')).body;
      expect((await call('PATCH', '/rest/v1/auth/me', { headers: withToken(second.accessToken), body: { password: 'yet another password' } })).status).toBe(403);
    } finally {
      await settings({ requireReauthForPasswordChange: false });
    }
  });

  it('lets one password change through, then needs another; of two changes at once, one passes', async () => {
    expect((await settings({ requireReauthForPasswordChange: true })).status).toBe(200);
    try {
      const user = await signUp();
      const reauthenticate = async () => {
        const mailed = (await inbox(operator.token, user.email)).length;
        expect((await call('POST', '/rest/v1/auth/reauth', { headers: withToken(user.accessToken) })).status).toBe(200);
        const otp = await codeFor(operator.token, user.email, { after: mailed, mentions: 'account app' });
        expect((await call('POST', '/rest/v1/auth/reauth/verify', { headers: withToken(user.accessToken), body: { otp } })).status).toBe(200);
      };
      const change = (to: string) => call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { password: to } });

      await reauthenticate();
      expect((await change('the first new password')).status).toBe(200);
      const again = await change('the second new password');
      expect(again.status).toBe(403);
      expect(again.body.code).toBe('reauthentication_required');
      expect((await signIn(user.email, 'the first new password')).status).toBe(200);

      // A refused change (a weak password) spends nothing.
      await reauthenticate();
      expect((await change('short')).body.code).toBe('weak_password');
      const both = await Promise.all([change('racing password one'), change('racing password two')]);
      expect(both.map((answer) => answer.status).sort()).toEqual([200, 403]);
      const winner = both[0]!.status === 200 ? 'racing password one' : 'racing password two';
      expect((await signIn(user.email, winner)).status).toBe(200);
    } finally {
      await settings({ requireReauthForPasswordChange: false });
    }
  });

  it('is required for an email change too when the project says so (else a stolen token changes the email, then resets the password); the request spends it', async () => {
    expect((await settings({ requireReauthForPasswordChange: true })).status).toBe(200);
    try {
      const user = await signUp();
      const taken = await signUp();
      const [thief, next] = [address(), address()];
      const ask = (newEmail: string) => call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail } });
      const refused = await ask(thief);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ code: 'reauthentication_required', hint: expect.stringContaining('POST /rest/v1/auth/reauth, then /rest/v1/auth/reauth/verify') });
      expect(await inbox(operator.token, thief)).toHaveLength(0);
      // Nor does the token learn which addresses have an account.
      expect((await ask(taken.email)).body.code).toBe('reauthentication_required');

      expect((await call('POST', '/rest/v1/auth/reauth', { headers: withToken(user.accessToken) })).status).toBe(200);
      const reauthCode = await codeFor(operator.token, user.email, { mentions: 'account app' });
      expect((await call('POST', '/rest/v1/auth/reauth/verify', { headers: withToken(user.accessToken), body: { otp: reauthCode } })).status).toBe(200);
      // A refused request (a taken address) spends nothing, and says nothing about the address before the reauthentication.
      expect((await ask(taken.email)).body.code).toBe('user_already_exists');
      expect((await ask(next)).status).toBe(200);
      // Spent by that request: neither another email change nor a password change goes through on it.
      expect((await ask(thief)).body.code).toBe('reauthentication_required');
      expect((await call('PATCH', '/rest/v1/auth/me', { headers: withToken(user.accessToken), body: { password: 'a much newer password' } })).body.code).toBe('reauthentication_required');
      // The code of the request it let through completes the change.
      const verified = await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp: await codeFor(operator.token, next) } });
      expect(verified.status, verified.text).toBe(200);
      expect(verified.body.user.email).toBe(next);
    } finally {
      await settings({ requireReauthForPasswordChange: false });
    }
  });

  it('needs a signed-in user', async () => {
    expect((await call('POST', '/rest/v1/auth/reauth', { headers: anon() })).status).toBe(401);
  });
});

describe('change-email', () => {
  it('moves the account to the new address once its code comes back', async () => {
    const user = await signUp();
    const next = address();
    const asked = await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: next } });
    expect(asked.status, asked.text).toBe(200);
    const otp = await codeFor(operator.token, next, { mentions: 'account app' });
    // Nothing changed yet.
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(user.accessToken) })).body.email).toBe(user.email);
    const verified = await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp } });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user).toMatchObject({ id: user.user.id, email: next, emailVerified: true });
    expect((await signIn(next)).status).toBe(200);
    expect((await signIn(user.email)).status).toBe(400);
  });

  it('refuses an address another user has, and sends nothing', async () => {
    const taken = await signUp();
    const user = await signUp();
    const answer = await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: taken.email.toUpperCase() } });
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe('user_already_exists');
    expect(await inbox(operator.token, taken.email)).toHaveLength(0);
  });

  it('takes only the code of this user’s own change, and burns it after five wrong tries', async () => {
    const user = await signUp();
    const intruder = await signUp();
    const next = address();
    await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: next } });
    const otp = await codeFor(operator.token, next);
    const stolen = await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(intruder.accessToken), body: { otp } });
    expect(stolen.status).toBe(422);
    const wrong = otp === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      expect((await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp: wrong } })).body.code).toBe('otp_invalid');
    }
    expect((await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp } })).status).toBe(422);
    // resend for the pending change issues a fresh code to the new address.
    expect((await call('POST', '/rest/v1/auth/resend', { headers: anon(), body: { email: next, type: 'email_change' } })).status).toBe(200);
    const fresh = await codeFor(operator.token, next, { after: 1 });
    expect((await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp: fresh } })).status).toBe(200);
  });

  it('resends nothing for an address the user has moved on from, and leaves their pending change alone', async () => {
    const user = await signUp();
    const [first, second] = [address(), address()];
    expect((await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: first } })).status).toBe(200);
    await codeFor(operator.token, first);
    expect((await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: second } })).status).toBe(200);
    const otp = await codeFor(operator.token, second);
    // Anyone with the anon key may ask; the answer is the same whatever it does.
    const resent = await call('POST', '/rest/v1/auth/resend', { headers: anon(), body: { email: first, type: 'email_change' } });
    expect(resent.status).toBe(200);
    const verified = await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp } });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user.email).toBe(second);
    expect(await inbox(operator.token, first)).toHaveLength(1);
  });

  it('resends nothing once the change is done', async () => {
    const user = await signUp();
    const next = address();
    await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: next } });
    const otp = await codeFor(operator.token, next);
    expect((await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp } })).status).toBe(200);
    expect((await call('POST', '/rest/v1/auth/resend', { headers: anon(), body: { email: next, type: 'email_change' } })).status).toBe(200);
    // A resend that did go out arrives within this, as the pending change's resend above does.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await inbox(operator.token, next)).toHaveLength(1);
  });

  it('stores the new address lowercased', async () => {
    const user = await signUp();
    const next = `Next-${randomUUID()}@Example.com`;
    await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail: next } });
    const verified = await call('POST', '/rest/v1/auth/change-email/verify', { headers: withToken(user.accessToken), body: { otp: await codeFor(operator.token, next) } });
    expect(verified.body.user.email).toBe(next.toLowerCase());
  });

  it('refuses a bad address before sending anything', async () => {
    const user = await signUp();
    for (const newEmail of ['not an address', ...MISLEADING_ADDRESSES]) {
      const answer = await call('POST', '/rest/v1/auth/change-email', { headers: withToken(user.accessToken), body: { newEmail } });
      expect([newEmail, answer.status, answer.body.code]).toEqual([newEmail, 400, 'invalid_email']);
    }
  });
});

describe('invite', () => {
  it('is for the service key only', async () => {
    const answer = await call('POST', '/rest/v1/auth/invite', { headers: anon(), body: { email: address() } });
    expect(answer.status).toBe(403);
    expect(answer.body.code).toBe('service_key_required');
  });

  it('makes the user and mails a code that signs them in through magic-link/verify', async () => {
    expect((await settings({ redirectUrls: ['https://app.example.com/welcome'] })).status).toBe(200);
    const email = address();
    const answer = await call('POST', '/rest/v1/auth/invite', { headers: apikey(project.serviceKey), body: { email, redirectTo: 'https://app.example.com/welcome/team' } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.user).toMatchObject({ email, emailVerified: false, providers: [] });
    const [message] = await inbox(operator.token, email);
    expect(message?.subject).toContain('invited');
    expect(message?.text).toContain('https://app.example.com/welcome/team');
    const otp = await codeFor(operator.token, email);
    const session = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: anon(), body: { otp, email } });
    expect(session.status, session.text).toBe(200);
    expect(session.body.user).toMatchObject({ id: answer.body.user.id, emailVerified: true });
  });

  it('passes over a stored redirect URL that does not parse, recorded before the settings API refused them', async () => {
    const invite = (redirectTo: string) => call('POST', '/rest/v1/auth/invite', { headers: apikey(project.serviceKey), body: { email: address(), redirectTo } });
    expect((await settings({ redirectUrls: ['http://app.example.com:99999/'] })).status).toBe(400);
    await recordSettingsOfOld({ redirectUrls: ['http://app.example.com:99999/', 'http://[::1', 'http://app.example.com/welcome'] });
    try {
      const answer = await invite('http://app.example.com/welcome');
      expect(answer.status, answer.text).toBe(200);
      const outside = await invite('http://app.example.com/elsewhere');
      expect([outside.status, outside.body.code]).toEqual([400, 'redirect_to_not_allowed']);
    } finally {
      expect((await settings({ redirectUrls: [] })).status).toBe(200);
    }
  });

  it('refuses a redirect outside the project’s redirect URLs, and an existing user', async () => {
    const outside = await call('POST', '/rest/v1/auth/invite', { headers: apikey(project.serviceKey), body: { email: address(), redirectTo: 'https://evil.example.net/welcome' } });
    expect(outside.status).toBe(400);
    expect(outside.body.code).toBe('redirect_to_not_allowed');
    // A redirect URL's path allows what lies below it, not every path that begins with the same letters.
    expect((await settings({ redirectUrls: ['https://app.example.com/welcome'] })).status).toBe(200);
    for (const redirectTo of ['https://app.example.com/welcome-evil', 'https://app.example.com/welcomex/team', 'https://app.example.com/welcome/../admin']) {
      const beside = await call('POST', '/rest/v1/auth/invite', { headers: apikey(project.serviceKey), body: { email: address(), redirectTo } });
      expect([redirectTo, beside.status, beside.body.code]).toEqual([redirectTo, 400, 'redirect_to_not_allowed']);
    }
    const user = await signUp();
    const again = await call('POST', '/rest/v1/auth/invite', { headers: apikey(project.serviceKey), body: { email: user.email } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('user_already_exists');
  });
});
