/**
 * The data API against generated requests: query strings, bodies (JSON, CSV,
 * forms, types it does not read) and headers put together from its grammar's own words and punctuation (fast-check,
 * seeded, so a failure names the seed and the shrunk request that shows it).
 * Whatever a request says, the answer is never a 5xx, a refusal has the
 * error shape of API.md, and no answer shows a stack trace or our SQL. The
 * project also exposes a schema `api` holding the same tables and functions,
 * which the profile headers pick now and then.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { fuzzRuns } from '../../deploy/test/generated';
import { bearer, call, type Answer } from '../../deploy/test/http';
import { blogSchema, restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let user: string;

beforeAll(async () => {
  p = await restProject('rest fuzz');
  await blogSchema(p);
  // The blog's tables, keys and functions again in schema api (RLS on there as in public, readable by all).
  await sql(p, `
    create schema api;
    grant usage on schema api to anon, authenticated, service_role;
    create table api.authors (like public.authors including all);
    create table api.posts (like public.posts including all, foreign key (author_id) references api.authors (id));
    create table api.comments (like public.comments including all, foreign key (post_id) references api.posts (id));
    insert into api.authors select * from public.authors;
    insert into api.posts select * from public.posts;
    insert into api.comments select * from public.comments;
    create policy "read" on api.authors for select using (true);
    create policy "read" on api.posts for select using (true);
    create policy "read" on api.comments for select using (true);
    grant all on all tables in schema api to anon, authenticated, service_role;
    create function api.add_numbers(a int, b int default 1) returns int language sql immutable as $$ select a + b $$;
    create function api.posts_by_author(author bigint) returns setof api.posts language sql stable as $$ select * from api.posts where author_id = author order by id $$;
    create function api.whoami() returns json language sql stable as $$ select json_build_object('uid', auth.uid(), 'role', auth.role()) $$;
    create function api.touch_nothing() returns void language sql as $$ select $$;
    grant execute on all functions in schema api to anon, authenticated, service_role;
  `);
  const exposed = await call('PATCH', `/api/projects/${p.project.id}/rest/settings`, { headers: bearer(p.operator.token), body: { exposedSchemas: ['public', 'api'] } });
  if (exposed.status !== 200) throw new Error(`schema api not exposed: ${exposed.text}`);
  user = (await signUpUser(p)).token;
  // Every replica follows the settings within a second or so.
  for (let waited = 0; (await call('GET', '/rest/v1/posts?select=id&limit=1', { headers: { ...p.anon, 'accept-profile': 'api' } })).status !== 200; waited += 100) {
    if (waited > 15_000) throw new Error('the data plane never served schema api');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

const COLUMNS = ['id', 'title', 'author_id', 'published', 'score', 'tags', 'meta', 'name', 'email', 'body', 'post_id', 'nope', '*'];
const EMBEDS = ['authors', 'posts', 'comments', 'posts_by_author', 'nope'];
const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch', 'in', 'is', 'isdistinct', 'fts', 'plfts', 'phfts', 'wfts', 'cs', 'cd', 'ov', 'sl', 'sr', 'nxr', 'nxl', 'adj', 'not', 'or', 'and', 'any', 'all', 'asc', 'desc', 'nullsfirst', 'nullslast', 'inner', 'left', 'english'];
const VALUES = ['1', '-1', '0', '1.5', '1e309', '99999999999999999999', 'null', 'true', 'false', 'unknown', 'NaN', 'Infinity', 'a b', '{a,b}', '[1,2)', '2024-01-01', 'Hello world', 'é', '🙂', 'x'.repeat(300), '\u0000', '$1', "'", ';', '--', '/*'];
const PUNCTUATION = ['(', ')', ',', '.', ':', '::', '!', '*', '"', '\\', '->', '->>', '~', '^', '@', '%', '&', '=', '+', '[', ']', '{', '}', ' ', '...', 'text', 'int', 'json'];

const word = fc.constantFrom(...COLUMNS, ...EMBEDS, ...OPERATORS, ...VALUES, ...PUNCTUATION);
/** Nonsense made of the grammar's words. */
const noise = fc.array(word, { minLength: 0, maxLength: 8 }).map((words) => words.join(''));
/** A well-formed text with, now and then, one of the grammar's words put in at some place. */
const mutated = (text: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 6, arbitrary: text },
    { weight: 1, arbitrary: fc.tuple(text, word, fc.nat()).map(([t, w, at]) => t.slice(0, at % (t.length + 1)) + w + t.slice(at % (t.length + 1))) },
    { weight: 1, arbitrary: fc.tuple(text, fc.nat()).map(([t, at]) => t.slice(0, at % (t.length + 1))) },
    { weight: 1, arbitrary: noise },
  );

const column = fc.constantFrom(...COLUMNS);
const value = fc.constantFrom(...VALUES);
const path = fc.tuple(column, fc.array(fc.tuple(fc.constantFrom('->', '->>'), fc.oneof(fc.constantFrom('lang', 'a', 'b'), fc.nat(3).map(String))), { maxLength: 2 }))
  .map(([c, steps]) => c + steps.map(([arrow, key]) => arrow + key).join(''));
const cast = fc.option(fc.constantFrom('text', 'int', 'json', 'jsonb', 'bigint', 'nope', 'text[]'), { freq: 3 }).map((t) => (t ? `::${t}` : ''));
const alias = fc.option(fc.constantFrom('a', 'b', 'x y', 'id'), { freq: 3 }).map((a) => (a ? `${a}:` : ''));
const hint = fc.option(fc.constantFrom('!inner', '!left', '!posts_author_id_fkey', '!author_id', '!nope', '!inner!left'), { freq: 3 }).map((h) => h ?? '');
const selectList: fc.Arbitrary<string> = fc.letrec<{ list: string; item: string }>((tie) => ({
  item: fc.oneof(
    { weight: 3, arbitrary: fc.tuple(alias, path, cast).map((parts) => parts.join('')) },
    { weight: 1, arbitrary: fc.tuple(alias, fc.constantFrom(...EMBEDS), hint, tie('list')).map(([a, e, h, l]) => `${a}${e}${h}(${l})`) },
    { weight: 1, arbitrary: fc.constantFrom('count()', 'id.count()', 'score.sum()', 'score.avg()::int', 'title.max()', '...authors(name)') },
  ),
  list: fc.array(tie('item'), { minLength: 1, maxLength: 4 }).map((items) => items.join(',')),
})).list;

const operand = fc.oneof(
  fc.tuple(fc.constantFrom('eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch', 'isdistinct', 'fts', 'plfts', 'phfts', 'wfts', 'fts(english)', 'sl', 'sr', 'nxr', 'nxl', 'adj'), value).map(([o, v]) => `${o}.${v}`),
  fc.constantFrom('is.null', 'is.true', 'is.false', 'is.unknown', 'is.nope'),
  fc.array(value, { maxLength: 4 }).map((vs) => `in.(${vs.map((v) => (/[,()"]/.test(v) ? `"${v}"` : v)).join(',')})`),
  fc.tuple(fc.constantFrom('cs', 'cd', 'ov'), fc.array(value, { maxLength: 3 })).map(([o, vs]) => `${o}.{${vs.join(',')}}`),
  fc.tuple(fc.constantFrom('eq', 'like', 'gt', 'ilike'), fc.constantFrom('any', 'all'), fc.array(value, { maxLength: 3 })).map(([o, q, vs]) => `${o}(${q}).{${vs.join(',')}}`),
);
const condition = fc.tuple(fc.boolean(), operand).map(([negated, o]) => `${negated ? 'not.' : ''}${o}`);
const tree: fc.Arbitrary<string> = fc.letrec<{ tree: string; member: string }>((tie) => ({
  member: fc.oneof(
    { weight: 3, arbitrary: fc.tuple(path, condition).map(([c, o]) => `${c}.${o}`) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('or', 'and', 'not.or', 'not.and'), tie('tree')).map(([l, t]) => `${l}${t}`) },
  ),
  tree: fc.array(tie('member'), { minLength: 1, maxLength: 3 }).map((ms) => `(${ms.join(',')})`),
})).tree;
const order = fc.array(fc.tuple(fc.oneof(path, fc.constantFrom('authors(name)', 'posts(title)', 'nope(id)')), fc.constantFrom('', '.asc', '.desc'), fc.constantFrom('', '.nullsfirst', '.nullslast')), { minLength: 1, maxLength: 3 })
  .map((items) => items.map((parts) => parts.join('')).join(','));
const embedPrefix = fc.option(fc.constantFrom('authors.', 'posts.', 'comments.', 'posts.comments.', 'nope.'), { freq: 4 }).map((e) => e ?? '');

const parameter = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(embedPrefix, path, mutated(condition)).map(([e, c, v]) => [`${e}${c}`, v] as const) },
  { weight: 2, arbitrary: mutated(selectList).map((v) => ['select', v] as const) },
  { weight: 1, arbitrary: fc.tuple(embedPrefix, fc.constantFrom('or', 'and', 'not.or', 'not.and'), mutated(tree)).map(([e, k, v]) => [`${e}${k}`, v] as const) },
  { weight: 1, arbitrary: fc.tuple(embedPrefix, mutated(order)).map(([e, v]) => [`${e}order`, v] as const) },
  { weight: 1, arbitrary: fc.tuple(embedPrefix, fc.constantFrom('limit', 'offset'), mutated(fc.constantFrom('0', '1', '2', '-1', '1.5', 'a', '99999999999999999999'))).map(([e, k, v]) => [`${e}${k}`, v] as const) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('columns', 'on_conflict', 'a', 'b', 'author'), mutated(fc.array(column, { minLength: 1, maxLength: 3 }).map((cs) => cs.join(',')))) },
  { weight: 1, arbitrary: fc.tuple(noise, noise) },
);

const PATHS = ['posts', 'posts', 'authors', 'comments', 'nope', 'rpc/add_numbers', 'rpc/posts_by_author', 'rpc/whoami', 'rpc/touch_nothing', 'rpc/nope', ''];
/** A header now and then, mostly one the data API reads. */
const header = (name: string, values: string[]) =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: mutated(fc.constantFrom(...values)).map((v) => [name, v] as const) });
const headers = fc.tuple(
  header('prefer', ['count=exact', 'count=planned', 'count=estimated', 'return=representation', 'return=minimal', 'handling=strict', 'missing=default', 'resolution=merge-duplicates', 'resolution=ignore-duplicates', 'params=single-object', 'max-affected=1', 'timezone=Asia/Tokyo', 'tx=rollback', 'return=representation, count=exact']),
  header('accept', ['application/json', 'text/csv', 'application/vnd.pgrst.object+json', 'application/vnd.pgrst.array+json;nulls=stripped', 'application/vnd.pgrst.object+json;nulls=stripped', 'application/vnd.pgrst.plan+json', 'application/openapi+json', 'application/geo+json', '*/*', 'text/plain']),
  header('range', ['0-1', '5-', '-1', '1-0', 'items=0-0']),
  header('accept-profile', ['public', 'api', 'api', 'storage']),
  header('content-profile', ['public', 'api', 'api', 'auth']),
  fc.boolean(),
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.constantFrom(...COLUMNS, 'a', 'b', 'author'), fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }))),
  fc.array(fc.dictionary(fc.constantFrom(...COLUMNS), fc.oneof(fc.integer(), fc.string(), fc.constant(null))), { maxLength: 3 }),
);

/** How a body goes: mostly JSON, now and then as CSV, a form or a type the data API does not read. */
const ENCODINGS = ['json', 'json', 'json', 'json', 'csv', 'form', 'text/plain'] as const;

interface Generated {
  method: string;
  path: string;
  query: Array<readonly [string, string]>;
  headers: Array<readonly [string, string] | undefined | boolean>;
  body: unknown;
  encoding: (typeof ENCODINGS)[number];
}

/** A field's text in a CSV line or a form: a string as it is, anything else as JSON. */
const fieldText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value) ?? '');
const objectsOf = (body: unknown): Array<Record<string, unknown>> =>
  (Array.isArray(body) ? body : [body]).filter((row): row is Record<string, unknown> => typeof row === 'object' && row !== null && !Array.isArray(row));

/** The generated body written in its encoding, with the content type that says so. */
function encoded(body: unknown, encoding: Generated['encoding']): { raw: string; contentType: string } {
  if (encoding === 'form') {
    const [first] = objectsOf(body);
    return { raw: new URLSearchParams(Object.entries(first ?? {}).map(([k, v]): [string, string] => [k, fieldText(v)])).toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  if (encoding === 'csv') {
    const rows = objectsOf(body);
    const names = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;
    const lines = [names.join(','), ...rows.map((row) => names.map((name) => (row[name] === null || row[name] === undefined ? 'NULL' : quote(fieldText(row[name])))).join(','))];
    return { raw: lines.join('\n'), contentType: 'text/csv' };
  }
  return { raw: JSON.stringify(body), contentType: encoding === 'json' ? 'application/json' : encoding };
}

const request = fc.record({
  method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT'),
  path: fc.constantFrom(...PATHS),
  query: fc.array(parameter, { maxLength: 4 }),
  headers,
  body,
  encoding: fc.constantFrom(...ENCODINGS),
});

/** Sends a generated request; a write's filters always add `id=lt.0`, so it touches no fixture row. */
async function send(generated: Generated): Promise<Answer> {
  // A slice may split a surrogate pair, which encodeURIComponent refuses: a lone half becomes '?'.
  const encode = (text: string) => encodeURIComponent(text.replace(/[\uD800-\uDFFF]/gu, '?'));
  const query = generated.query.map(([key, value]) => `${encode(key)}=${encode(value)}`);
  const writes = generated.method === 'PATCH' || generated.method === 'DELETE' || generated.method === 'PUT';
  if (writes && !generated.path.startsWith('rpc/')) query.push('id=lt.0');
  type Pair = readonly [string, string] | undefined;
  const [prefer, accept, range, profile, contentProfile, asUser] = generated.headers as [Pair, Pair, Pair, Pair, Pair, boolean];
  const sent: Record<string, string> = { ...p.anon, ...(asUser ? { authorization: `Bearer ${user}` } : {}) };
  for (const pair of [prefer, accept, range, profile, contentProfile]) if (pair) sent[pair[0]] = pair[1].replace(/[^\x20-\x7e]/g, '?');
  const hasBody = generated.method !== 'GET' && generated.method !== 'HEAD' && generated.body !== undefined;
  if (!hasBody) return call(generated.method, `/rest/v1/${generated.path}${query.length > 0 ? `?${query.join('&')}` : ''}`, { headers: sent });
  const { raw, contentType } = encoded(generated.body, generated.encoding);
  return call(generated.method, `/rest/v1/${generated.path}${query.length > 0 ? `?${query.join('&')}` : ''}`, { headers: { ...sent, 'content-type': contentType }, raw });
}

/** What no answer may be: a server error, a refusal without API.md's shape, or one that shows internals. */
function problemOf(answer: Answer, method: string): string | undefined {
  if (answer.status >= 500) return `status ${answer.status}: ${answer.text.slice(0, 300)}`;
  if (/\n\s+at |node_modules|\.ts:\d+/.test(answer.text)) return `a stack trace: ${answer.text.slice(0, 300)}`;
  if (/\b(select|from)\b.*\bpg_catalog\b|\bjson_agg\b|\bbp_[a-z_]+\b/i.test(answer.text)) return `our SQL: ${answer.text.slice(0, 300)}`;
  if (answer.status >= 400 && method !== 'HEAD') {
    const shape = answer.body as Record<string, unknown> | undefined;
    if (typeof shape?.code !== 'string' || typeof shape.message !== 'string' || !('details' in shape) || !('hint' in shape)) return `not the error shape: ${answer.text.slice(0, 300)}`;
  }
  return undefined;
}

describe('generated requests', () => {
  it('never answer a 5xx, and refuse in the error shape without internals', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (generated) => {
        const answer = await send(generated);
        const problem = problemOf(answer, generated.method);
        expect(problem, JSON.stringify(generated)).toBeUndefined();
      }),
      fuzzRuns(1000),
    );
  }, 600_000);
});
