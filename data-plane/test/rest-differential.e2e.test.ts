/**
 * The data API's filters, orders and pages against PostgreSQL itself:
 * generated filter trees (every operator a column's type takes, on columns
 * and a JSON path, `not.`, `(any)`/`(all)` lists, `or`/`and` nested, values
 * with the grammar's own punctuation in them, quoted where PostgREST's
 * syntax needs it and now and then where it does not) are sent as a query
 * string, and the same tree is written as a WHERE clause by hand and run
 * straight on the tenant database. A read must answer the same rows in the
 * same order with the same `count=exact` total, and a PATCH must write
 * those rows and no other; the management API's rows read, under the
 * filters it takes, must answer the same rows and total as well (fast-check,
 * seeded: FUZZ_SEED/FUZZ_RUNS).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call } from '../../deploy/test/http';
import { fuzzRuns } from '../../deploy/test/generated';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { listValue, pick, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let tenant: TenantDatabase;

/** Texts with PostgREST's punctuation in them: commas, quotes, parentheses, dots, colons, backslashes, stars. */
const TEXTS = ['a', 'A', 'ab', 'b,c', 'say "hi"', '(paren)', 'dot.ted', 'back\\slash', 'in space', 'é', '', 'NULL', 'null', '*star*', '%pct', '_us', 'x:y', 'a)b', '{curly}', 'it\'s'];
const NUMBERS = [-3, 0, 1, 2, 5, 7, 10, 42];
const PRICES = ['-0.25', '0', '1.5', '2', '2.50', '99.99'];
const DAYS = ['2026-01-01', '2026-01-02', '2026-02-28', '2026-12-31'];
const TAGS = ['red', 'green', 'blue', 'b,c', 'say "hi"'];
const ROWS = 48;


const sqlText = (text: string) => `'${text.replace(/'/g, "''")}'`;
const arrayLiteral = (items: string[]) => `{${items.map((t) => `"${t.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`;

beforeAll(async () => {
  p = await restProject('rest differential');
  const values = Array.from({ length: ROWS }, (_, i) => {
    const name = pick(TEXTS, i, 1);
    const n = pick(NUMBERS, i, 2);
    const price = pick(PRICES, i, 3);
    const flag = pick([true, false], i, 4);
    const day = pick(DAYS, i, 5);
    const tags = i % 9 === 0 ? null : TAGS.filter((_, t) => (i >> t) % 2 === 1 || (i + t) % 5 === 0);
    // A key whose value is a text, a number, JSON's null or missing.
    const k = pick(TEXTS, i, 6);
    const meta = i % 7 === 0 ? null : JSON.stringify(i % 5 === 0 ? {} : i % 6 === 0 ? { k: NUMBERS[i % NUMBERS.length] } : { k });
    return `(${i + 1}, ${name === null ? 'null' : sqlText(name)}, ${n ?? 'null'}, ${price ?? 'null'}, ${flag ?? 'null'}, ${day === null ? 'null' : sqlText(day)}, ${tags === null ? 'null' : sqlText(arrayLiteral(tags))}, ${meta === null ? 'null' : sqlText(meta)})`;
  });
  await sql(p, `
    create table things (id int primary key, name text, n int4, price numeric, flag bool, day date, tags text[], meta jsonb, touched int not null default 0);
    create policy "read" on things for select using (true);
    insert into things values ${values.join(', ')};
  `);
  tenant = await connectTenant(p.project.id);
  // The table is in the data plane's schema cache once its DDL's event has reached it.
  for (let waited = 0; (await call('GET', '/rest/v1/things?select=id&limit=1', { headers: p.anon })).status !== 200; waited += 100) {
    if (waited > 15_000) throw new Error('the data plane never saw table things');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

afterAll(async () => {
  await tenant?.end();
});

type Column = 'name' | 'n' | 'price' | 'flag' | 'day' | 'tags' | 'meta->>k';
type Leaf = { kind: 'leaf'; column: Column; op: string; value: string | string[]; negate: boolean; quote: boolean; quantifier?: 'any' | 'all' };
type Logic = { kind: 'logic'; op: 'and' | 'or'; children: Tree[]; negate: boolean };
type Tree = Leaf | Logic;

const COMPARISONS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'];
const scalarOf: Record<Exclude<Column, 'tags'>, fc.Arbitrary<string>> = {
  name: fc.constantFrom(...TEXTS),
  'meta->>k': fc.constantFrom(...TEXTS, ...NUMBERS.map(String)),
  n: fc.constantFrom(...NUMBERS.map(String)),
  price: fc.constantFrom(...PRICES),
  flag: fc.constantFrom('true', 'false'),
  day: fc.constantFrom(...DAYS),
};
const pattern = fc.constantFrom('a*', '*a*', '*', 'A*', '*.*', '*,*', 'say*', '*)', '%pct', '_us', '*\\\\*', 'é');

function leafOf(column: Column): fc.Arbitrary<Omit<Leaf, 'negate' | 'quote'>> {
  const is = fc.constantFrom('null', ...(column === 'flag' ? ['true', 'false', 'unknown'] : [])).map((value) => ({ kind: 'leaf' as const, column, op: 'is', value }));
  if (column === 'tags') {
    const list = fc.subarray(TAGS, { maxLength: 3 });
    return fc.oneof(fc.tuple(fc.constantFrom('cs', 'cd', 'ov'), list).map(([op, value]) => ({ kind: 'leaf' as const, column, op, value })), is);
  }
  const scalar = scalarOf[column];
  const ops = column === 'flag' ? ['eq', 'neq'] : COMPARISONS;
  const textual = column === 'name' || column === 'meta->>k';
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...ops, 'isdistinct'), scalar).map(([op, value]) => ({ kind: 'leaf' as const, column, op, value })) },
    {
      weight: column === 'flag' ? 0 : 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...(textual ? ['eq', 'gt', 'like', 'ilike'] : ['eq', 'gt', 'lte'])), fc.constantFrom('any' as const, 'all' as const), fc.array(textual ? fc.oneof(scalar, pattern) : scalar, { maxLength: 3 }))
        .map(([op, quantifier, value]) => ({ kind: 'leaf' as const, column, op, quantifier, value })),
    },
    ...(textual ? [{ weight: 1, arbitrary: fc.tuple(fc.constantFrom('match', 'imatch'), fc.constantFrom('^a', 'b$', '\\.', '[()]', '^$', 'A', '"', ',')).map(([op, value]) => ({ kind: 'leaf' as const, column, op, value })) }] : []),
    { weight: 2, arbitrary: fc.array(scalar, { maxLength: 4 }).map((value) => ({ kind: 'leaf' as const, column, op: 'in', value })) },
    { weight: 1, arbitrary: is },
    ...(textual ? [{ weight: 2, arbitrary: fc.tuple(fc.constantFrom('like', 'ilike'), pattern).map(([op, value]) => ({ kind: 'leaf' as const, column, op, value })) }] : []),
  );
}

const leaf: fc.Arbitrary<Leaf> = fc
  .tuple(fc.constantFrom<Column>('name', 'n', 'price', 'flag', 'day', 'tags', 'meta->>k').chain(leafOf), fc.boolean(), fc.boolean())
  .map(([l, negate, quote]) => ({ ...l, negate, quote }));

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: leaf },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('logic' as const), op: fc.constantFrom('and' as const, 'or' as const), children: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }), negate: fc.boolean() }) },
  ),
})).tree;


/** `op.value` as the query string writes it; inside a logic tree values with its punctuation are quoted. */
function operand(l: Leaf, inLogic: boolean): string {
  const not = l.negate ? 'not.' : '';
  if (l.op === 'in') return `${not}in.(${(l.value as string[]).map((v) => listValue(v, l.quote)).join(',')})`;
  if (l.quantifier) {
    const literal = arrayLiteral(l.value as string[]);
    return `${not}${l.op}(${l.quantifier}).${inLogic ? listValue(literal, true) : literal}`;
  }
  if (l.op === 'cs' || l.op === 'cd' || l.op === 'ov') {
    const literal = arrayLiteral(l.value as string[]);
    return `${not}${l.op}.${inLogic ? listValue(literal, true) : literal}`;
  }
  const value = l.value as string;
  // `is` takes a keyword, never a quoted value.
  return `${not}${l.op}.${inLogic && l.op !== 'is' ? listValue(value, l.quote) : value}`;
}

function inner(t: Tree): string {
  if (t.kind === 'leaf') return `${t.column}.${operand(t, true)}`;
  return `${t.negate ? 'not.' : ''}${t.op}(${t.children.map(inner).join(',')})`;
}

/** The query string's pairs for a tree at the top: a leaf is `col=op.value`, a logic tree `[not.]or=(…)`. */
function pairsOf(t: Tree): Array<[string, string]> {
  if (t.kind === 'leaf') return [[t.column, operand(t, false)]];
  return [[`${t.negate ? 'not.' : ''}${t.op}`, `(${t.children.map(inner).join(',')})`]];
}

const SQL_OPERATORS: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=', like: 'like', ilike: 'ilike', match: '~', imatch: '~*', isdistinct: 'is distinct from', cs: '@>', cd: '<@', ov: '&&' };
const TYPES: Record<Column, string> = { name: 'text', n: 'int4', price: 'numeric', flag: 'bool', day: 'date', tags: 'text[]', 'meta->>k': 'text' };
/** A column as SQL names it: a JSON path as its operator and a literal key. */
const columnSql = (column: Column) => (column === 'meta->>k' ? `"meta"->>'k'` : `"${column}"`);

/** The same tree as a WHERE clause, written by hand for PostgreSQL. */
function whereOf(t: Tree): string {
  if (t.kind === 'logic') {
    const joined = `(${t.children.map(whereOf).join(` ${t.op} `)})`;
    return t.negate ? `not ${joined}` : joined;
  }
  const col = columnSql(t.column);
  let condition: string;
  if (t.op === 'is') condition = `${col} is ${t.value}`;
  else if (t.op === 'in') condition = (t.value as string[]).length === 0 ? 'false' : `${col} in (${(t.value as string[]).map((v) => `${sqlText(v)}::${TYPES[t.column]}`).join(', ')})`;
  else if (t.quantifier) {
    const items = (t.value as string[]).map((v) => (t.op === 'like' || t.op === 'ilike' ? v.replace(/\*/g, '%') : v));
    condition = `${col} ${SQL_OPERATORS[t.op]} ${t.quantifier}(${sqlText(arrayLiteral(items))}::${TYPES[t.column]}[])`;
  } else if (t.op === 'like' || t.op === 'ilike') condition = `${col} ${t.op} ${sqlText((t.value as string).replace(/\*/g, '%'))}`;
  else if (t.column === 'tags') condition = `${col} ${SQL_OPERATORS[t.op]} ${sqlText(arrayLiteral(t.value as string[]))}::text[]`;
  else condition = `${col} ${SQL_OPERATORS[t.op]} ${sqlText(t.value as string)}::${TYPES[t.column]}`;
  return t.negate ? `not (${condition})` : condition;
}

const order = fc.option(
  fc.record({ column: fc.constantFrom<Column>('name', 'n', 'price', 'flag', 'day', 'meta->>k'), desc: fc.boolean(), nulls: fc.constantFrom(undefined, 'nullsfirst', 'nullslast') }),
  { freq: 2 },
);
const page = fc.record({ limit: fc.option(fc.nat(12), { freq: 2 }), offset: fc.option(fc.nat(20), { freq: 3 }) });

describe('filters against PostgreSQL', () => {
  it('answer the rows a hand-written WHERE clause selects, in the order and page asked', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(tree, { minLength: 1, maxLength: 2 }), order, page, async (trees, sort, { limit, offset }) => {
        const pairs = trees.flatMap(pairsOf);
        const orderText = sort ? `${sort.column}.${sort.desc ? 'desc' : 'asc'}${sort.nulls ? `.${sort.nulls}` : ''},id` : 'id';
        const query = [['select', 'id'], ...pairs, ['order', orderText], ...(limit !== null ? [['limit', String(limit)]] : []), ...(offset !== null ? [['offset', String(offset)]] : [])]
          .map(([k, v]) => `${encodeURIComponent(k!)}=${encodeURIComponent(v!)}`)
          .join('&');
        const answer = await call('GET', `/rest/v1/things?${query}`, { headers: { ...p.anon, prefer: 'count=exact' } });
        const orderSql = sort ? `${columnSql(sort.column)} ${sort.desc ? 'desc' : 'asc'}${sort.nulls === 'nullsfirst' ? ' nulls first' : sort.nulls === 'nullslast' ? ' nulls last' : ''}, id` : 'id';
        const statement = `select id from things where ${trees.map(whereOf).join(' and ')} order by ${orderSql}${limit !== null ? ` limit ${limit}` : ''}${offset !== null ? ` offset ${offset}` : ''}`;
        const expected = (await tenant.client.query<{ id: number }>(statement)).rows.map((row) => row.id);
        const [{ total }] = (await tenant.client.query<{ total: number }>(`select count(*)::int as total from things where ${trees.map(whereOf).join(' and ')}`)).rows as [{ total: number }];
        const counted = answer.headers.get('content-range')?.split('/')[1];
        // 200 for the whole, 206 for a part (the statuses are rest-read's to check); an offset past the rows is 416, as PostgREST's.
        if (answer.status === 416) {
          expect({ query: decodeURIComponent(query), expected, offset: (offset ?? 0) > 0 }).toEqual({ query: decodeURIComponent(query), expected: [], offset: true });
          return;
        }
        const ok = answer.status === 200 || answer.status === 206;
        expect({ query: decodeURIComponent(query), ok, ids: answer.body, total: counted }).toEqual({ query: decodeURIComponent(query), ok: true, ids: expected.map((id) => ({ id })), total: String(total) });
      }),
      fuzzRuns(300),
    );
  }, 300_000);

  it('update the rows a hand-written WHERE clause selects, and only those', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(tree, { minLength: 1, maxLength: 2 }), async (trees) => {
        round++;
        const query = [['select', 'id'], ...trees.flatMap(pairsOf)].map(([k, v]) => `${encodeURIComponent(k!)}=${encodeURIComponent(v!)}`).join('&');
        const expected = (await tenant.client.query<{ id: number }>(`select id from things where ${trees.map(whereOf).join(' and ')} order by id`)).rows.map((row) => row.id);
        const answer = await call('PATCH', `/rest/v1/things?${query}`, { headers: { ...p.service, prefer: 'return=representation' }, body: { touched: round } });
        const ids = Array.isArray(answer.body) ? (answer.body as Array<{ id: number }>).map((row) => row.id).sort((a, b) => a - b) : answer.body;
        const written = (await tenant.client.query<{ id: number }>('select id from things where touched = $1 order by id', [round])).rows.map((row) => row.id);
        expect({ query: decodeURIComponent(query), status: answer.status, ids, written }).toEqual({ query: decodeURIComponent(query), status: 200, ids: expected, written: expected });
      }),
      fuzzRuns(100),
    );
  }, 300_000);
});

/** The management API's rows read (`GET /api/projects/:id/tables/:t/rows`) takes PostgREST's filters on columns, without logic trees or array operators. */
const rowsLeaf: fc.Arbitrary<Leaf> = leaf.filter((l) => !l.column.includes('->') && l.column !== 'tags' && !l.quantifier && l.op !== 'isdistinct' && l.op !== 'match' && l.op !== 'imatch');

describe('the management API’s rows read against PostgreSQL', () => {
  it('answers the rows and total a hand-written WHERE clause selects, in the order and page asked', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rowsLeaf, { minLength: 1, maxLength: 3 }), order.filter((o) => o === null || !o.column.includes('->')), page, async (leaves, sort, { limit, offset }) => {
        const orderText = sort ? `${sort.column}.${sort.desc ? 'desc' : 'asc'}${sort.nulls ? `.${sort.nulls}` : ''},id` : 'id';
        const query = [...leaves.flatMap(pairsOf), ['order', orderText], ...(limit !== null ? [['limit', String(limit)]] : []), ...(offset !== null ? [['offset', String(offset)]] : [])]
          .map(([k, v]) => `${encodeURIComponent(k!)}=${encodeURIComponent(v!)}`)
          .join('&');
        const answer = await call('GET', `/api/projects/${p.project.id}/tables/things/rows?${query}`, { headers: bearer(p.operator.token) });
        const where = leaves.map(whereOf).join(' and ');
        const orderSql = sort ? `${columnSql(sort.column)} ${sort.desc ? 'desc' : 'asc'}${sort.nulls === 'nullsfirst' ? ' nulls first' : sort.nulls === 'nullslast' ? ' nulls last' : ''}, id` : 'id';
        const expected = (await tenant.client.query<{ id: number }>(`select id from things where ${where} order by ${orderSql} limit ${limit ?? 100} offset ${offset ?? 0}`)).rows.map((row) => row.id);
        const [{ total }] = (await tenant.client.query<{ total: number }>(`select count(*)::int as total from things where ${where}`)).rows as [{ total: number }];
        const ids = Array.isArray(answer.body?.rows) ? (answer.body.rows as Array<{ id: number }>).map((row) => row.id) : answer.body;
        expect({ query: decodeURIComponent(query), status: answer.status, ids, total: answer.body?.total }).toEqual({ query: decodeURIComponent(query), status: 200, ids: expected, total });
      }),
      fuzzRuns(150),
    );
  }, 300_000);
});
