/**
 * The management API (`/api/...`) against generated requests: real routes,
 * with bodies, queries and path parameters made of the routes' own field
 * names and plausible-but-wrong values (fast-check, seeded, so a failure names
 * the seed and the shrunk request). Whatever a request says, the answer is
 * never a 5xx, a refusal has API.md's error shape, no answer shows a stack,
 * our SQL or a secret, and a refused change leaves the project as it was
 * (read back after a quarter of the changes). `FUZZ_SEED` and `FUZZ_RUNS`
 * repeat or widen a run; `FUZZ_STATS=1` prints how often each route answered
 * each status and code, to see what the generated requests reach.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { fuzzRuns } from '../../deploy/test/generated';
import { bearer, call, createProject, signUpOperator, someIp, streamVersion, type Answer, type Operator, type ProjectAnswer } from '../../deploy/test/http';

let operator: Operator;
let stranger: Operator;
let project: ProjectAnswer;
let strangersProject: ProjectAnswer;
let userId: string;
let operationId: string;
/** What no answer may show, and the project keys with who may see them (in an answer that is no refusal). */
let secrets: string[] = [];
let keys: Array<{ key: string; shownTo: Array<Generated['auth']> }> = [];
/** A password in every SMTP URL the settings get: no answer may show it. */
const SMTP_PASSWORD = `smtp-pw-${randomUUID()}`;

beforeAll(async () => {
  [operator, stranger] = await Promise.all([signUpOperator('Fuzz'), signUpOperator('Stranger')]);
  [project, strangersProject] = await Promise.all([createProject(operator, 'management fuzz'), createProject(stranger, 'not yours')]);
  const setup = async (method: string, url: string, body?: unknown) => {
    const answer = await call(method, url, { headers: bearer(operator.token), body });
    expect(answer.status, answer.text).toBeLessThan(300);
    return answer.body;
  };
  const base = `/api/projects/${project.id}`;
  await setup('POST', `${base}/tables`, { name: 'items', columns: [{ name: 'title', type: 'text' }, { name: 'n', type: 'int4' }, { name: 'meta', type: 'jsonb' }] });
  await setup('POST', `${base}/tables`, { name: 'parents', columns: [{ name: 'label', type: 'text', unique: true }] });
  await setup('POST', `${base}/tables/items/columns`, { name: 'parent_id', type: 'int8' });
  await setup('POST', `${base}/tables/items/foreign-keys`, { name: 'items_parent_fk', columns: ['parent_id'], references: { table: 'parents', columns: ['id'] } });
  await setup('POST', `${base}/storage/buckets`, { name: 'files' });
  await setup('POST', '/api/sql/execute', { projectId: project.id, query: "insert into parents (label) values ('p'); insert into items (title, n, parent_id) values ('one', 1, 1)" });
  userId = (await setup('POST', `${base}/auth/users`, { email: `u-${randomUUID()}@example.com`, password: 'correct horse battery' })).id;
  operationId = (await setup('GET', `${base}/operations`))[0].id;
  secrets = [inject('platformSecret'), operator.token, operator.refreshToken, stranger.token, 'correct horse battery', SMTP_PASSWORD];
  keys = [{ key: project.serviceKey, shownTo: ['operator', 'service'] }, { key: strangersProject.serviceKey, shownTo: ['stranger'] }];
}, 180_000);

// ---- values ------------------------------------------------------------------------------------------------------

/** Strings that name nothing well: empty, blank, long, huge, unicode, NUL, SQL and paths. */
const ODD_STRINGS = [
  '', ' ', 'x'.repeat(64), 'x'.repeat(300), 'x'.repeat(20_000), 'é', 'Ünïcödé', '🙂', '\u202eevil', 'a\u0000b', '\u0000', '\ud800',
  'items; drop table items', "x' or '1'='1", '"quoted"', 'Robert"); --', 'pg_catalog.pg_authid', 'public.items', '$$', '../../etc/passwd',
  'select', 'SELECT * FROM items', 'xmin', 'ctid', '1', '-1', 'true', 'null', 'NaN', '%00', 'a/b', 'a b', '*',
];
/** Values of the wrong type for almost any field. */
const WRONG_TYPES: unknown[] = [0, -1, 1.5, 1e308, -0, 2 ** 64, Number.MAX_SAFE_INTEGER + 2, true, false, null, [], ['x'], [1, 2], {}, { a: 1 }, { name: 'x' }];

const oddString = fc.constantFrom(...ODD_STRINGS);
const wrongType = fc.constantFrom(...WRONG_TYPES);
/** A field's plausible value, now and then an odd string or one of another type. */
const field = (plausible: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 16, arbitrary: plausible }, { weight: 1, arbitrary: oddString }, { weight: 1, arbitrary: wrongType });
const one = <T>(...values: T[]) => fc.constantFrom(...values);
/** Values of mixed types. */
const anyOf = (...values: unknown[]) => fc.constantFrom(...values);

/** An object of these fields, each there most of the time, now and then with a field no route takes. */
function object(fields: Record<string, fc.Arbitrary<unknown>>, { sparse = false } = {}): fc.Arbitrary<Record<string, unknown>> {
  // Sparse: a partial update (PATCH), each field there a third of the time.
  const entries = Object.entries(fields).map(([name, value]) =>
    fc.tuple(fc.integer({ min: 0, max: 9 }), value).map(([dice, v]) => (dice < (sparse ? 3 : 9) ? [[name, v] as const] : [])),
  );
  const extra = fc.oneof(
    { weight: 12, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.tuple(one('unknownField', 'id', '__proto__', 'constructor', 'projectId', 'schema', ''), field(fc.constant(1))) },
  );
  return fc.tuple(fc.tuple(...entries), extra).map(([present, more]) => {
    const result: Record<string, unknown> = {};
    for (const [name, value] of present.flat()) result[name] = value;
    // defineProperty: `__proto__` as an own key, as JSON.parse reads it.
    if (more) Object.defineProperty(result, more[0], { value: more[1], enumerable: true, writable: true, configurable: true });
    return result;
  });
}

const TYPES = ['text', 'varchar(20)', 'varchar(0)', 'int2', 'int4', 'int8', 'integer', 'bigint', 'numeric(10,2)', 'numeric(5,6)', 'float8', 'bool', 'boolean', 'uuid', 'date', 'timestamptz', 'json', 'jsonb', 'bytea', 'text[]', 'int4[][]', 'serial', 'no_such_type', 'text; drop table items', 'pg_catalog.text', 'varchar(99999999999)', 'int4 references items'];
const DEFAULTS = ['now()', 'gen_random_uuid()', 'auth.uid()', "'x'", '1', 'now', 'today', 'x', "'a'::text", 'nextval(\'nope\')', '(select 1)', 'pg_sleep(1)', 1, true, null];
const typeName = field(one(...TYPES));
const tableName = (fresh: fc.Arbitrary<string>) => field(fc.oneof(one('items', 'parents', 'nope', 'pg_class', 'Items', 'auth', 'storage'), fresh));
/** A name no table or column has yet: a change that takes it may be applied. */
const freshName = fc.nat(7).map((n) => `fz_${n}`);
/** The same for buckets, whose names take `-`, not `_`. */
const freshBucket = fc.nat(7).map((n) => `fz-${n}`);
const columnName = field(one('title', 'n', 'meta', 'id', 'parent_id', 'label', 'nope', 'owner_id', 'xmin', 'Title', 'c1', 'c2'));

const column = object({ name: columnName, type: typeName, nullable: field(fc.boolean()), default: field(one(...DEFAULTS)), unique: field(fc.boolean()), primaryKey: field(fc.boolean()) });
const addedColumn = object({ name: field(fc.oneof(freshName, one('title', 'n', 'id', 'xmin', 'Title'))), type: typeName, nullable: field(fc.boolean()), default: field(one(...DEFAULTS)), unique: field(fc.boolean()) });
const columnChange = object({ name: field(fc.oneof(freshName, one('title', 'n', 'id', 'ctid'))), type: typeName, using: field(one('title::int', 'n::text', '1; drop table items', '(', 'now()', 'a, b', '-- x', "'x'")), nullable: field(fc.boolean()), default: field(one(...DEFAULTS)) });
const fkAction = field(one('no action', 'restrict', 'cascade', 'set null', 'set default', 'CASCADE', 'explode'));
const names = (names: fc.Arbitrary<unknown>) => field(fc.array(names, { minLength: 0, maxLength: 3 }));
const foreignKey = object({
  name: field(fc.oneof(freshName, one('items_parent_fk', 'items_pkey', 'parents_label_key'))),
  columns: names(columnName),
  references: field(object({ table: tableName(freshName), columns: names(columnName) })),
  onDelete: fkAction,
  onUpdate: fkAction,
});
const rowValue = fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.boolean(), fc.jsonValue({ maxDepth: 2 }), oddString, anyOf('1e309', 2 ** 63, -(2 ** 63), '2024-01-01', '{1,2}'));
const rowData = field(fc.dictionary(one('title', 'n', 'meta', 'id', 'parent_id', 'nope', 'xmin', '', 'a"b'), rowValue, { maxKeys: 4 }));
const url = one('https://app.example.com', 'http://localhost:3000/cb', 'ftp://x', 'javascript:alert(1)', 'http://[::1', 'http://a:99999', 'not a url', 'https://ex.ample/\u0000');
const email = one('a@example.com', `new-${randomUUID()}@example.com`, 'not-an-email', '@', 'a@b', 'A@EXAMPLE.COM', 'x'.repeat(400) + '@e.com');

// ---- routes ------------------------------------------------------------------------------------------------------

type Params = Record<string, fc.Arbitrary<string>>;
interface Route {
  method: string;
  /** `{name}` takes a value of `params[name]`. */
  path: string;
  params?: Params;
  query?: Record<string, fc.Arbitrary<string>>;
  body?: fc.Arbitrary<unknown>;
  /** A change whose refusal must leave the project as it was. */
  mutates?: boolean;
  /** Always refused (an unknown field is added): a success would be too slow or too big (a project). */
  refusedOnly?: boolean;
  /** The body is a file upload: `body` says how its multipart form is made. */
  multipart?: boolean;
}

const P = '/api/projects/{project}';
/** SMTP URLs holding the password in the ways a URL can: the settings show each masked. */
const SMTP_URLS = [
  `smtp://user:${SMTP_PASSWORD}@mail.example.com:587`, `smtps://u:${SMTP_PASSWORD}@[::1`, 'http://mail', `smtp://u:${SMTP_PASSWORD}@h x`, `smtp://u:${SMTP_PASSWORD}#1@mail.example.com`,
  `smtp://u:${SMTP_PASSWORD}/?@mail.example.com`, `smtp://:${SMTP_PASSWORD}@@h`, `smtp://u:${encodeURIComponent(SMTP_PASSWORD)}%40@h:25`,
];
const uuidLike = one(randomUUID(), '00000000-0000-0000-0000-000000000000', 'not-a-uuid', 'ZZZZZZZZ-0000-0000-0000-000000000000');
const projectId = fc.oneof({ weight: 12, arbitrary: fc.constant('<project>') }, { weight: 1, arbitrary: fc.constant('<strangers>') }, { weight: 1, arbitrary: fc.constant('<PROJECT>') }, { weight: 1, arbitrary: uuidLike }, { weight: 1, arbitrary: oddString });
/** Path values of things that exist, now and then, and of things that do not; `keep` leaves out what must not be deleted. */
const segment = (existing: string[], keep = false) =>
  fc.oneof({ weight: keep ? 0 : 8, arbitrary: existing.length ? one(...existing) : fc.constant('x') }, { weight: 3, arbitrary: fc.oneof(freshName, one('nope', 'Items')) }, { weight: 2, arbitrary: oddString });
const query = (value: fc.Arbitrary<string>) => fc.oneof(value, oddString);
const numberText = one('0', '1', '10', '9999', '-1', '1.5', '1e309', '2147483648', '999999999999', '99999999999999999999', 'abc', '0x10', '');

const ROUTES: Route[] = [
  { method: 'GET', path: '/api/auth/me' },
  { method: 'POST', path: '/api/auth/refresh', body: object({ refreshToken: field(one('not-a-token', 'x'.repeat(600))) }) },
  { method: 'POST', path: '/api/auth/login', body: object({ email: field(email), password: field(one('wrong horse battery', '', 'x'.repeat(2000))) }) },
  { method: 'GET', path: '/api/teams' },
  { method: 'POST', path: '/api/teams/{team}/members', params: { team: fc.oneof(fc.constant('<team>'), uuidLike, oddString) }, body: object({ email: field(email), role: field(one('owner', 'admin', 'member', 'god')) }), refusedOnly: true },
  { method: 'POST', path: '/api/projects', body: object({ name: field(one('p', '   ', 'x'.repeat(101))), teamId: field(fc.oneof(fc.constant('<team>'), uuidLike)) }), refusedOnly: true },
  { method: 'GET', path: '/api/projects', query: { teamId: query(fc.oneof(fc.constant('<team>'), uuidLike)) } },
  { method: 'GET', path: P },
  { method: 'DELETE', path: '/api/projects/{other}', params: { other: fc.oneof(fc.constant('<strangers>'), fc.constant('<PROJECT>'), uuidLike, oddString) } },
  { method: 'GET', path: `${P}/keys` },
  { method: 'POST', path: `${P}/keys/rotate`, body: object({ kind: field(one('anon', 'service', 'ANON', 'both')) }), refusedOnly: true, mutates: true },
  { method: 'GET', path: `${P}/events`, query: { after: query(numberText), limit: query(numberText) } },
  { method: 'GET', path: `${P}/operations` },
  { method: 'GET', path: `${P}/operations/{operation}`, params: { operation: fc.oneof(fc.constant('<operation>'), uuidLike, oddString) } },
  // Tables, columns, foreign keys.
  { method: 'GET', path: `${P}/tables` },
  { method: 'POST', path: `${P}/tables`, body: object({ name: tableName(freshName), columns: field(fc.array(column, { maxLength: 3 })), access: field(one('public-read', 'authenticated', 'owner', 'private', 'custom', 'public', 'PRIVATE')) }), mutates: true },
  { method: 'DELETE', path: `${P}/tables/{table}`, params: { table: segment(['items', 'parents'], true) }, mutates: true },
  { method: 'GET', path: `${P}/tables/{table}/columns`, params: { table: segment(['items', 'parents']) } },
  { method: 'POST', path: `${P}/tables/{table}/columns`, params: { table: segment(['items', 'parents']) }, body: addedColumn, mutates: true },
  // Changes go to parents and the tables made here; items keeps its columns for the other routes.
  { method: 'PUT', path: `${P}/tables/{table}/columns/{col}`, params: { table: segment(['parents']), col: segment(['label', 'id', 'title']) }, body: columnChange, mutates: true },
  { method: 'DELETE', path: `${P}/tables/{table}/columns/{col}`, params: { table: segment(['items', 'parents']), col: segment([], true) }, mutates: true },
  { method: 'GET', path: `${P}/tables/{table}/foreign-keys`, params: { table: segment(['items', 'parents']) } },
  { method: 'POST', path: `${P}/tables/{table}/foreign-keys`, params: { table: segment(['items', 'parents']) }, body: foreignKey, mutates: true },
  { method: 'DELETE', path: `${P}/tables/{table}/foreign-keys/{fk}`, params: { table: segment(['items', 'parents']), fk: segment([], true) }, mutates: true },
  // Rows.
  {
    method: 'GET', path: `${P}/tables/{table}/rows`, params: { table: segment(['items', 'parents']) },
    query: { limit: query(numberText), offset: query(numberText), order: query(one('id', 'id.desc', 'title.asc.nullsfirst', 'nope', 'meta', 'id.sideways')), title: query(one('eq.one', 'like.o*', 'is.null', 'in.(a,b)', 'eq', 'nope.1', 'ilike.%25', 'like.\\', 'in.()', 'not.eq.x', 'eq.\u0000')), n: query(one('gt.0', 'eq.x', 'eq.1e309', 'in.(1,2', 'is.true', 'lt.-9223372036854775809', 'in.(1,null)')),
      meta: query(one('eq.{}', 'is.null', 'eq.x', 'cs.{"a":1}', 'like.a')), 'meta->>a': query(one('eq.1', 'is.null')), id: query(one('eq.1', 'gt.abc', 'in.(1,2)', 'eq.99999999999999999999', 'is.1')), 'title::int': query(one('eq.1')), parent_id: query(one('eq.1', 'is.null')) },
  },
  { method: 'POST', path: `${P}/tables/{table}/rows`, params: { table: segment(['items', 'parents']) }, body: object({ data: rowData }), mutates: true },
  { method: 'PUT', path: `${P}/tables/{table}/rows`, params: { table: segment(['items', 'parents']) }, body: object({ pkWhere: field(fc.dictionary(one('id', 'title', 'nope'), rowValue, { maxKeys: 2 })), data: rowData }), mutates: true },
  { method: 'DELETE', path: `${P}/tables/{table}/rows`, params: { table: segment(['items', 'parents']) }, body: object({ pkWhere: field(fc.dictionary(one('id', 'title', 'nope'), anyOf(-1, 0, 'x', null, 2 ** 64, '1e309', [1]), { maxKeys: 2 })) }), mutates: true },
  // Buckets and objects (the objects routes are the data plane's, under /api).
  { method: 'GET', path: `${P}/storage/buckets` },
  {
    method: 'POST', path: `${P}/storage/buckets`, mutates: true,
    body: object({ name: field(fc.oneof(freshBucket, one('files', 'Files', 'a', 'x'.repeat(63), 'a..b', '.hidden', 'UPPER'))), public: field(fc.boolean()), fileSizeLimit: field(one(1, 0, -1, 1024, 2 ** 53, 1e20, 1.5)), allowedMimeTypes: field(fc.array(one('image/png', 'image/*', '*/*', 'nope', '', 'a/b/c', 'text/plain; charset=x'), { maxLength: 3 })) }),
  },
  { method: 'PATCH', path: `${P}/storage/buckets/{bucket}`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, body: object({ public: field(fc.boolean()) }), mutates: true },
  { method: 'DELETE', path: `${P}/storage/buckets/{bucket}`, params: { bucket: fc.oneof(segment([], true), freshBucket) }, query: { force: query(one('true', 'false', 'yes')) }, mutates: true },
  { method: 'GET', path: `${P}/storage/buckets/{bucket}/objects`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, query: { prefix: query(one('', 'a/', 'x')), limit: query(numberText), offset: query(numberText) } },
  {
    method: 'POST', path: `${P}/storage/buckets/{bucket}/objects`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, mutates: true,
    query: { path: query(one('a.txt', 'dir/b.txt', '../x', 'a//b', 'é 🙂.txt', '.', 'x'.repeat(2000))), upsert: query(one('true', 'false', 'yes')) },
    body: fc.record({ field: one('file', 'file', 'upload', ''), filename: one('a.txt', '', '../x', 'é.txt', 'a"b'), type: one('text/plain', 'image/png', '', 'nonsense', 'text/plain; charset=utf-8'), content: fc.string({ maxLength: 40 }), framing: one('ok', 'ok', 'ok', 'no boundary', 'other boundary', 'cut', 'no parts') }),
    multipart: true,
  },
  { method: 'GET', path: `${P}/storage/buckets/{bucket}/objects/download`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, query: { path: query(one('a.txt', 'nope.txt', '../x', 'a//b')) } },
  { method: 'GET', path: `${P}/storage/buckets/{bucket}/objects/url`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, query: { path: query(one('a.txt', 'nope.txt')), expiresIn: query(numberText) } },
  { method: 'DELETE', path: `${P}/storage/buckets/{bucket}/objects`, params: { bucket: fc.oneof(segment(['files']), freshBucket) }, body: object({ paths: field(fc.array(field(one('nope.txt', 'a/b.txt', '../x')), { maxLength: 3 })) }), mutates: true },
  // Auth settings, users, providers.
  { method: 'GET', path: `${P}/auth/settings` },
  {
    method: 'PATCH', path: `${P}/auth/settings`, mutates: true,
    body: object({
      requireEmailVerification: field(fc.boolean()), allowSignups: field(fc.boolean()), accessTokenTtl: field(one(60, 3600, 3600, 604_800, 59, 604_801, 1.5, -1)), refreshTokenTtl: field(one(3600, 86_400, 1, 1e12)),
      otpTtl: field(one(600, 60, 86_400, 0, 86_401)), passwordMinLength: field(one(8, 6, 128, 5, 129)), siteUrl: field(url), redirectUrls: field(fc.array(url, { maxLength: 3 })),
      requireReauthForPasswordChange: field(fc.boolean()),
      smtp: field(fc.oneof({ weight: 4, arbitrary: object({ url: field(one(...SMTP_URLS)), from: field(one('a@example.com', 'a@example.com', 'a@example.com', 'nobody', 'x@\u0000')) }) }, { weight: 1, arbitrary: fc.constant(null) })),
    }, { sparse: true }),
  },
  // The SMTP server alone, its URL holding a password in each way a URL can: no answer may show it.
  { method: 'PATCH', path: `${P}/auth/settings`, mutates: true, body: object({ smtp: field(fc.oneof({ weight: 6, arbitrary: object({ url: one(...SMTP_URLS), from: one('a@example.com') }) }, { weight: 1, arbitrary: fc.constant(null) })) }) },
  // Data API settings: names PostgreSQL takes, the platform's own schemas, names no identifier is, too many; row caps in and out of range.
  { method: 'GET', path: `${P}/rest/settings` },
  {
    method: 'PATCH', path: `${P}/rest/settings`, mutates: true,
    body: object({
      exposedSchemas: field(fc.oneof(
        { weight: 8, arbitrary: fc.array(field(one('public', 'api', 'Public', 'x'.repeat(63), 'auth', 'storage', 'baseplane_meta', 'information_schema', 'pg_catalog', 'PG_TEMP', 'my-api', 'a b', 'a"b', '', 'x'.repeat(64))), { maxLength: 3 }) },
        { weight: 1, arbitrary: fc.constant(Array.from({ length: 17 }, (_, i) => `s${i}`)) },
      )),
      maxRows: field(one(1, 1000, 1_000_000, null, 0, -1, 1.5, 1_000_001, 1e10)),
    }, { sparse: true }),
  },
  { method: 'GET', path: `${P}/auth/users`, query: { search: query(one('a', '%', '_', "'", 'example.com')), limit: query(numberText), offset: query(numberText) } },
  { method: 'POST', path: `${P}/auth/users`, body: object({ email: field(email), password: field(one('correct horse battery', 'short', '')), emailVerified: field(fc.boolean()), firstName: field(one('Ann', 'x'.repeat(300))), lastName: field(one('Lee')), username: field(one('ann', 'x'.repeat(300))) }), mutates: true },
  { method: 'PATCH', path: `${P}/auth/users/{user}`, params: { user: fc.oneof(fc.constant('<user>'), uuidLike, oddString) }, body: object({ email: field(email), password: field(one('short', 'another horse battery')), emailVerified: field(fc.boolean()), firstName: field(one('Ann', null)), lastName: field(one('Lee', null)), username: field(one('ann', null)) }), mutates: true },
  { method: 'DELETE', path: `${P}/auth/users/{user}`, params: { user: fc.oneof(uuidLike, oddString, fc.constant('<PROJECT>')) }, mutates: true },
  { method: 'GET', path: `${P}/auth/providers` },
  { method: 'PUT', path: `${P}/auth/providers/{provider}`, params: { provider: one('google', 'github', 'nope', '..') }, body: object({ enabled: field(fc.boolean()), clientId: field(one('id')), clientSecret: field(one('s3cret')) }), mutates: true },
  // SQL console, history, dev inbox.
  {
    method: 'POST', path: '/api/sql/execute',
    body: object({
      projectId: field(fc.oneof(fc.constant('<project>'), fc.constant('<strangers>'), uuidLike)),
      query: field(one('select 1', 'select 1 +', 'select * from nope', 'select 1/0', "select '\u0000'", 'select $1', 'begin', 'commit', 'rollback', 'set role postgres', 'reset role', 'show all',
        'select * from pg_authid', "select current_setting('baseplane.nope')", 'select pg_sleep(0.01)', 'copy items to stdout', 'listen x', 'select 1; select 2', '', ';', "select repeat('x', 10)",
        'select * from items', 'select * from auth.users', 'select title::int from items', 'vacuum items', 'prepare p as select 1', 'select 1 limit -1', "select 'é'::bytea",
        'select pg_terminate_backend(pg_backend_pid())', 'select pg_cancel_backend(pg_backend_pid())', "set statement_timeout = 1; select pg_sleep(0.1)", 'discard all', 'reset all', 'set session authorization default',
        "do $$ begin raise exception 'boom' using detail = 'd', hint = 'h'; end $$", "select 'NaN'::float8, 'infinity'::timestamptz, '-infinity'::date", 'select 9223372036854775807::int8, 1e400::numeric',
        "select '{\"a\":[1,2,{\"b\":null}]}'::json, array[1,null,3], row(1,'x'), interval '1 day', point(1,2), '1.5'::money", 'select * from generate_series(1, 20000)', "select repeat('x', 3000000)",
        "select E'\\\\x00'::bytea, chr(1)", 'select 1 as a, 2 as a', 'select', 'select null::json', "notify x, 'y'", 'create temp table t as select 1 as x; select * from t', 'select * from pg_stat_activity',
        "select current_setting('search_path'), current_user, session_user", 'explain analyze select 1', 'select txid_current()', 'savepoint a', 'select 1; rollback', 'commit; select 1', 'abort', 'select 1 from items for update',
        "select lo_import('/etc/passwd')", "select pg_read_file('/etc/passwd')", "copy (select 1) to '/tmp/x'", 'select dblink_connect(\'x\')', 'load \'plpgsql\'', 'set role none', "set local role 'x'")),
    }),
  },
  { method: 'GET', path: '/api/dev/inbox', query: { to: query(email as fc.Arbitrary<string>) } },
];

// ---- requests ----------------------------------------------------------------------------------------------------

interface Generated {
  route: number;
  params: Record<string, string>;
  query: Array<[string, string]>;
  /** How the body goes: as JSON, cut, empty, as text/plain, as a form, or not at all. */
  encoding: 'json' | 'cut' | 'empty' | 'text' | 'form' | 'none' | 'raw' | 'multipart';
  body: unknown;
  raw: string;
  auth: 'operator' | 'service' | 'anon' | 'stranger' | 'none' | 'garbage';
  /** Whether the project's state is read back around this request (when it changes something). */
  check: boolean;
  /** Now and then another method than the route's, a header the API reads or not, a key in the query. */
  method: string | null;
  headers: Array<[string, string]>;
  keyInQuery: boolean;
}

const RAW_BODIES = ['{"a":', '{"a":1,}', '[]', '[{}]', 'null', '42', '"text"', 'true', '{"name":"x"}{"name":"y"}', '\ufeff{}', '{"a":"\\ud800"}', '{"a":1e99999}', '{"__proto__":{"admin":true}}', '{'.repeat(2000)];

/** Headers a client may send: the content type said otherwise, Prefer (respond-async), Accept, odd encodings. */
const HEADERS: Array<[string, string[]]> = [
  ['content-type', ['application/json; charset=utf-8', 'application/JSON', 'application/json; charset=latin1', 'application/vnd.api+json', 'application/merge-patch+json', 'multipart/form-data', 'text/json', 'application/octet-stream', '*/*', 'application/json, text/plain']],
  ['prefer', ['respond-async', 'return=minimal', 'respond-async, wait=1', 'handling=strict']],
  ['accept', ['text/csv', 'application/xml', 'application/json;q=0', '*/*']],
  ['content-encoding', ['gzip', 'deflate', 'br', 'identity', 'x-nonsense']],
  ['transfer-encoding', ['chunked']],
  ['x-http-method-override', ['DELETE', 'PUT']],
];

const request: fc.Arbitrary<Generated> = fc.integer({ min: 0, max: ROUTES.length - 1 }).chain((index) => {
  const route = ROUTES[index]!;
  const params = fc.record(Object.fromEntries(Object.keys(route.params ?? {}).map((name) => [name, route.params![name]!])) as Params);
  const queryNames = Object.keys(route.query ?? {});
  // Each of the route's parameters most of the time; now and then one it does not take, or one twice.
  const queryPairs = fc
    .tuple(
      fc.tuple(...queryNames.map((name) => fc.tuple(fc.integer({ min: 0, max: 4 }), route.query![name]!).map(([dice, value]) => (dice > 0 ? [[name, value] as [string, string]] : [])))),
      fc.oneof(
        { weight: 6, arbitrary: fc.constant([] as Array<[string, string]>) },
        { weight: 1, arbitrary: fc.tuple(one('apikey', 'unknown', 'select', 'limit[]', '', ...queryNames), oddString).map(([k, v]) => [[k, v] as [string, string]]) },
      ),
    )
    .map(([named, extra]) => [...named.flat(), ...extra]);
  return fc.record({
    route: fc.constant(index),
    params: fc.tuple(params, projectId).map(([ps, project]) => ({ ...ps, project })),
    query: queryPairs,
    encoding: route.multipart
      ? fc.oneof({ weight: 8, arbitrary: fc.constant('multipart' as const) }, { weight: 1, arbitrary: one('json', 'empty', 'text', 'none', 'raw') as fc.Arbitrary<Generated['encoding']> })
      : route.body
      ? fc.oneof({ weight: 12, arbitrary: fc.constant('json' as const) }, { weight: 1, arbitrary: one('cut', 'empty', 'text', 'form', 'none', 'raw') as fc.Arbitrary<Generated['encoding']> })
      : route.method === 'GET'
        ? fc.constant('none' as const) // fetch sends no body with a GET
        : fc.oneof({ weight: 8, arbitrary: fc.constant('none' as const) }, { weight: 1, arbitrary: one('raw', 'json', 'empty') as fc.Arbitrary<Generated['encoding']> }),
    body: route.body ?? fc.jsonValue({ maxDepth: 2 }),
    raw: one(...RAW_BODIES),
    auth: fc.oneof({ weight: 12, arbitrary: fc.constant('operator' as const) }, { weight: 1, arbitrary: one('service', 'anon', 'stranger', 'none', 'garbage') as fc.Arbitrary<Generated['auth']> }),
    check: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    method: fc.oneof({ weight: 20, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: one('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS') }),
    headers: fc.array(fc.oneof(...HEADERS.map(([name, values]) => one(...values).map((value) => [name, value] as [string, string]))), { maxLength: 2 }).chain((hs) =>
      fc.integer({ min: 0, max: 5 }).map((n) => (n === 0 ? hs : [])),
    ),
    keyInQuery: fc.integer({ min: 0, max: 30 }).map((n) => n === 0),
  });
});

/** A lone surrogate cannot be percent-encoded: it goes as '?'. */
const encode = (text: string) => encodeURIComponent(text.replace(/[\uD800-\uDFFF]/gu, '?'));

function pathValue(value: string): string {
  const named: Record<string, string> = {
    '<project>': project.id, '<strangers>': strangersProject.id, '<PROJECT>': project.id.toUpperCase(), '<team>': operator.teamId, '<operation>': operationId, '<user>': userId,
  };
  return named[value] ?? value;
}

/** Replaces the `<…>` placeholders in a body with the fixtures they name. */
function withFixtures(value: unknown): unknown {
  if (typeof value === 'string') return pathValue(value);
  if (Array.isArray(value)) return value.map(withFixtures);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: withFixtures(v), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

function describeRequest(generated: Generated): { method: string; url: string; headers: Record<string, string>; raw?: string } {
  const route = ROUTES[generated.route]!;
  const path = route.path.replace(/\{(\w+)\}/g, (_all, name: string) => encode(pathValue(generated.params[name] ?? '')));
  const query = generated.query.map(([k, v]) => `${encode(k)}=${encode(pathValue(v))}`);
  const headers: Record<string, string> = { 'x-forwarded-for': someIp() };
  const auths: Record<Generated['auth'], Record<string, string>> = {
    operator: bearer(operator.token), service: { apikey: project.serviceKey }, anon: { apikey: project.anonKey }, stranger: bearer(stranger.token), none: {}, garbage: bearer('garbage.token.here'),
  };
  // The stranger deleting their own project would be a success: every later request on it a 503 (API.md: deleted).
  const deletesStrangers = route.path === '/api/projects/{other}' && generated.auth === 'stranger';
  Object.assign(headers, auths[deletesStrangers ? 'operator' : generated.auth]);
  let body = withFixtures(generated.body) as Record<string, unknown>;
  if (route.refusedOnly && body && typeof body === 'object' && !Array.isArray(body)) body = { ...body, 'ζ': 1 };
  let raw: string | undefined;
  const json = JSON.stringify(body) ?? 'null';
  switch (generated.encoding) {
    case 'json': raw = json; headers['content-type'] = 'application/json'; break;
    case 'cut': raw = json.slice(0, Math.max(0, json.length - 1)); headers['content-type'] = 'application/json'; break;
    case 'empty': raw = ''; headers['content-type'] = 'application/json'; break;
    case 'text': raw = json; headers['content-type'] = 'text/plain'; break;
    case 'form': raw = 'name=x&columns=1'; headers['content-type'] = 'application/x-www-form-urlencoded'; break;
    case 'raw': raw = generated.raw; headers['content-type'] = 'application/json'; break;
    case 'multipart': {
      const form = generated.body as { field: string; filename: string; type: string; content: string; framing: string };
      const part = `--b\r\nContent-Disposition: form-data; name="${form.field}"; filename="${form.filename}"\r\n${form.type ? `Content-Type: ${form.type}\r\n` : ''}\r\n${form.content}\r\n`;
      raw = { ok: `${part}--b--\r\n`, 'no boundary': `${part}--b--\r\n`, 'other boundary': `${part}--b--\r\n`, cut: part.slice(0, part.length >> 1), 'no parts': '--b--\r\n' }[form.framing] ?? '';
      headers['content-type'] = { 'no boundary': 'multipart/form-data', 'other boundary': 'multipart/form-data; boundary=zzz' }[form.framing] ?? 'multipart/form-data; boundary=b';
      break;
    }
    case 'none': break;
  }
  // A refused-only route's body sent any other way than whole JSON could be taken: it goes as JSON with the extra field.
  if (route.refusedOnly && generated.encoding !== 'json' && route.body) {
    raw = json;
    headers['content-type'] = 'application/json';
  }
  for (const [name, value] of generated.headers) {
    if (name === 'prefer' && route.refusedOnly && /async/.test(value)) continue;
    if (name === 'transfer-encoding') continue; // fetch frames the body itself
    headers[name] = value;
  }
  if (generated.keyInQuery) query.push(`apikey=${encode(project.serviceKey)}`);
  let method = generated.method ?? route.method;
  // Another method on a path that deletes may delete for real: only ever another method that reads.
  if (generated.method && (route.method === 'DELETE' || method === 'DELETE')) method = 'GET';
  if ((method === 'GET' || method === 'HEAD') && raw !== undefined) raw = undefined;
  return { method, url: `${path}${query.length ? `?${query.join('&')}` : ''}`, headers, raw };
}

// ---- checks ------------------------------------------------------------------------------------------------------

const STACK = /\n\s+at |\bat [\w.<>]+ \(|\/src\/|node_modules|\.[jt]s:\d+/;
const SQL = /\bselect\b[^"]{0,120}\bfrom\b|\binsert into\b|\bdelete from\b|\bupdate\s+\S+\s+set\b|\balter table\b|\bcreate (table|role|function|policy)\b|\bpg_catalog\.|\bjson_agg\b|\brow_to_json\b/i;

/** What no answer may be: a server error, a refusal without API.md's shape, one that shows internals or a secret. */
function problemOf(answer: Answer, method: string, sentText: string, auth: Generated['auth']): string | undefined {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (STACK.test(answer.text)) return `a stack trace or file path: ${answer.text.slice(0, 300)}`;
  const shown = [...secrets, ...keys.filter(({ shownTo }) => answer.status >= 400 || !shownTo.includes(auth)).map(({ key }) => key)];
  // A secret the request itself carried may come back quoted, except an SMTP password: settings show it masked.
  for (const secret of shown) if (answer.text.includes(secret) && (secret === SMTP_PASSWORD || !sentText.includes(secret))) return `secret ${secret.slice(0, 10)}…: ${answer.text.slice(0, 300)}`;
  if (answer.status >= 400 && method !== 'HEAD') {
    // Our SQL: the request's own text (an SQL console query, a name) may come back quoted; our statements never.
    if (SQL.test(answer.text) && !SQL.test(sentText)) return `SQL text: ${answer.text.slice(0, 300)}`;
    const body = answer.body as Record<string, unknown> | null;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return `not the error shape: ${answer.text.slice(0, 300)}`;
    const keys = Object.keys(body).sort().join(',');
    if (keys !== 'code,details,hint,message') return `error body keys ${keys}: ${answer.text.slice(0, 300)}`;
    if (typeof body.code !== 'string' || typeof body.message !== 'string' || (body.hint !== null && typeof body.hint !== 'string')) return `error field types: ${answer.text.slice(0, 300)}`;
    // A body of a type the route does not read is told as such, by whichever part refused it (as input-robustness requires).
    if (answer.status === 415 && body.code !== 'unsupported_media_type') return `415 with code ${String(body.code)}: ${answer.text.slice(0, 300)}`;
  }
  return undefined;
}

/** The project as read back: its event stream, tables, buckets, objects, settings, users and rows. */
async function stateOf(): Promise<string> {
  const get = async (url: string, headers: Record<string, string> = bearer(operator.token)) => {
    const answer = await call('GET', url, { headers });
    return `${answer.status} ${answer.text}`;
  };
  const base = `/api/projects/${project.id}`;
  const parts = await Promise.all([
    streamVersion(project.id).then(String),
    get(`${base}/tables`),
    get(`${base}/storage/buckets`),
    get(`${base}/storage/buckets/files/objects`, { apikey: project.serviceKey }),
    get(`${base}/auth/settings`),
    get(`${base}/rest/settings`),
    get(`${base}/auth/users?limit=1000`),
    get(`${base}/tables/items/rows?limit=1000&order=id`),
    get(`${base}/tables/parents/rows?limit=1000&order=id`),
  ]);
  return parts.join('\n');
}

/** Waits for the operation a 202 handed out (`Prefer: respond-async`) to finish, so that it changes nothing later. */
async function finished(answer: Answer, generated: Generated): Promise<void> {
  const operation = (answer.body as { operation?: { id?: string } })?.operation?.id;
  expect(operation, `202 without an operation: ${answer.text.slice(0, 300)}`).toBeTypeOf('string');
  const owner = generated.params.project === '<strangers>' ? stranger : operator;
  const id = pathValue(generated.params.project ?? '<project>');
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const state = await call('GET', `/api/projects/${id}/operations/${operation}`, { headers: bearer(owner.token) });
    expect(state.status, state.text).toBe(200);
    if (state.body.status === 'succeeded' || state.body.status === 'failed') return;
  }
  throw new Error(`operation ${operation} still not finished after 60 s`);
}

const stats = new Map<string, number>();

describe('generated management requests', () => {
  it('never answer a 5xx, refuse in the error shape without internals, and leave a refused change unapplied', async () => {
    let known: string | undefined;
    await fc.assert(
      fc.asyncProperty(request, async (generated) => {
        const route = ROUTES[generated.route]!;
        const sent = describeRequest(generated);
        const checks = route.mutates && generated.check;
        const before = checks ? (known ?? (await stateOf())) : undefined;
        const answer = await call(sent.method, sent.url, { headers: sent.headers, raw: sent.raw });
        const shown = JSON.stringify(sent).slice(0, 2000);
        if (process.env.FUZZ_STATS) {
          const key = `${route.method} ${route.path} ${answer.status} ${answer.status >= 400 ? `${(answer.body as { code?: string })?.code} ${String((answer.body as { message?: string })?.message).slice(0, 50)}` : ''}`;
          stats.set(key, (stats.get(key) ?? 0) + 1);
        }
        const sentText = [...Object.values(generated.params), ...generated.query.flat(), sent.raw ?? ''].map(pathValue).join(' ');
        expect(problemOf(answer, sent.method, sentText, generated.auth), shown).toBeUndefined();
        if (answer.status === 202) await finished(answer, generated);
        if (!route.mutates && generated.method === null) return;
        known = undefined;
        if (checks && answer.status >= 400) {
          const after = await stateOf();
          // An apply failure is recorded (the command and its failure, API.md → Waiting); nothing else may change.
          const applyFailed = answer.status === 422 && (answer.body as { code?: string })?.code === 'apply_failed';
          const compared = (state: string) => (applyFailed ? state.slice(state.indexOf('\n')) : state);
          expect(compared(after), `${shown}\nrefused with ${answer.status} ${answer.text.slice(0, 300)}, yet the project changed`).toBe(compared(before!));
          known = after;
        }
      }),
      fuzzRuns(2000),
    );
    if (process.env.FUZZ_STATS) console.log([...stats].sort().map(([k, n]) => `${n}\t${k}`).join('\n'));
  }, 900_000);
});
