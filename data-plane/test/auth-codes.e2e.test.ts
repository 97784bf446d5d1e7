/**
 * The emailed-code flows end to end: codes go out through the real SMTP dev
 * inbox and are read back from it; verify-email, password reset, magic links;
 * expiry, five wrong tries, reuse, rate limits; answers that take as long for
 * an unknown address as for a known one; codes stored hashed, never logged.
 */
import { randomUUID } from 'node:crypto';
import { expect, describe, it, beforeAll, afterAll } from 'vitest';
import { MISLEADING_ADDRESSES } from '../../deploy/test/addresses';
import { bearer, call, createProject, scenarios, signUpOperator, someIp, type Answer, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import pg from 'pg';
import { connectTenant, tenantUrl, type TenantDatabase } from '../../deploy/test/tenant';
import { codeFor as readCode, inbox } from '../../deploy/test/inbox';
import { serviceLogLines } from '../../deploy/test/logs';
import { expectSameTime } from './auth-timing';

let operator: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
const issued: string[] = [];
const key = (extra: Record<string, string> = {}) => ({ apikey: project.anonKey, ...extra });
const address = () => `user-${randomUUID()}@example.com`;
const password = 'correct horse battery';

/** The newest code mailed to `to`, read from the dev inbox. */
async function codeFor(to: string, after = 0): Promise<string> {
  const code = await readCode(operator.token, to, { after, mentions: 'auth codes app' });
  issued.push(code);
  return code;
}

const inboxSize = async (to: string) => (await inbox(operator.token, to)).length;

/** From a client address of its own: this file signs up more users than one IP may in five minutes. */
async function signUp(email: string) {
  const answer = await call('POST', '/rest/v1/auth/signup', { headers: key({ 'x-forwarded-for': someIp() }), body: { email, password } });
  expect(answer.status, answer.text).toBe(201);
  return answer.body;
}

beforeAll(async () => {
  operator = await signUpOperator('Codes');
  project = await createProject(operator, 'auth codes app');
  tenant = await connectTenant(project.id);
});
afterAll(async () => {
  await tenant.end();
});

describe('verify-email', () => {
  it('verifies with the emailed code and the address, once', async () => {
    const email = address();
    const session = await signUp(email);
    expect(session.user.emailVerified).toBe(false);
    expect((await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } })).status).toBe(200);
    const otp = await codeFor(email);
    const verified = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp, email } });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user).toMatchObject({ email, emailVerified: true });
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).body.emailVerified).toBe(true);
    const again = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp, email } });
    expect(again.status).toBe(422);
    expect(again.body.code).toBe('otp_invalid');
  });

  it('finds the code among the live ones when no address is given', async () => {
    const email = address();
    await signUp(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    const verified = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp: await codeFor(email) } });
    expect(verified.body.user).toMatchObject({ email, emailVerified: true });
  });

  it('takes the anon key as the Bearer (how Supabase-style clients call) for no session: the code finds its user', async () => {
    const email = address();
    await signUp(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    const verified = await call('POST', '/rest/v1/auth/verify-email', { headers: { ...key(), ...bearer(project.anonKey) }, body: { otp: await codeFor(email) } });
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.user).toMatchObject({ email, emailVerified: true });
  });

  it('refuses an expired code with otp_expired', async () => {
    const email = address();
    await signUp(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    const otp = await codeFor(email);
    await tenant.client.query(`update auth.one_time_codes set expires_at = now() - interval '1 second' where lower(email) = lower($1)`, [email]);
    const answer = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp, email } });
    expect(answer.status).toBe(422);
    expect(answer.body.code).toBe('otp_expired');
  });

  it('burns a code after five wrong tries: the right one is refused after', async () => {
    const email = address();
    await signUp(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    const otp = await codeFor(email);
    const wrong = otp === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      const answer = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp: wrong, email } });
      expect(answer.body.code).toBe('otp_invalid');
    }
    const right = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp, email } });
    expect(right.status).toBe(422);
    expect(right.body.code).toBe('otp_invalid');
    // A new code works again.
    const before = await inboxSize(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    const fresh = await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp: await codeFor(email, before), email } });
    expect(fresh.status).toBe(200);
  });

  it('resends to an unverified user in the time it answers an unknown address (the mail goes after the answer)', async () => {
    const known: string[] = [];
    for (let i = 0; i < 11; i++) known.push((await signUp(address())).user.email);
    const resend = (email: string) => call('POST', '/rest/v1/auth/resend', { headers: key({ 'x-forwarded-for': someIp() }), body: { email, type: 'signup' } });
    await expectSameTime((i) => resend(known[i]!), () => resend(address()));
    expect(await codeFor(known[10]!)).toMatch(/^\d{6}$/);
  });
});

describe('password reset', () => {
  it('resets with the emailed code and ends every session', async () => {
    const email = address();
    const session = await signUp(email);
    expect((await call('POST', '/rest/v1/auth/forgot-password', { headers: key(), body: { email } })).status).toBe(200);
    const otp = await codeFor(email);
    const reset = await call('POST', '/rest/v1/auth/reset-password', { headers: key(), body: { otp, email, newPassword: 'a brand new password' } });
    expect(reset.status, reset.text).toBe(200);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(401);
    expect((await call('POST', '/rest/v1/auth/refresh', { headers: key(), body: { refreshToken: session.refreshToken } })).body.code).toBe('refresh_token_invalid');
    expect((await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } })).status).toBe(400);
    expect((await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password: 'a brand new password' } })).status).toBe(200);
  });

  it('answers an unknown address exactly like a known one, and sends nothing', async () => {
    const nobody = address();
    const known = address();
    await signUp(known);
    const a = await call('POST', '/rest/v1/auth/forgot-password', { headers: key(), body: { email: nobody } });
    const b = await call('POST', '/rest/v1/auth/forgot-password', { headers: key(), body: { email: known } });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
    await codeFor(known);
    expect(await inboxSize(nobody)).toBe(0);
  });

  it('answers a known address in the time it answers an unknown one (the mail goes after the answer)', async () => {
    const known: string[] = [];
    for (let i = 0; i < 11; i++) known.push((await signUp(address())).user.email);
    const forgot = (email: string) => call('POST', '/rest/v1/auth/forgot-password', { headers: key({ 'x-forwarded-for': someIp() }), body: { email } });
    await expectSameTime((i) => forgot(known[i]!), () => forgot(address()));
    expect(await codeFor(known[10]!)).toMatch(/^\d{6}$/);
  });

  it('verifies the address: the code reached it', async () => {
    const email = address();
    expect((await signUp(email)).user.emailVerified).toBe(false);
    await call('POST', '/rest/v1/auth/forgot-password', { headers: key(), body: { email } });
    const otp = await codeFor(email);
    expect((await call('POST', '/rest/v1/auth/reset-password', { headers: key(), body: { otp, email, newPassword: 'a brand new password' } })).status).toBe(200);
    const signedIn = await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password: 'a brand new password' } });
    expect(signedIn.body.user.emailVerified).toBe(true);
  });

  it('refuses a weak new password before spending the code', async () => {
    const answer = await call('POST', '/rest/v1/auth/reset-password', { headers: key(), body: { otp: '123456', newPassword: 'short' } });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('weak_password');
  });
});

describe('magic links', () => {
  describe('refuse an address a mailer reads as another mailbox', () => {
    scenarios(
      MISLEADING_ADDRESSES.map((misleading) => ({ name: `${misleading} is 400 invalid_email`, method: 'POST', url: '/rest/v1/auth/magic-link', headers: () => key({ 'x-forwarded-for': someIp() }), body: { email: misleading }, expectedStatus: 400, expectedContent: ['invalid_email'] })),
    );

    it('and mails nothing to the mailbox inside it', async () => {
      expect(await inboxSize('atk@example.com')).toBe(0);
    });
  });

  it('refuses an address longer than SMTP carries with 400 invalid_email, at sign-up too, and makes no user (was a 503, and a sign-up kept it)', async () => {
    // 255 bytes: one more than RFC 5321's path holds (the dev inbox refused it as any mail server would).
    const email = `${'a'.repeat(243 - 37)}-${randomUUID()}@example.com`;
    expect(Buffer.byteLength(email)).toBe(255);
    for (const [url, body] of [['/rest/v1/auth/magic-link', { email }], ['/rest/v1/auth/signup', { email, password }]] as const) {
      const answer = await call('POST', url, { headers: key({ 'x-forwarded-for': someIp() }), body });
      expect(answer.status, `${url}: ${answer.text}`).toBe(400);
      expect(answer.body.code).toBe('invalid_email');
    }
    expect((await tenant.client.query('select count(*)::int as n from auth.users where email = $1', [email])).rows[0].n).toBe(0);
  });

  it('creates the user, and the code signs them in with a verified address', async () => {
    const email = address();
    expect((await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } })).status).toBe(200);
    const otp = await codeFor(email);
    const session = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp, email } });
    expect(session.status, session.text).toBe(200);
    expect(session.body).toMatchObject({ tokenType: 'bearer', user: { email, emailVerified: true, providers: [] } });
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.body.accessToken) })).body.email).toBe(email);
    expect((await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp, email } })).status).toBe(422);
  });

  it('answers the session of the sign-in it makes: its lastSignInAt, as GET /me then shows it', async () => {
    const email = address();
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
    const session = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp: await codeFor(email), email } });
    expect(session.status, session.text).toBe(200);
    expect(session.body.user.lastSignInAt).not.toBeNull();
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.body.accessToken) })).body.lastSignInAt).toBe(session.body.user.lastSignInAt);
  });

  it('takes the address from whoever signed it up without proving it: their password stops working and their sessions end', async () => {
    const email = address();
    const squatter = await signUp(email);
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
    const owner = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp: await codeFor(email), email } });
    expect(owner.status, owner.text).toBe(200);
    expect(owner.body.user).toMatchObject({ id: squatter.user.id, emailVerified: true, providers: [] });
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(squatter.accessToken) })).status).toBe(401);
    expect((await call('POST', '/rest/v1/auth/refresh', { headers: key(), body: { refreshToken: squatter.refreshToken } })).body.code).toBe('refresh_token_invalid');
    expect((await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } })).body.code).toBe('invalid_credentials');
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(owner.body.accessToken) })).status).toBe(200);
  });

  it('leaves the password and sessions of a user whose address was already verified', async () => {
    const email = address();
    const session = await signUp(email);
    await call('POST', '/rest/v1/auth/resend', { headers: key(), body: { email, type: 'signup' } });
    expect((await call('POST', '/rest/v1/auth/verify-email', { headers: key(), body: { otp: await codeFor(email), email } })).status).toBe(200);
    const mailed = await inboxSize(email);
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
    const signedIn = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp: await codeFor(email, mailed), email } });
    expect(signedIn.status, signedIn.text).toBe(200);
    expect(signedIn.body.user.providers).toEqual(['email']);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(200);
    expect((await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password } })).status).toBe(200);
  });

  describe('what the squatter had on its way when the owner signed in', () => {
    /** Waits until `count` statements in the tenant database wait for a lock. */
    async function waiting(count: number): Promise<void> {
      await expect
        .poll(async () => Number((await tenant.client.query(`select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)).rows[0].count), { timeout: 10_000, interval: 20 })
        .toBeGreaterThanOrEqual(count);
    }

    /**
     * Holds the user's row so that the owner's magic-link sign-in waits for it, starts `squatterMove` once it waits
     * (it reads the account as it was, then waits behind the owner), and lets both go: the owner's goes first.
     */
    async function ownerSignsInDuring(squatter: { email: string; userId: string }, squatterMove: () => Promise<Answer>): Promise<{ owner: Answer; squatter: Answer }> {
      await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email: squatter.email } });
      const otp = await codeFor(squatter.email);
      const hold = new pg.Client({ connectionString: tenantUrl(project.id) });
      await hold.connect();
      try {
        await hold.query('begin');
        await hold.query('select 1 from auth.users where id = $1 for update', [squatter.userId]);
        const owner = call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp, email: squatter.email } });
        await waiting(1);
        const move = squatterMove();
        await waiting(2);
        await hold.query('rollback');
        return { owner: await owner, squatter: await move };
      } finally {
        await hold.end();
      }
    }

    it('a sign-in with the squatter’s password that read the account before opens no session after', async () => {
      const email = address();
      const { user } = await signUp(email);
      const answers = await ownerSignsInDuring({ email, userId: user.id }, () => call('POST', '/rest/v1/auth/signin', { headers: key({ 'x-forwarded-for': someIp() }), body: { email, password } }));
      expect(answers.owner.status, answers.owner.text).toBe(200);
      expect(answers.squatter.status, answers.squatter.text).toBe(400);
      expect(answers.squatter.body.code).toBe('invalid_credentials');
      const { rows } = await tenant.client.query('select count(*)::int as live from auth.sessions where user_id = $1 and revoked_at is null', [user.id]);
      expect(rows[0].live).toBe(1);
    });

    it('a password change by the squatter’s session, checked before, does not land after', async () => {
      const email = address();
      const squatter = await signUp(email);
      const answers = await ownerSignsInDuring({ email, userId: squatter.user.id }, () =>
        call('PATCH', '/rest/v1/auth/me', { headers: key(bearer(squatter.accessToken)), body: { password: 'the squatter’s next password' } }),
      );
      expect(answers.owner.status, answers.owner.text).toBe(200);
      expect(answers.squatter.status, answers.squatter.text).toBe(401);
      expect(answers.squatter.body.code).toBe('invalid_token');
      expect((await call('POST', '/rest/v1/auth/signin', { headers: key(), body: { email, password: 'the squatter’s next password' } })).status).toBe(400);
      expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(answers.owner.body.accessToken) })).status).toBe(200);
    });
  });

  it('keeps only the newest code of an address alive', async () => {
    const email = address();
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
    const first = await codeFor(email);
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
    const second = await codeFor(email, 1);
    if (first !== second) expect((await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp: first, email } })).status).toBe(422);
    expect((await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp: second, email } })).status).toBe(200);
  });

  it('answers 200 to five requests at once for a new address, and makes one user', async () => {
    const email = address();
    const answers = await Promise.all(Array.from({ length: 5 }, () => call('POST', '/rest/v1/auth/magic-link', { headers: key({ 'x-forwarded-for': someIp() }), body: { email } })));
    expect(answers.map((answer) => [answer.status, answer.body])).toEqual(Array(5).fill([200, { message: expect.any(String) }]));
    expect((await tenant.client.query('select id from auth.users where lower(email) = $1', [email])).rowCount).toBe(1);
    // Each request mailed a code (the later ones after their answers, in no set order); the one still live signs in.
    await codeFor(email, 4);
    const mailed = (await inbox(operator.token, email)).map((message) => /\b(\d{6})\b/.exec(message.text)![1]!);
    issued.push(...mailed);
    const statuses = [];
    for (const otp of new Set(mailed)) statuses.push((await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key(), body: { otp, email } })).status);
    expect(statuses).toContain(200);
  });

  it('never gives an invitation the digits of a live sign-in code: that code alone cannot sign in as the invitee', async () => {
    const attacker = address();
    await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email: attacker } });
    const otp = await codeFor(attacker);
    const invitee = address();
    const invited = await call('POST', '/rest/v1/auth/invite', { headers: { apikey: project.serviceKey }, body: { email: invitee } });
    expect(invited.status, invited.text).toBe(200);
    // The collision an audit forced: the invitation's live code given the hash of the attacker's live sign-in code.
    const forced = await tenant.client
      .query(
        `update auth.one_time_codes set code_hash = (select code_hash from auth.one_time_codes where purpose = 'magiclink' and email = $1 and used_at is null)
         where purpose = 'invite' and email = $2 and used_at is null`,
        [attacker, invitee],
      )
      .catch((error: { code?: string }) => error);
    expect((forced as { code?: string }).code).toBe('23505');
    // So the code alone (looked up among sign-in and invitation codes) is the attacker's own.
    const signedIn = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp } });
    expect(signedIn.status, signedIn.text).toBe(200);
    expect(signedIn.body.user.email).toBe(attacker);
  });
});

describe('rate limits', () => {
  it('limits codes sent to one address with 429 and Retry-After', async () => {
    const email = address();
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } }));
    expect(answers.slice(0, 5).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers[5]!.status).toBe(429);
    expect(answers[5]!.body.code).toBe('rate_limited');
    expect(Number(answers[5]!.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts the codes of every kind sent to one address, and tried for it, together: a magic link and a recovery code each open the account', async () => {
    const email = address();
    const ip = someIp();
    const send = (path: string) => call('POST', `/rest/v1/auth/${path}`, { headers: key({ 'x-forwarded-for': ip }), body: { email } });
    const sent = [await send('magic-link'), await send('magic-link'), await send('forgot-password'), await send('forgot-password'), await send('magic-link')];
    expect(sent.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await send('forgot-password')).status).toBe(429);

    const tries = [];
    for (let i = 0; i < 10; i++) tries.push(await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp: '000000', email } }));
    for (let i = 0; i < 10; i++) tries.push(await call('POST', '/rest/v1/auth/reset-password', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp: '000000', email, newPassword: 'a brand new password' } }));
    expect(tries.filter((a) => a.status === 429)).toHaveLength(0);
    const held = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp: '000000', email } });
    expect(held.status, held.text).toBe(429);
  });

  it('limits verifying per client IP, and another IP is not affected', async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 200) + 20}`;
    let last = 0;
    // Each with an address of its own: neither the per-address limit nor the code-only budget is reached.
    for (let i = 0; i < 201; i++) {
      last = (await call('POST', '/rest/v1/auth/verify-email', { headers: key({ 'x-forwarded-for': ip }), body: { otp: '000000', email: address() } })).status;
    }
    expect(last).toBe(429);
    const other = await call('POST', '/rest/v1/auth/verify-email', { headers: key({ 'x-forwarded-for': '203.0.113.9' }), body: { otp: '000000', email: address() } });
    expect(other.status).toBe(422);
  });

  describe('codes given without their address', () => {
    /** A wrong code: none of those mailed in this file. */
    const guess = (): string => {
      const otp = String(Math.floor(Math.random() * 1_000_000)).padStart(6, '0');
      return issued.includes(otp) ? guess() : otp;
    };

    it('fail at most 10 times in 15 minutes per purpose across the project, however many IPs try at once; then 429 says to send the address', async () => {
      for (const path of ['/rest/v1/auth/magic-link/verify', '/rest/v1/auth/verify-email']) {
        // Each from a client IP of its own, as guesses spread over many IPs come: the per-IP limit does not see them.
        const tries = await Promise.all(Array.from({ length: 16 }, () => call('POST', path, { headers: key({ 'x-forwarded-for': someIp() }), body: { otp: guess() } })));
        expect([path, tries.map((answer) => answer.status).sort((a, b) => a - b)]).toEqual([path, [...Array(10).fill(422), ...Array(6).fill(429)]]);
        const held = tries.find((answer) => answer.status === 429)!;
        expect(held.body).toMatchObject({ code: 'rate_limited', details: { retryAfter: expect.any(Number) }, hint: expect.stringContaining('email') });
        expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(800);
      }
      // The right code alone is held back too; with its address it goes through (that address's own limits apply).
      const email = address();
      await call('POST', '/rest/v1/auth/magic-link', { headers: key(), body: { email } });
      const otp = await codeFor(email);
      expect((await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp } })).status).toBe(429);
      const signedIn = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp, email } });
      expect(signedIn.status, signedIn.text).toBe(200);
    });

    it('spend the budget only when wrong: a code that matches gives its slot back', async () => {
      const email = (await signUp(address())).user.email as string;
      await call('POST', '/rest/v1/auth/forgot-password', { headers: key(), body: { email } });
      const otp = await codeFor(email);
      const reset = (code: string) => call('POST', '/rest/v1/auth/reset-password', { headers: key({ 'x-forwarded-for': someIp() }), body: { otp: code, newPassword: 'a brand new password' } });
      for (let i = 0; i < 9; i++) expect((await reset(guess())).status).toBe(422);
      expect((await reset(otp)).status).toBe(200);
      // The tenth failure: the right code's try did not count.
      expect((await reset(guess())).status).toBe(422);
      const held = await reset(guess());
      expect(held.status).toBe(429);
      expect(held.body.hint).toContain('email');
    });
  });
});

describe('what is kept', () => {
  it('stores codes only as keyed hashes, and never logs them', async () => {
    const { rows } = await tenant.client.query<{ row: string }>('select to_jsonb(c)::text as row from auth.one_time_codes c');
    expect(rows.length).toBeGreaterThan(0);
    for (const code of issued) for (const { row } of rows) expect(row).not.toContain(`"${code}"`);
    const logs = (await serviceLogLines('data-plane', 'control-plane', 'gateway')).join('\n');
    expect(logs, 'the logs were read').toContain('"part":"data-plane"');
    for (const code of issued) expect(logs).not.toMatch(new RegExp(`\\b${code}\\b`));
  });
});
