/**
 * The operators' side of end-user auth: `/api/projects/:id/auth/settings`
 * (a command recorded as an event, the SMTP URL sealed) and
 * `/api/projects/:id/auth/users` (list, add, update, delete), over HTTP
 * against the real stack, with who may call.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { MISLEADING_ADDRESSES } from '../../deploy/test/addresses';
import { apikey, bearer, call, createProject, projectEventTypes, scenarios, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
const settingsUrl = () => `/api/projects/${project.id}/auth/settings`;
const usersUrl = (suffix = '') => `/api/projects/${project.id}/auth/users${suffix}`;
const asAda = () => bearer(ada.token);
const password = 'correct horse battery';

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  project = await createProject(ada, 'auth admin app');
});

describe('auth settings', () => {
  it('starts at the documented defaults', async () => {
    const answer = await call('GET', settingsUrl(), { headers: asAda() });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      requireEmailVerification: false, allowSignups: true, accessTokenTtl: 3600, refreshTokenTtl: 2592000, otpTtl: 600,
      passwordMinLength: 8, siteUrl: null, redirectUrls: [], requireReauthForPasswordChange: false, smtp: null,
    });
  });

  it('records a change as one AuthSettingsUpdated event with only what changed, and answers the new settings', async () => {
    const before = (await projectEventTypes(project.id)).length;
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { otpTtl: 300, allowSignups: true, siteUrl: 'https://app.example.com' } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ otpTtl: 300, allowSignups: true, siteUrl: 'https://app.example.com', accessTokenTtl: 3600 });
    expect(await projectEventTypes(project.id, before)).toEqual(['AuthSettingsUpdated']);
    const events = await call('GET', `/api/projects/${project.id}/events?after=${before}`, { headers: asAda() });
    expect(events.body.events[0].data.changes).toEqual({ otpTtl: 300, siteUrl: 'https://app.example.com' });
    expect((await call('GET', settingsUrl(), { headers: asAda() })).body.otpTtl).toBe(300);
  });

  it('records nothing when the values are already in force', async () => {
    const before = (await projectEventTypes(project.id)).length;
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { otpTtl: 300 } });
    expect(answer.status).toBe(200);
    expect(await projectEventTypes(project.id, before)).toEqual([]);
  });

  it('keeps the SMTP URL sealed: its password is in neither the answer nor the history', async () => {
    const secret = `s3cret-${randomUUID()}`;
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { smtp: { url: `smtp://mailer:${secret}@127.0.0.1:2525`, from: 'App <app@example.com>' } } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.smtp).toEqual({ url: 'smtp://mailer:***@127.0.0.1:2525', from: 'App <app@example.com>' });
    const history = await call('GET', `/api/projects/${project.id}/events`, { headers: asAda() });
    expect(history.text).not.toContain(secret);
    expect(history.text).toContain('[encrypted]');
    expect((await call('PATCH', settingsUrl(), { headers: asAda(), body: { smtp: null } })).body.smtp).toBeNull();
  });

  it('lets the project’s service key read and change them', async () => {
    const answer = await call('PATCH', settingsUrl(), { headers: apikey(project.serviceKey), body: { passwordMinLength: 10 } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.passwordMinLength).toBe(10);
    await call('PATCH', settingsUrl(), { headers: apikey(project.serviceKey), body: { passwordMinLength: 8 } });
  });

  describe('refusals', () => {
    scenarios([
      { name: 'an unknown setting is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { theme: 'dark' }, expectedStatus: 400, expectedContent: ['invalid_request'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'an empty change is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: {}, expectedStatus: 400 },
      { name: 'a token lifetime under a minute is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { accessTokenTtl: 5 }, expectedStatus: 400, expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'an SMTP URL that is not smtp(s) is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { smtp: { url: 'http://x', from: 'a@b.c' } }, expectedStatus: 400 },
      { name: 'a redirect URL that is not http(s) is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { redirectUrls: ['javascript:alert(1)'] }, expectedStatus: 400 },
      // What the pattern lets through and new URL() refuses: the data plane compares redirects with them as URLs.
      { name: 'a redirect URL with a port past 65535 is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { redirectUrls: ['https://app.example.com/', 'http://app.example.com:99999/'] }, expectedStatus: 400, expectedContent: ['invalid_request', '/redirectUrls/1 must be a URL that parses'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a redirect URL with an unclosed IPv6 host is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { redirectUrls: ['http://[::1'] }, expectedStatus: 400, expectedContent: ['invalid_request'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a site URL that does not parse is 400', method: 'PATCH', url: settingsUrl, headers: asAda, body: { siteUrl: 'http://app.example.com:99999' }, expectedStatus: 400, expectedContent: ['invalid_request', '/siteUrl must be a URL that parses'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'the anon key is 403 service_key_required', method: 'GET', url: settingsUrl, headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
      { name: 'a member of another team is told 404', method: 'PATCH', url: settingsUrl, headers: () => bearer(bob.token), body: { otpTtl: 120 }, expectedStatus: 404, expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'no credentials is 401', method: 'GET', url: settingsUrl, expectedStatus: 401 },
    ]);
  });
});

describe('users', () => {
  const email = `Grace-${randomUUID()}@Example.com`;
  let userId: string;

  it('adds a user with a password who can then sign in', async () => {
    const answer = await call('POST', usersUrl(), { headers: asAda(), body: { email, password, emailVerified: true, firstName: 'Grace' } });
    expect(answer.status, answer.text).toBe(201);
    // Stored lowercased, as the data plane's sign-up stores them; signing in with the address as typed still works.
    expect(answer.body).toMatchObject({ email: email.toLowerCase(), emailVerified: true, firstName: 'Grace', providers: ['email'] });
    expect(answer.text).not.toMatch(/argon2|encrypted_password|passwordHash/);
    userId = answer.body.id;
    const signin = await call('POST', '/rest/v1/auth/signin', { headers: apikey(project.anonKey), body: { email, password } });
    expect(signin.status, signin.text).toBe(200);
  });

  it('refuses an email that exists, in any case, with 409', async () => {
    const answer = await call('POST', usersUrl(), { headers: asAda(), body: { email: email.toUpperCase() } });
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe('user_already_exists');
  });

  it('lists with search, paging and the total', async () => {
    const tag = randomUUID().slice(0, 8);
    for (let i = 0; i < 3; i++) {
      expect((await call('POST', usersUrl(), { headers: asAda(), body: { email: `list-${tag}-${i}@example.com` } })).status).toBe(201);
    }
    const page = await call('GET', usersUrl(`?search=${tag}&limit=2&offset=0`), { headers: asAda() });
    expect(page.status, page.text).toBe(200);
    expect(page.body.total).toBe(3);
    expect(page.body.users).toHaveLength(2);
    const rest = await call('GET', usersUrl(`?search=${tag}&limit=2&offset=2`), { headers: asAda() });
    expect(rest.body.users).toHaveLength(1);
    expect(new Set([...page.body.users, ...rest.body.users].map((u: { email: string }) => u.email)).size).toBe(3);
    // LIKE's wildcards in a search are literal.
    expect((await call('GET', usersUrl('?search=%25'), { headers: asAda() })).body.total).toBe(0);
  });

  it('updates a user; a new password ends their sessions', async () => {
    const session = (await call('POST', '/rest/v1/auth/signin', { headers: apikey(project.anonKey), body: { email, password } })).body;
    const answer = await call('PATCH', usersUrl(`/${userId}`), { headers: asAda(), body: { lastName: 'Hopper', username: 'grace', password: 'another good password' } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ lastName: 'Hopper', username: 'grace', firstName: 'Grace' });
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(401);
    expect((await call('POST', '/rest/v1/auth/signin', { headers: apikey(project.anonKey), body: { email, password: 'another good password' } })).status).toBe(200);
  });

  it('deletes a user: their sessions die at once', async () => {
    const session = (await call('POST', '/rest/v1/auth/signin', { headers: apikey(project.anonKey), body: { email, password: 'another good password' } })).body;
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(200);
    const answer = await call('DELETE', usersUrl(`/${userId}`), { headers: apikey(project.serviceKey) });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.id).toBe(userId);
    expect((await call('GET', '/rest/v1/auth/me', { headers: bearer(session.accessToken) })).status).toBe(401);
    const refresh = await call('POST', '/rest/v1/auth/refresh', { headers: apikey(project.anonKey), body: { refreshToken: session.refreshToken } });
    expect(refresh.body.code).toBe('refresh_token_invalid');
    expect((await call('DELETE', usersUrl(`/${userId}`), { headers: asAda() })).status).toBe(404);
  });

  describe('refusals', () => {
    scenarios([
      { name: 'a bad email is 400 invalid_email, as on the data plane', method: 'POST', url: () => usersUrl(), headers: asAda, body: { email: 'nope' }, expectedStatus: 400, expectedContent: ['invalid_email'] },
      ...MISLEADING_ADDRESSES.map((misleading) => ({ name: `${misleading}, another mailbox to a mailer, is 400 invalid_email`, method: 'POST', url: () => usersUrl(), headers: asAda, body: { email: misleading }, expectedStatus: 400, expectedContent: ['invalid_email'] })),
      { name: 'a short password is 400 weak_password', method: 'POST', url: () => usersUrl(), headers: asAda, body: { email: 'short@example.com', password: 'short' }, expectedStatus: 400, expectedContent: ['weak_password'] },
      { name: 'an unknown field is 400', method: 'POST', url: () => usersUrl(), headers: asAda, body: { email: 'x@example.com', role: 'admin' }, expectedStatus: 400 },
      { name: 'a user id that is no UUID is 400', method: 'PATCH', url: () => usersUrl('/1;drop'), headers: asAda, body: { firstName: 'x' }, expectedStatus: 400 },
      { name: 'an unknown user is 404', method: 'PATCH', url: () => usersUrl(`/${randomUUID()}`), headers: asAda, body: { firstName: 'x' }, expectedStatus: 404 },
      { name: 'a page size that is not a number is 400', method: 'GET', url: () => usersUrl('?limit=ten'), headers: asAda, expectedStatus: 400 },
      { name: 'the anon key is 403 service_key_required', method: 'GET', url: () => usersUrl(), headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
      { name: 'a member of another team is told 404', method: 'GET', url: () => usersUrl(), headers: () => bearer(bob.token), expectedStatus: 404 },
    ]);
  });
});
