/**
 * The end-user auth API (`/rest/v1/auth/*`) and the storage object routes
 * (`/storage/v1/object/{public,sign}/…`, `/api/projects/:id/storage/buckets/:name/objects…`)
 * against generated requests: bodies made of the routes' own field names with
 * plausible-but-wrong values, bodies that are not JSON or not the type they
 * say, keys and tokens forged, expired or of another project, signed-URL
 * tokens tampered with, odd paths and every shape of `Range` (fast-check,
 * seeded: a failure names the seed and the shrunk request; `FUZZ_SEED`,
 * `FUZZ_RUNS` repeat or widen a run). Whatever a request says, the answer is
 * never a 5xx (the dev inbox's 503 `email_unavailable` included: it refuses
 * only addresses the API no longer takes), a refusal has API.md's error shape, no answer shows a stack,
 * our SQL, a password hash or a secret, a refused request makes no user and
 * changes neither the signed-in user nor their session, and an object is
 * served only to a URL that may read it, its bytes and ranges as they are.
 */
import http from 'node:http';
import fc from 'fast-check';
import { SignJWT, decodeJwt, importJWK } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deriveSecret, emailKey, SecretBox } from '@baseplane/contracts';
import { bearer, call, dataPlanesCaughtUp } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { restProject, type RestProject } from './rest-fixtures';

const PASSWORD = 'correct horse battery';
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

interface Received {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: Buffer;
  text: string;
  body: any;
}

/** One request as sent on the wire: the path exactly as given (no URL normalisation), any body bytes. */
function send(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Received> {
  const base = new URL(inject('baseUrl'));
  const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const request = http.request({ host: base.hostname, port: base.port, method, path, agent, headers: sent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = undefined;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes, text, body: parsed });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

let p: RestProject;
let other: RestProject;
let tenant: TenantDatabase;
let otherTenant: TenantDatabase;
/** The fixture user: their email, and a live session (signed in again when the fuzz ends it). */
const fixture = { email: '', id: '', password: PASSWORD, token: '', refreshToken: '' };
let otherToken = '';
/** Access tokens signed with the project's own key: expired, of another project's ref, of another user, with odd claims. */
const forged: Record<string, string> = {};
/** Every secret no answer may show, and the ones no refusal may show. */
let neverShown: string[] = [];
let neverInRefusals: string[] = [];

const OBJECTS = { 'pics/a.txt': 'public bytes 0123456789', 'docs/a.txt': 'private bytes 0123456789', 'docs/dir/b c.txt': 'nested private bytes' } as Record<string, string>;
const OTHER_BYTES = 'the other project’s bytes';
/** Signed-URL tokens as they were handed out, and what each reads. */
const signed: Record<string, { token: string; object: string }> = {};
const storageTokens: Record<string, string> = {};
/** Each fixture object's `ETag` and `Last-Modified`, as its download answers them. */
const validators: Record<string, { etag: string; lastModified: string }> = {};

async function signIn(): Promise<void> {
  const answer = await call('POST', '/rest/v1/auth/signin', { headers: { ...p.anon, 'x-forwarded-for': '10.250.0.1' }, body: { email: fixture.email, password: fixture.password } });
  expect(answer.status, answer.text).toBe(200);
  fixture.token = answer.body.accessToken;
  fixture.refreshToken = answer.body.refreshToken;
}

async function resign(token: string, changes: Record<string, unknown>): Promise<string> {
  const db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  try {
    const { rows } = await db.query(`select data from events where stream_id = $1 and type = 'SigningKeyIssued' order by stream_version desc limit 1`, [`project-${p.project.id}`]);
    const key = rows[0].data.key as { kid: string; privateJwkCipher: string };
    const privateKey = await importJWK(JSON.parse(new SecretBox(inject('platformSecret')).open(key.privateJwkCipher)), 'ES256');
    return await new SignJWT({ ...decodeJwt(token), ...changes }).setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' }).sign(privateKey);
  } finally {
    await db.end();
  }
}

/** A storage URL token signed with the platform's own key, with whatever claims. */
function signStorageToken(claims: Record<string, unknown>, audience: string, expiresAt: number): Promise<string> {
  const key = new TextEncoder().encode(deriveSecret(inject('platformSecret'), 'storage-signed-url'));
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer('baseplane-storage').setAudience(audience).setExpirationTime(expiresAt).sign(key);
}

async function upload(project: RestProject, bucket: string, path: string, bytes: string): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/plain' }), 'x.txt');
  const response = await fetch(new URL(`/api/projects/${project.project.id}/storage/buckets/${bucket}/objects?path=${encodeURIComponent(path)}`, inject('baseUrl')), { method: 'POST', headers: bearer(project.operator.token), body: form });
  expect(response.status, await response.text()).toBe(201);
}

beforeAll(async () => {
  [p, other] = await Promise.all([restProject('auth fuzz'), restProject('auth fuzz other')]);
  [tenant, otherTenant] = await Promise.all([connectTenant(p.project.id), connectTenant(other.project.id)]);
  fixture.email = `fixture-${p.project.id}@example.com`;
  const signup = await call('POST', '/rest/v1/auth/signup', { headers: { ...p.anon, 'x-forwarded-for': '10.250.0.2' }, body: { email: fixture.email, password: PASSWORD } });
  expect(signup.status, signup.text).toBe(201);
  fixture.id = signup.body.user.id;
  await signIn();
  const otherSignup = await call('POST', '/rest/v1/auth/signup', { headers: { ...other.anon, 'x-forwarded-for': '10.250.0.3' }, body: { email: `other-${other.project.id}@example.com`, password: PASSWORD } });
  expect(otherSignup.status, otherSignup.text).toBe(201);
  otherToken = otherSignup.body.accessToken;
  // The other project mails a code at sign-up (in the sign-up's transaction) and asks a reauthentication before a password change.
  const settings = await call('PATCH', `/api/projects/${other.project.id}/auth/settings`, { headers: bearer(other.operator.token), body: { requireEmailVerification: true, requireReauthForPasswordChange: true } });
  expect(settings.status, settings.text).toBeLessThan(300);
  await dataPlanesCaughtUp(5000);
  const now = Math.floor(Date.now() / 1000);
  forged.expired = await resign(fixture.token, { exp: now - 60, iat: now - 3700 });
  forged.otherRef = await resign(fixture.token, { ref: other.project.id });
  forged.otherUser = await resign(fixture.token, { sub: otherSignup.body.user.id });
  forged.oddSession = await resign(fixture.token, { session_id: 'not-a-uuid' });
  forged.oddSub = await resign(fixture.token, { sub: 'x'.repeat(64) });
  forged.numericSub = await resign(fixture.token, { sub: 42 });
  forged.noExp = await resign(fixture.token, { exp: undefined });

  for (const project of [p, other]) {
    for (const body of [{ name: 'docs' }, { name: 'pics', public: true }]) {
      const answer = await call('POST', `/api/projects/${project.project.id}/storage/buckets`, { headers: bearer(project.operator.token), body });
      expect(answer.status, answer.text).toBe(201);
    }
  }
  for (const [object, bytes] of Object.entries(OBJECTS)) {
    const [bucket, ...rest] = object.split('/');
    await upload(p, bucket!, rest.join('/'), bytes);
  }
  await upload(other, 'docs', 'a.txt', OTHER_BYTES);
  for (const object of Object.keys(OBJECTS)) {
    const [bucket, ...rest] = object.split('/');
    const answer = await call('GET', `/api/projects/${p.project.id}/storage/buckets/${bucket}/objects/url?path=${encodeURIComponent(rest.join('/'))}&expiresIn=600`, { headers: p.service });
    expect(answer.status, answer.text).toBe(200);
    signed[object] = { token: new URL(answer.body.url).searchParams.get('token')!, object };
    const head = await call('HEAD', `/api/projects/${p.project.id}/storage/buckets/${bucket}/objects/download?path=${encodeURIComponent(rest.join('/'))}`, { headers: p.service });
    validators[object] = { etag: head.headers.get('etag')!, lastModified: head.headers.get('last-modified')! };
    expect(validators[object]!.etag).toMatch(/^".+"$/);
  }
  const expiry = now + 600;
  storageTokens.expired = await signStorageToken({ b: 'docs', o: 'a.txt' }, p.project.id, now - 10);
  storageTokens.otherProject = await signStorageToken({ b: 'docs', o: 'a.txt' }, other.project.id, expiry);
  storageTokens.oddClaims = await signStorageToken({ b: ['docs'], o: { path: 'a.txt' } }, p.project.id, expiry);
  storageTokens.noClaims = await signStorageToken({}, p.project.id, expiry);
  storageTokens.wrongKey = await new SignJWT({ b: 'docs', o: 'a.txt' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('baseplane-storage').setAudience(p.project.id).setExpirationTime(expiry).sign(new TextEncoder().encode('not the key'));
  storageTokens.none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ b: 'docs', o: 'a.txt', aud: p.project.id, iss: 'baseplane-storage', exp: expiry })).toString('base64url')}.`;
  const valid = signed['docs/a.txt']!.token;
  const [h, payload, signature] = valid.split('.') as [string, string, string];
  storageTokens.tamperedSignature = `${h}.${payload}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
  storageTokens.tamperedClaims = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(valid), o: 'dir/b c.txt' })).toString('base64url')}.${signature}`;
  storageTokens.truncated = valid.slice(0, valid.length - 10);

  neverShown = [inject('platformSecret'), 'postgres://', 'postgresql://'];
  neverInRefusals = [p.project.serviceKey, other.project.serviceKey, PASSWORD];
}, 120_000);

afterAll(async () => {
  await tenant?.end();
  await otherTenant?.end();
  agent.destroy();
});

/** What no answer may be: a server error, a refusal without API.md's shape, or one that shows internals or secrets. */
function problemOf(answer: Received, method: string): string | undefined {
  const shown = answer.text.slice(0, 300);
  if (answer.status >= 500) return `status ${answer.status}: ${shown}`;
  if (/\n\s+at |node_modules|\.ts:\d+/.test(answer.text)) return `a stack trace: ${shown}`;
  if (/\$argon2(id|i|d)\$/.test(answer.text)) return `a password hash: ${shown}`;
  if (/\b(select|insert|update|delete)\b[\s\S]*\b(auth|storage)\.[a-z_]+\b|\bbp_[a-z_]+\b|\bauth_[a-z_]+\b/i.test(answer.text) && answer.status >= 400) return `our SQL: ${shown}`;
  for (const secret of neverShown) if (answer.text.includes(secret)) return `a secret (${secret.slice(0, 8)}…): ${shown}`;
  if (answer.status >= 400) {
    for (const secret of [...neverInRefusals, fixture.refreshToken, fixture.token]) if (secret && answer.text.includes(secret)) return `a secret in a refusal (${secret.slice(0, 8)}…): ${shown}`;
    if (method !== 'HEAD') {
      const shape = answer.body as Record<string, unknown> | undefined;
      if (typeof shape?.code !== 'string' || typeof shape.message !== 'string' || !('details' in shape) || !('hint' in shape)) return `not the error shape: ${shown}`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------------
// End-user auth.

const AUTH_ROUTES: Array<[string, string]> = [
  ['POST', 'signup'], ['POST', 'signup'], ['POST', 'signin'], ['POST', 'signin'], ['POST', 'refresh'], ['POST', 'refresh'],
  ['GET', 'me'], ['PATCH', 'me'], ['PATCH', 'me'], ['POST', 'logout'], ['POST', 'resend'], ['POST', 'verify-email'],
  ['POST', 'forgot-password'], ['POST', 'reset-password'], ['POST', 'magic-link'], ['POST', 'magic-link/verify'],
  ['POST', 'change-email'], ['POST', 'change-email/verify'], ['POST', 'reauth'], ['POST', 'reauth/verify'], ['POST', 'invite'], ['POST', 'invite'],
  ['GET', '.well-known/jwks.json'], ['GET', 'signin/google'], ['POST', 'token'], ['PUT', 'user'],
];
/** Mostly null (the route's own choice), now and then one of `values`. */
const seldom = <T>(values: fc.Arbitrary<T>, weight = 6): fc.Arbitrary<T | null> => fc.oneof({ weight, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: values });

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
    'other-project': () => `Bearer ${otherToken}`,
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
        const known = address !== undefined && (emailKey(address) === emailKey(fixture.email) || created.has(emailKey(address)) || emailKey(address) === emailKey(`other-${other.project.id}@example.com`));
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
      { numRuns: Number(process.env.FUZZ_RUNS ?? 4000), seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    console.log(`auth fuzz: ${ran} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  }, 600_000);
});

// ---------------------------------------------------------------------------------------------------------------------
// Storage objects.

const PROJECT_SEGMENTS = ['project', 'project', 'project', 'other', 'PROJECT', 'garbage', '..', '%2e%2e', '%00', '', '00000000-0000-0000-0000-000000000000'];
const BUCKETS = ['pics', 'pics', 'docs', 'docs', 'nope', '..', '.', '%2e%2e', 'pics%2F..', 'pics%00', '%00', 'p'.repeat(64), '%ED%A0%80', '%C3%A9', 'PICS', ''];
const PATHS = [
  'a.txt', 'a.txt', 'a.txt', 'dir/b%20c.txt', 'dir/b c.txt', 'dir%2Fb%20c.txt', '../a.txt', 'dir/../a.txt', '%2e%2e/a.txt', '..%2Fa.txt', 'a.txt%00', '%00', 'a.txt/', '/a.txt', '//a.txt',
  'dir/', 'dir', '', '.', '..', './a.txt', 'a.txt%09x', '%ff', '%ED%A0%80', '%E2%80%AEa.txt', 'A.TXT', `${'x'.repeat(1100)}`, `${'x/'.repeat(600)}a`, 'a.txt?', 'a.txt#x', '%25', 'a%2', '%',
];
const RANGES = [
  'bytes=0-0', 'bytes=0-4', 'bytes=-1', 'bytes=-0', 'bytes=5-', 'bytes=0-', 'bytes=1-0', 'bytes=999999-', 'bytes=22-', 'bytes=23-', 'bytes=0-99999999999999999999999',
  'bytes=99999999999999999999999-', 'bytes=-99999999999999999999999', 'bytes=0-1,2-3', 'bytes=0-1, 5-', 'bytes=--1', 'bytes=abc', 'items=0-1', 'bytes=', 'bytes=-', ' bytes = 0 - 1 ',
  'bytes=0-1 ', 'bytes=00-01', 'bytes=1e3-', 'bytes=0x10-', 'BYTES=0-1', `bytes=${'9'.repeat(400)}-`, 'bytes=-1-2', 'bytes=0-1\u0000', 'bytes=٠-١',
];
const TOKENS = ['docs/a.txt', 'pics/a.txt', 'docs/dir/b c.txt', 'expired', 'otherProject', 'oddClaims', 'noClaims', 'wrongKey', 'none', 'tamperedSignature', 'tamperedClaims', 'truncated', 'garbage', 'empty', 'missing', 'twice', 'array'];

const storageRequest = fc.record({
  route: fc.constantFrom('public', 'public', 'sign', 'sign', 'sign', 'objects', 'download', 'download', 'url', 'delete', 'upload'),
  method: seldom(fc.constantFrom('GET', 'HEAD', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS')),
  project: fc.oneof({ weight: 3, arbitrary: fc.constant('project') }, { weight: 1, arbitrary: fc.constantFrom(...PROJECT_SEGMENTS) }),
  // Mostly an object that is there (the one the token was signed for, on a signed URL), else anything.
  object: seldom(fc.tuple(fc.constantFrom(...BUCKETS), fc.constantFrom(...PATHS)), 2),
  token: fc.constantFrom(...TOKENS),
  range: fc.option(fc.constantFrom(...RANGES), { freq: 2 }),
  validator: seldom(fc.constantFrom<[string, string]>(
    ['if-range', '"nope"'], ['if-range', 'W/"nope"'], ['if-range', 'Thu, 01 Jan 1970 00:00:00 GMT'], ['if-range', 'garbage'], ['if-none-match', '*'], ['if-none-match', '"x", W/"y"'],
    ['if-modified-since', 'Thu, 01 Jan 2099 00:00:00 GMT'], ['if-modified-since', 'garbage'], ['if-unmodified-since', 'Thu, 01 Jan 1970 00:00:00 GMT'],
    // The object's own validators (as its last answer gave them), which a resumed download sends.
    ['if-range', 'ETAG'], ['if-range', 'W/ETAG'], ['if-range', 'DATE'], ['if-none-match', 'ETAG'], ['if-none-match', 'W/ETAG'], ['if-modified-since', 'DATE'],
  ), 3),
  apikey: fc.constantFrom('none', 'none', 'anon', 'service', 'service', 'garbage', 'other', 'query-anon'),
  authorization: fc.constantFrom('none', 'none', 'user', 'operator', 'operator', 'other-operator', 'garbage', 'basic', 'expired', 'otherRef'),
  extra: fc.constantFrom('', '', '', '&expiresIn=-1', '&expiresIn=99999999999', '&expiresIn=1.5', '&prefix=dir/', '&prefix=%00', '&limit=0', '&limit=99999', '&offset=-1', '&path=a.txt', '&upsert=maybe', '&upsert=true'),
  deleteBody: fc.constantFrom('{"paths":["zz-nope"]}', '{"paths":[]}', '{"paths":"a.txt"}', '{"paths":[1]}', '{"paths":["\\u0000"]}', '{', '', 'null', '{"paths":["../zz"]}'),
  uploadBody: fc.constantFrom('multipart', 'multipart', 'multipart-wrong-field', 'multipart-cut', 'json', 'empty', 'text', 'two-files', 'no-filename', 'no-boundary', 'other-boundary', 'fields-first', 'odd-disposition'),
  partType: fc.constantFrom('text/plain', 'text/plain', 'image/png', '', 'text/plain; charset=\u0000', 'x'.repeat(300), 'text/plain\r\nx-evil: 1', '*/*', 'image/*', 'application/json; a="b', 'é/è', ' text/plain '),
});
type Generated = typeof storageRequest extends fc.Arbitrary<infer T> ? T : never;
type StorageRequest = Generated & { bucket: string; path: string };

/** The generated request with its bucket and path: the generated ones, or the token's object's (pics/a.txt without a token). */
function targeted(generated: Generated): StorageRequest {
  if (generated.object) return { ...generated, bucket: generated.object[0], path: generated.object[1] };
  const object = generated.route === 'sign' ? signed[generated.token]?.object ?? 'docs/a.txt' : generated.route === 'public' ? 'pics/a.txt' : 'docs/a.txt';
  const [bucket, ...rest] = object.split('/');
  return { ...generated, bucket: bucket!, path: rest.join('/').replace(/ /g, '%20') };
}

/** The object a generated (public or signed) URL addresses, when it is plain enough to tell; its bytes. */
function objectOf(generated: StorageRequest): string | undefined {
  if (generated.project !== 'project') return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(generated.path.replace(/[?#].*$/s, ''));
  } catch {
    return undefined;
  }
  return `${generated.bucket}/${decoded}`;
}

function buildStorage(generated: StorageRequest): { method: string; path: string; headers: Record<string, string>; body?: string | Buffer } {
  const project = { project: p.project.id, other: other.project.id, PROJECT: p.project.id.toUpperCase() }[generated.project] ?? generated.project;
  const headers: Record<string, string> = { 'x-forwarded-for': '10.201.0.1' };
  let query = '';
  if (generated.apikey === 'anon') headers.apikey = p.project.anonKey;
  if (generated.apikey === 'service') headers.apikey = p.project.serviceKey;
  if (generated.apikey === 'garbage') headers.apikey = 'garbage';
  if (generated.apikey === 'other') headers.apikey = other.project.anonKey;
  if (generated.apikey === 'query-anon') query = `&apikey=${encodeURIComponent(p.project.anonKey)}`;
  const authorization: Record<string, string | undefined> = {
    none: undefined, user: `Bearer ${fixture.token}`, operator: `Bearer ${p.operator.token}`, 'other-operator': `Bearer ${other.operator.token}`, garbage: 'Bearer garbage',
    basic: 'Basic dXNlcjpwYXNz', expired: `Bearer ${forged.expired}`, otherRef: `Bearer ${forged.otherRef}`,
  };
  if (authorization[generated.authorization]) headers.authorization = authorization[generated.authorization]!;
  if (generated.range !== null) headers.range = generated.range.replace(/[^\x20-\x7e]/g, '?');
  if (generated.validator !== null) {
    const own = validators[objectOf(generated) ?? ''] ?? validators['docs/a.txt']!;
    headers[generated.validator[0]] = generated.validator[1].replace('ETAG', own.etag).replace('DATE', own.lastModified);
  }

  if (generated.route === 'public' || generated.route === 'sign') {
    const tokenText = signed[generated.token]?.token ?? storageTokens[generated.token] ?? (generated.token === 'garbage' ? 'garbage' : '');
    const tokenQuery = generated.route !== 'sign' || generated.token === 'missing' ? '' : generated.token === 'twice' ? `token=${signed['docs/a.txt']!.token}&token=${signed['docs/a.txt']!.token}` : generated.token === 'array' ? `token[]=${signed['docs/a.txt']!.token}` : `token=${tokenText}`;
    const search = `${tokenQuery}${query}`.replace(/^&/, '');
    const objectPath = generated.path.replace(/ /g, '%20');
    const joiner = objectPath.includes('?') ? '&' : '?';
    return { method: generated.method ?? 'GET', path: `/storage/v1/object/${generated.route}/${project}/${generated.bucket}/${objectPath}${search ? `${joiner}${search}` : ''}`, headers };
  }
  const base = `/api/projects/${project}/storage/buckets/${generated.bucket}/objects`;
  const pathQuery = `path=${generated.path.replace(/[ #?]/g, encodeURIComponent)}`;
  switch (generated.route) {
    case 'objects':
      return { method: generated.method ?? 'GET', path: `${base}?${generated.extra.replace(/^&/, '')}${query}`, headers };
    case 'download':
      return { method: generated.method ?? 'GET', path: `${base}/download?${pathQuery}${generated.extra}${query}`, headers };
    case 'url':
      return { method: generated.method ?? 'GET', path: `${base}/url?${pathQuery}${generated.extra}${query}`, headers };
    case 'delete':
      return { method: 'DELETE', path: `${base}${query.replace(/^&/, '?')}`, headers: { ...headers, 'content-type': 'application/json' }, body: generated.deleteBody };
    default: {
      // Uploads only ever under up/, so that no fixture object is replaced.
      const uploadPath = `path=up/${generated.path.replace(/[ #?]/g, encodeURIComponent)}`;
      const boundary = 'fuzzboundary';
      const partType = generated.partType.replace(/[^\x20-\x7e]/g, '?');
      const part = (name: string, filename = '; filename="x.txt"') => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"${filename}\r\ncontent-type: ${partType}\r\n\r\nuploaded bytes\r\n`;
      const field = (name: string, value: string) => `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
      const bodies: Record<string, [string | undefined, string]> = {
        multipart: [`multipart/form-data; boundary=${boundary}`, `${part('file')}--${boundary}--\r\n`],
        'multipart-wrong-field': [`multipart/form-data; boundary=${boundary}`, `${part('upload')}--${boundary}--\r\n`],
        'multipart-cut': [`multipart/form-data; boundary=${boundary}`, part('file').slice(0, 60)],
        'two-files': [`multipart/form-data; boundary=${boundary}`, `${part('file')}${part('file')}--${boundary}--\r\n`],
        'no-filename': [`multipart/form-data; boundary=${boundary}`, `${part('file', '')}--${boundary}--\r\n`],
        'no-boundary': ['multipart/form-data', `${part('file')}--${boundary}--\r\n`],
        'other-boundary': ['multipart/form-data; boundary=another', `${part('file')}--${boundary}--\r\n`],
        'fields-first': [`multipart/form-data; boundary=${boundary}`, `${field('cacheControl', '3600')}${field('metadata', '{"a":1}')}${field('x', 'y'.repeat(70 * 1024))}${part('file')}--${boundary}--\r\n`],
        'odd-disposition': [`multipart/form-data; boundary=${boundary}`, `${part('file', '; filename="../../etc/passwd"; filename*=UTF-8\'\'%00%ff')}--${boundary}--\r\n`],
        json: ['application/json', '{"file":"x"}'],
        empty: [`multipart/form-data; boundary=${boundary}`, ''],
        text: ['text/plain', 'uploaded bytes'],
      };
      const [type, body] = bodies[generated.uploadBody]!;
      return { method: 'POST', path: `${base}?${uploadPath}${generated.extra}${query}`, headers: type ? { ...headers, 'content-type': type } : headers, body };
    }
  }
}

/** What a served object may not be: bytes of an object that URL may not read, or a range that is not what it says. */
function servingProblem(generated: StorageRequest, method: string, answer: Received): string | undefined {
  if (answer.status !== 200 && answer.status !== 206) return undefined;
  // A range only under an If-Range that names the object as it is: its strong entity tag or its Last-Modified.
  if (answer.status === 206 && generated.validator?.[0] === 'if-range' && !['ETAG', 'DATE'].includes(generated.validator[1])) return `a range served under If-Range ${generated.validator[1]}`;
  if (generated.route === 'public' || generated.route === 'sign') {
    if (generated.route === 'public' && generated.bucket !== 'pics') return `the public URL served a bucket that is not public: ${answer.text.slice(0, 100)}`;
    // The other project's own token (signed for its docs/a.txt) reads that object at that project's URL.
    if (generated.route === 'sign' && generated.token === 'otherProject' && generated.project === 'other' && (method === 'HEAD' || (answer.status === 206 ? Buffer.from(OTHER_BYTES).includes(answer.bytes) : answer.text === OTHER_BYTES))) return undefined;
    if (generated.route === 'sign' && !(generated.token in signed) && generated.token !== 'twice' && generated.token !== 'array') return `a signed URL with the ${generated.token} token was served`;
    const object = objectOf(generated);
    const expected = generated.route === 'sign' ? signed[generated.token] : undefined;
    if (expected && object !== expected.object) return `the token of ${expected.object} served ${object}`;
    const bytes = object === undefined ? undefined : OBJECTS[object];
    if (bytes === undefined) return `served an object that is none of the fixtures (${object})`;
    if (method === 'HEAD') return undefined;
    if (answer.status === 200 && answer.text !== bytes) return `served other bytes than ${object}'s`;
    if (answer.status === 206) {
      const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(answer.headers['content-range']));
      if (!range) return `206 with content-range ${answer.headers['content-range']}`;
      const [start, end, size] = [Number(range[1]), Number(range[2]), Number(range[3])];
      if (size !== Buffer.byteLength(bytes) || end >= size || start > end || answer.bytes.toString() !== Buffer.from(bytes).subarray(start, end + 1).toString()) return `206 ${answer.headers['content-range']} with ${answer.bytes.length} bytes`;
    }
  }
  return undefined;
}

describe('generated storage requests', () => {
  it('never answer a 5xx, refuse in the error shape without internals, and serve an object only where its URL may read it', async () => {
    let ran = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(storageRequest.map(targeted), async (generated) => {
        ran++;
        const request = buildStorage(generated);
        const answer = await send(request.method, request.path, request.headers, request.body);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const label = `${request.method} ${request.path.slice(0, 400)} ${JSON.stringify(request.headers)} ${String(request.body ?? '').slice(0, 200)}`;
        expect(problemOf(answer, request.method), label).toBeUndefined();
        expect(servingProblem(generated, request.method, answer), label).toBeUndefined();
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 4000), seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    console.log(`storage fuzz: ${ran} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    // The fixtures are still there, as they were: nothing generated replaced or deleted them.
    for (const [object, bytes] of Object.entries(OBJECTS)) {
      const [bucket, ...rest] = object.split('/');
      const answer = await send('GET', `/api/projects/${p.project.id}/storage/buckets/${bucket}/objects/download?path=${encodeURIComponent(rest.join('/'))}`, { apikey: p.project.serviceKey });
      expect(answer.text, object).toBe(bytes);
    }
  }, 600_000);
});
