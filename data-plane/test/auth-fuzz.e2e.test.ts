/**
 * The end-user auth API (`/rest/v1/auth/*`, and its `/api/rest/v1` alias)
 * against generated requests: bodies of each route's own fields with
 * plausible-but-wrong values (wrong types, fields left out or added, huge
 * strings, unicode, NUL), bodies that are not JSON or not the type they say,
 * apikey and Authorization variants, tokens forged, expired, tampered with or
 * of another project (fast-check, seeded: a failure names the seed and the
 * shrunk request; `FUZZ_SEED`, `FUZZ_RUNS` repeat or widen a run). Whatever a
 * request says, the answer is never a 5xx, a refusal has API.md's error shape,
 * no answer shows a stack, our SQL, a password hash or a secret, a refused
 * request makes no user and changes neither the signed-in user nor their
 * session, and what is not a refusal has API.md's shapes. A 429 is a right
 * answer: the code and sign-in limits are a feature.
 */
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { emailKey } from '@baseplane/contracts';
import { bearer, call, dataPlanesCaughtUp } from '../../deploy/test/http';
import { fuzzRuns } from '../../deploy/test/generated';
import type { TenantDatabase } from '../../deploy/test/tenant';
import { PASSWORD, fixture, forged, other, otherTenant, otherUser, p, problemOf, seldom, send, signIn, tenant, useFuzzApp, type Received } from './fuzz-fixtures';

useFuzzApp('auth fuzz');

beforeAll(async () => {
  // The other project mails a code at sign-up (in the sign-up's transaction) and asks a reauthentication before a password change.
  const settings = await call('PATCH', `/api/projects/${other.project.id}/auth/settings`, { headers: bearer(other.operator.token), body: { requireEmailVerification: true, requireReauthForPasswordChange: true } });
  expect(settings.status, settings.text).toBeLessThan(300);
  await dataPlanesCaughtUp(5000);
});

const AUTH_ROUTES: Array<[string, string]> = [
  ['POST', 'signup'], ['POST', 'signup'], ['POST', 'signin'], ['POST', 'signin'], ['POST', 'refresh'], ['POST', 'refresh'],
  ['GET', 'me'], ['PATCH', 'me'], ['PATCH', 'me'], ['POST', 'logout'], ['POST', 'resend'], ['POST', 'verify-email'],
  ['POST', 'forgot-password'], ['POST', 'reset-password'], ['POST', 'magic-link'], ['POST', 'magic-link/verify'],
  ['POST', 'change-email'], ['POST', 'change-email/verify'], ['POST', 'reauth'], ['POST', 'reauth/verify'], ['POST', 'invite'], ['POST', 'invite'],
  ['GET', '.well-known/jwks.json'], ['GET', 'signin/google'], ['POST', 'token'], ['PUT', 'user'],
];

const FIELDS = ['email', 'password', 'firstName', 'lastName', 'username', 'refreshToken', 'scope', 'otp', 'newPassword', 'newEmail', 'type', 'redirectTo', 'avatarUrl', 'emailVerified', 'role', 'id', 'grant_type', 'refresh_token', '__proto__', 'constructor'];

/** Addresses: fresh ones (the run's number in them), the fixture's in several cases, and ones that are not addresses. */
const email = fc.oneof(
  { weight: 4, arbitrary: fc.nat(300).map((n) => `fz-${n}@example.com`) },
  { weight: 2, arbitrary: fc.constantFrom('fixture', 'FIXTURE', ' fixture') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '', 'a', '@', 'a@b', 'a@b.c', 'a@@b.com', 'a b@example.com', 'a@example.com\u0000', '\u0000@example.com', 'a@example.com, b@example.com', '<a@example.com>', '"a"@example.com',
      'a@[127.0.0.1]', 'ü@exämple.com', 'dİnç@example.com', '🙂@example.com', 'a@example.com\r\nBcc: b@example.com', 'a@-example.com', `${'a'.repeat(300)}@example.com`, `a@${'b'.repeat(400)}.com`,
      'a@example.com\u202e', 'a\ud800@example.com', '.a@example.com', 'a..b@example.com', 'refuse@example.invalid',
    ),
  },
);
const text = fc.oneof(
  fc.constantFrom('', ' ', PASSWORD, 'short', 'x'.repeat(1025), 'x'.repeat(5000), '\u0000', 'a\u0000b', '\ud800', '🙂'.repeat(300), 'é', 'null', 'undefined', '0', 'true', '{}', "'; drop table auth.users; --", '$1', '%00', '../..'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const otp = fc.oneof(fc.constantFrom('000000', '123456', '999999', '12345', '1234567', '0', ' 123456', '123456\u0000', '１２３４５６', '1e5', '-12345', 'x'.repeat(33)), fc.integer({ min: 0, max: 999_999 }).map((n) => String(n).padStart(6, '0')));
const token = fc.constantFrom('fixture-refresh', 'fixture-access', 'tampered-refresh', 'garbage', '', 'x'.repeat(600), 'AAAA', 'a.b.c');
const oddValue = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e309 as number, Number.MAX_SAFE_INTEGER + 2, [], {}, [PASSWORD], { email: 'a@example.com' }, ['fixture']),
  fc.jsonValue({ maxDepth: 2 }),
);
const valueFor = (field: string): fc.Arbitrary<unknown> => {
  const typical: Record<string, fc.Arbitrary<unknown>> = {
    email, newEmail: email, password: fc.oneof(fc.constant(PASSWORD), text), newPassword: fc.oneof(fc.constant(PASSWORD), text), firstName: text, lastName: text, username: text, avatarUrl: text,
    refreshToken: token, refresh_token: token, otp, scope: fc.constantFrom('local', 'global', 'others', 'GLOBAL', ''),
    type: fc.constantFrom('signup', 'email_change', 'recovery', 'magiclink', 'invite', ''),
    redirectTo: fc.constantFrom('https://example.com/welcome', 'http://localhost:3000', 'javascript:alert(1)', 'not a url', '//evil.example', 'https://evil.example', 'https://\u0000', ''),
  };
  return fc.oneof({ weight: 8, arbitrary: Object.hasOwn(typical, field) ? typical[field]! : text }, { weight: 1, arbitrary: oddValue });
};
const field = fc.constantFrom(...FIELDS);
/** The fields each route reads (API.md → End-user auth). */
const ROUTE_FIELDS: Record<string, string[]> = {
  signup: ['email', 'password', 'firstName', 'lastName', 'username'], signin: ['email', 'password'], refresh: ['refreshToken'], me: ['firstName', 'lastName', 'username', 'password'],
  logout: ['scope'], resend: ['email', 'type'], 'verify-email': ['otp', 'email'], 'forgot-password': ['email'], 'reset-password': ['otp', 'newPassword', 'email'],
  'magic-link': ['email'], 'magic-link/verify': ['otp', 'email'], 'change-email': ['newEmail'], 'change-email/verify': ['otp'], 'reauth/verify': ['otp'], invite: ['email', 'redirectTo'],
};
/** A body of the route's own fields, each now and then left out or of another type, now and then one field more. */
const fieldsBody = (route: string) => {
  const own = ROUTE_FIELDS[route] ?? [];
  const entries = own.map((name) => fc.option(valueFor(name).map((value) => [name, value] as const), { freq: 8 }));
  const extra = seldom(field.chain((name) => valueFor(name).map((value) => [name, value] as const)), 8);
  return fc.tuple(fc.tuple(...entries), extra).map(([chosen, more]) => ({ kind: 'json' as const, value: Object.fromEntries([...chosen, more].filter((entry) => entry !== null)) }));
};
const authBody = (route: string) => fc.oneof(
  { weight: 12, arbitrary: fieldsBody(route) },
  { weight: 2, arbitrary: fc.array(field.chain((name) => valueFor(name).map((value) => [name, value] as const)), { maxLength: 5 }).map((entries) => ({ kind: 'json' as const, value: Object.fromEntries(entries) })) },
  { weight: 1, arbitrary: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ email: { $gt: '' } })).map((value) => ({ kind: 'json' as const, value })) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('', '{', '{"email":', '{"email":"a@example.com",}', 'null', '[]', '"x"', '{"email":"a@example.com","email":"b@example.com"}', '\u0000', '{"a":1}\u0000', `{"password":"${'9'.repeat(20000)}"}`, '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', '{"__proto__":{"polluted":true}}')
      .map((raw) => ({ kind: 'raw' as const, value: raw })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const, value: undefined }) },
);
const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom(undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/vnd.api+json', 'application/jsonx', 'APPLICATION/JSON', '', '*/*') },
);
const apikeyKind = fc.constantFrom('anon', 'anon', 'anon', 'anon', 'service', 'none', 'garbage', 'other', 'query-anon', 'empty', 'both');
const authorizationKind = fc.constantFrom('none', 'none', 'user', 'user', 'user', 'anon-key', 'lowercase', 'other-project', 'basic', 'bare', 'empty', 'two-spaces', 'garbage', 'tampered', ...Object.keys({ expired: 1, otherRef: 1, otherUser: 1, oddSession: 1, oddSub: 1, numericSub: 1, noExp: 1 }));

const authRequest = fc.constantFrom(...AUTH_ROUTES).chain((route) => fc.record({
  route: fc.constant(route),
  method: seldom(fc.constantFrom('GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'HEAD', 'OPTIONS')),
  prefix: fc.constantFrom('/rest/v1/auth/', '/rest/v1/auth/', '/api/rest/v1/auth/'),
  suffix: seldom(fc.constantFrom('/', '?x=1', '?apikey=', '%00', '/..', '?scope=global', '/.', '//', '%2F')).map((suffix) => suffix ?? ''),
  body: authBody(route[1]),
  contentType,
  apikey: apikeyKind,
  authorization: authorizationKind,
  ip: fc.oneof(
    { weight: 12, arbitrary: fc.tuple(fc.nat(255), fc.nat(255)).map(([a, b]) => `10.200.${a}.${b}`) },
    { weight: 1, arbitrary: fc.constantFrom('', 'garbage', '::1', '2001:db8::1', '10.200.0.1, 10.200.0.2', 'unknown', 'x'.repeat(300), '999.999.999.999', '10.200.0.1:8080') },
  ),
  extraHeader: seldom(fc.constantFrom<[string, string]>(['content-encoding', 'gzip'], ['content-encoding', 'identity'], ['accept', 'text/html'], ['accept-encoding', 'gzip'], ['origin', 'https://evil.example'], ['x-http-method-override', 'DELETE'], ['cookie', 'sb-access-token=x'])),
}));
type AuthRequest = typeof authRequest extends fc.Arbitrary<infer T> ? T : never;

/** A value of the generated body with its placeholders ('fixture', 'fixture-refresh'…) put in. */
function materialise(value: unknown): unknown {
  if (value === 'fixture') return fixture.email;
  if (value === 'FIXTURE') return fixture.email.toUpperCase();
  if (value === ' fixture') return ` ${fixture.email}`;
  if (value === 'fixture-refresh') return fixture.refreshToken;
  if (value === 'fixture-access') return fixture.token;
  if (value === 'tampered-refresh') return `${fixture.refreshToken.slice(0, -3)}${fixture.refreshToken.endsWith('AAA') ? 'BBB' : 'AAA'}`;
  if (Array.isArray(value)) return value.map(materialise);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, materialise(v)]));
  return value;
}

function authHeaders(generated: AuthRequest): { headers: Record<string, string>; query: string } {
  const headers: Record<string, string> = { 'x-forwarded-for': generated.ip, ...(generated.extraHeader ? { [generated.extraHeader[0]]: generated.extraHeader[1] } : {}) };
  let query = '';
  switch (generated.apikey) {
    case 'anon': headers.apikey = p.project.anonKey; break;
    case 'service': headers.apikey = p.project.serviceKey; break;
    case 'garbage': headers.apikey = 'garbage'; break;
    case 'other': headers.apikey = other.project.anonKey; break;
    case 'query-anon': query = `apikey=${encodeURIComponent(p.project.anonKey)}`; break;
    case 'empty': headers.apikey = ''; break;
    case 'both': headers.apikey = other.project.anonKey; query = `apikey=${encodeURIComponent(p.project.anonKey)}`; break;
  }
  const bearerOf: Record<string, () => string | undefined> = {
    none: () => undefined,
    user: () => `Bearer ${fixture.token}`,
    'anon-key': () => `Bearer ${p.project.anonKey}`,
    lowercase: () => `bearer ${fixture.token}`,
    'other-project': () => `Bearer ${otherUser.token}`,
    basic: () => 'Basic dXNlcjpwYXNz',
    bare: () => 'Bearer',
    empty: () => 'Bearer ',
    'two-spaces': () => `Bearer  ${fixture.token}`,
    garbage: () => 'Bearer garbage',
    tampered: () => `Bearer ${fixture.token.slice(0, -4)}AAAA`,
  };
  const authorization = generated.authorization in bearerOf ? bearerOf[generated.authorization]!() : `Bearer ${forged[generated.authorization]}`;
  if (authorization !== undefined) headers.authorization = authorization;
  return { headers, query };
}

/** The addresses some answer made a user of (a sign-up, a magic link, an invitation that succeeded). */
const created = new Set<string>();

const USER_KEYS = ['avatarUrl', 'createdAt', 'email', 'emailVerified', 'firstName', 'id', 'lastName', 'lastSignInAt', 'providers', 'updatedAt', 'username'];
const SESSION_KEYS = ['accessToken', 'expiresIn', 'refreshToken', 'tokenType'];

/** What an answer that is not a refusal may not be: another shape than API.md's, or one telling whether an address has an account. */
function answerProblem(route: string, answer: Received): string | undefined {
  if (answer.status >= 300 || answer.body === null || answer.body === undefined) return undefined;
  const keys = (value: unknown) => Object.keys(value as object).sort().join(',');
  const user = route === 'me' ? answer.body : answer.body.user;
  if (user !== undefined && keys(user) !== USER_KEYS.join(',')) return `a user of another shape: ${keys(user)}`;
  if (['signup', 'signin', 'magic-link/verify'].includes(route) && keys(answer.body) !== [...SESSION_KEYS, 'user'].sort().join(',')) return `a session of another shape: ${keys(answer.body)}`;
  if (route === 'refresh' && keys(answer.body) !== SESSION_KEYS.join(',')) return `a refreshed session of another shape: ${keys(answer.body)}`;
  // Known address or not, the same answer.
  if (['forgot-password', 'resend', 'magic-link'].includes(route) && answer.body.message !== 'if this address can receive a code, one is on its way') return `an answer that may tell an account: ${answer.text}`;
  return undefined;
}

/** The fixture user's row and whether the session of its token is live. */
async function fixtureState(): Promise<unknown> {
  const sessionId = decodeJwt(fixture.token).session_id;
  const { rows } = await tenant.client.query(
    `select u.email, u.encrypted_password, u.first_name, u.last_name, u.username, u.email_verified_at, u.updated_at, s.revoked_at is null as live
     from auth.users u left join auth.sessions s on s.id = $2 where u.id = $1`,
    [fixture.id, sessionId],
  );
  return rows[0];
}

async function usersWith(db: TenantDatabase, address: string): Promise<number> {
  return (await db.client.query('select count(*)::int as n from auth.users where email = $1', [emailKey(address)])).rows[0].n;
}

describe('generated auth requests', () => {
  it('never answer a 5xx, refuse in the error shape without internals, and make no user nor change the signed-in one when they refuse', async () => {
    let ran = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(authRequest, async (generated) => {
        ran++;
        const [routeMethod, route] = generated.route;
        const method = generated.method ?? routeMethod;
        const { headers, query } = authHeaders(generated);
        let body: string | undefined;
        if (generated.body.kind === 'json') body = JSON.stringify(materialise(generated.body.value));
        else if (generated.body.kind === 'raw') body = generated.body.value;
        if (method === 'GET' || method === 'HEAD') body = undefined;
        if (body !== undefined && generated.contentType !== undefined) headers['content-type'] = generated.contentType;
        const suffix = generated.suffix.startsWith('?') && query ? `${generated.suffix}&${query}` : `${generated.suffix}${query ? `?${query}` : ''}`;
        const path = `${generated.prefix}${route}${suffix}`;
        const typed = generated.body.kind === 'json' ? (materialise(generated.body.value) as Record<string, unknown> | null) : null;
        const address = typed && typeof typed === 'object' && !Array.isArray(typed) && typeof typed.email === 'string' ? typed.email : undefined;
        const known = address !== undefined && (emailKey(address) === emailKey(fixture.email) || created.has(emailKey(address)) || emailKey(address) === emailKey(otherUser.email));
        // The project the request's key names: the other one's settings require verified addresses and reauthentication.
        const db = generated.apikey === 'other' || generated.apikey === 'both' ? otherTenant : tenant;
        const before = address !== undefined && !known && /^[^\u0000\ud800-\udfff]*$/.test(address) ? await usersWith(db, address) : undefined;

        // A refused request carrying the fixture's session changes neither the user nor the session (a refresh may: a
        // token spent before, presented again, revokes its session).
        const asFixture = ['user', 'lowercase', 'two-spaces'].includes(generated.authorization) && route !== 'refresh';
        const fixtureBefore = asFixture ? await fixtureState() : undefined;
        const answer = await send(method, path, headers, body);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const problem = problemOf(answer, method) ?? answerProblem(route, answer);
        expect(problem, `${method} ${path} ${JSON.stringify(headers)} ${JSON.stringify(body)?.slice(0, 500)}`).toBeUndefined();

        if (fixtureBefore !== undefined && answer.status >= 300) {
          expect(await fixtureState(), `${method} ${path} was refused (${answer.text.slice(0, 200)}) but changed the user or session`).toEqual(fixtureBefore);
        }
        // Something the fuzz did may have ended the fixture's session or changed its password: it starts again from a live one.
        if (route === 'refresh' && answer.status === 200 && typed?.refreshToken === fixture.refreshToken) {
          fixture.refreshToken = answer.body.refreshToken;
          fixture.token = answer.body.accessToken;
        }
        if ((answer.status < 300 && ['logout', 'me', 'reset-password'].includes(route) && method !== 'GET') || answer.body?.code === 'refresh_token_reused') {
          if (route === 'me' && typeof typed?.password === 'string') fixture.password = typed.password;
          await signIn().catch(() => undefined);
        }
        if (answer.status < 300 && address !== undefined && ['signup', 'magic-link', 'invite'].includes(route)) created.add(emailKey(address));
        // A refused request makes no user (nor one under another case of its address).
        if (before !== undefined && answer.status >= 300) {
          expect(await usersWith(db, address!), `${method} ${path} left a user ${address}: ${answer.text}`).toBe(before);
        }
      }),
      fuzzRuns(2000),
    );
    console.log(`auth fuzz: ${ran} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  }, 600_000);
});
