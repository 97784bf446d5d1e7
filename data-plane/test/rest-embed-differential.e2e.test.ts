/**
 * The data API's resource embedding against an oracle written in plain
 * TypeScript: generated `select=` trees (to-one, to-many, one-to-one,
 * many-to-many and a key of a table to itself, from tables, a view and an
 * rpc, nested up to three levels, aliases, hints, `!inner`, spreads) with
 * filters, logic trees, null filters, related orders, orders and pages at
 * every level go to the data API, and the same answer is built from the
 * tables as the caller reads them straight from the tenant database (under
 * row-level security), following PostgREST's semantics and the README where
 * this project documents its own (a null filter or `!inner` counts within
 * the embedding's page). The answers and their `count=exact` totals must be
 * equal: in order where an order is asked, as sets where not (fast-check,
 * seeded: FUZZ_SEED/FUZZ_RUNS). The same runs again with the tables in a
 * schema of their own that the project exposes (and makes its default), so
 * every name the statements write goes through that schema.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call } from '../../deploy/test/http';
import { fuzzRuns } from '../../deploy/test/generated';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { listValue, pick, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let tenant: TenantDatabase;

type Value = string | number | null;
type Row = Record<string, Value>;
type Table = 'authors' | 'profiles' | 'posts' | 'comments' | 'tags' | 'post_tags' | 'post_view';

/**
 * Words, some with the grammar's punctuation (quoted in a list or a logic tree), in ASCII: the tenant
 * database's collation is C.UTF-8, whose order is JavaScript's for these.
 */
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'kappa', 'omega', 'ab', 'ba', 'x', 'Ab', 'a,b', 'x(y)', 'say "hi"', 'dot.ted', 'back\\slash', 'in space'];
const NUMBERS = [0, 1, 2, 3, 5, 8];

const COLUMNS: Record<Table, { key: string[]; text: string[]; int: string[] }> = {
  authors: { key: ['id'], text: ['name'], int: ['id', 'rank'] },
  profiles: { key: ['author_id'], text: ['bio'], int: ['author_id'] },
  posts: { key: ['id'], text: ['title'], int: ['id', 'score', 'author_id', 'editor_id'] },
  comments: { key: ['id'], text: ['body'], int: ['id', 'post_id', 'votes', 'Likes', 'reply_to'] },
  tags: { key: ['id'], text: ['label'], int: ['id'] },
  post_tags: { key: ['post_id', 'tag_id'], text: [], int: ['post_id', 'tag_id', 'weight'] },
  // A view over posts without editor_id: its relationships are inferred from posts' keys, unambiguous here.
  post_view: { key: ['id'], text: ['title'], int: ['id', 'score', 'author_id'] },
};
const columnsOf = (table: Table) => [...new Set([...COLUMNS[table].key, ...COLUMNS[table].int, ...COLUMNS[table].text])];

const literal = (v: Value) => (v === null ? 'null' : typeof v === 'number' ? String(v) : `'${v}'`);

/** The rows to insert: parents without children (authors 4 and 6, tag 5), children without parents (posts and comments with a null key). */
function seedRows(): Record<Table, Row[]> {
  const authors = Array.from({ length: 6 }, (_, i) => ({ id: i + 1, name: pick(WORDS, i, 1), rank: pick(NUMBERS, i, 2) }));
  const profiles = [1, 3, 5].map((id, i) => ({ author_id: id, bio: pick(WORDS, i, 3) }));
  const posts = Array.from({ length: 14 }, (_, i) => ({ id: i + 1, title: pick(WORDS, i, 4), score: pick(NUMBERS, i, 5), author_id: pick([1, 2, 3, 5], i, 6), editor_id: pick([2, 3, 1], i, 7) }));
  const comments = Array.from({ length: 26 }, (_, i) => ({ id: i + 1, post_id: pick([1, 2, 3, 4, 6, 7, 9, 12], i, 8), body: pick(WORDS, i, 9), votes: pick(NUMBERS, i, 10), Likes: pick(NUMBERS, i, 13), reply_to: pick([1, 2, 3, 5, 8, 13], i, 14) }));
  const tags = Array.from({ length: 5 }, (_, i) => ({ id: i + 1, label: pick(WORDS, i, 11) ?? 'zeta' }));
  const post_tags: Row[] = [];
  for (let post = 1; post <= 14; post++) for (let tag = 1; tag <= 4; tag++) if ((post * 3 + tag * 5) % 7 < 3) post_tags.push({ post_id: post, tag_id: tag, weight: pick(NUMBERS, post + tag, 12) });
  return { authors, profiles, posts, comments, tags, post_tags, post_view: [] };
}

/** The tables as the tenant database holds them, read once. */
let data: Record<Table, Row[]>;

/** A relationship as `select=` names it from one table, and how the oracle follows it. */
interface Rel {
  from: Table;
  /** A table's name, or for a key of a table to itself the key's column (the row it references). */
  name: string;
  /** Ways to tell it from the other relationship to the same table: its key's name or the key's column. */
  hints?: string[];
  /** Hints it may be given though it needs none (the key, its column, a many-to-many's junction). */
  optionalHints?: string[];
  to: Table;
  many: boolean;
  related(parent: Row): Row[];
}
const where = (table: Table, test: (row: Row) => boolean) => data[table].filter(test);
const RELS: Rel[] = [
  { from: 'authors', name: 'posts', hints: ['written_by', 'author_id'], to: 'posts', many: true, related: (a) => where('posts', (r) => r.author_id === a.id) },
  { from: 'authors', name: 'posts', hints: ['edited_by', 'editor_id'], to: 'posts', many: true, related: (a) => where('posts', (r) => r.editor_id === a.id) },
  { from: 'authors', name: 'profiles', to: 'profiles', many: false, related: (a) => where('profiles', (r) => r.author_id === a.id) },
  { from: 'profiles', name: 'authors', to: 'authors', many: false, related: (pr) => where('authors', (r) => r.id === pr.author_id) },
  { from: 'posts', name: 'authors', hints: ['written_by', 'author_id'], to: 'authors', many: false, related: (po) => where('authors', (r) => r.id === po.author_id) },
  { from: 'posts', name: 'authors', hints: ['edited_by', 'editor_id'], to: 'authors', many: false, related: (po) => where('authors', (r) => r.id === po.editor_id) },
  { from: 'posts', name: 'comments', optionalHints: ['comments_post_id_fkey', 'post_id'], to: 'comments', many: true, related: (po) => where('comments', (r) => r.post_id === po.id) },
  { from: 'posts', name: 'tags', optionalHints: ['post_tags'], to: 'tags', many: true, related: (po) => where('tags', (t) => data.post_tags.some((j) => j.post_id === po.id && j.tag_id === t.id)) },
  { from: 'posts', name: 'post_tags', to: 'post_tags', many: true, related: (po) => where('post_tags', (r) => r.post_id === po.id) },
  // A key of comments to itself: by the table's name the replies, by the key's column the comment replied to.
  { from: 'comments', name: 'comments', optionalHints: ['reply_to'], to: 'comments', many: true, related: (c) => where('comments', (r) => r.reply_to === c.id) },
  { from: 'comments', name: 'reply_to', to: 'comments', many: false, related: (c) => where('comments', (r) => r.id === c.reply_to) },
  { from: 'comments', name: 'posts', optionalHints: ['comments_post_id_fkey', 'post_id'], to: 'posts', many: false, related: (c) => where('posts', (r) => r.id === c.post_id) },
  { from: 'tags', name: 'posts', optionalHints: ['post_tags'], to: 'posts', many: true, related: (t) => where('posts', (po) => data.post_tags.some((j) => j.tag_id === t.id && j.post_id === po.id)) },
  { from: 'post_tags', name: 'posts', to: 'posts', many: false, related: (j) => where('posts', (r) => r.id === j.post_id) },
  { from: 'post_tags', name: 'tags', to: 'tags', many: false, related: (j) => where('tags', (r) => r.id === j.tag_id) },
  { from: 'post_view', name: 'authors', optionalHints: ['written_by', 'author_id'], to: 'authors', many: false, related: (po) => where('authors', (r) => r.id === po.author_id) },
  { from: 'authors', name: 'post_view', optionalHints: ['written_by', 'author_id'], to: 'post_view', many: true, related: (a) => where('post_view', (r) => r.author_id === a.id) },
  { from: 'post_view', name: 'comments', to: 'comments', many: true, related: (po) => where('comments', (r) => r.post_id === po.id) },
  { from: 'comments', name: 'post_view', to: 'post_view', many: false, related: (c) => where('post_view', (r) => r.id === c.post_id) },
  { from: 'post_view', name: 'tags', to: 'tags', many: true, related: (po) => where('tags', (t) => data.post_tags.some((j) => j.post_id === po.id && j.tag_id === t.id)) },
  { from: 'tags', name: 'post_view', to: 'post_view', many: true, related: (t) => where('post_view', (po) => data.post_tags.some((j) => j.tag_id === t.id && j.post_id === po.id)) },
  { from: 'post_tags', name: 'post_view', to: 'post_view', many: false, related: (j) => where('post_view', (r) => r.id === j.post_id) },
];

interface Filter { column: string; op: string; value: string | string[]; negate: boolean; quote: boolean }
/** A term of `order=`: a column, or with `embed` a column of this level's to-one embedding (`order=writer(name)`). */
interface OrderTerm { column: string; desc: boolean; nulls?: 'nullsfirst' | 'nullslast'; embed?: number }
/** One level of the answer: the root or an embedding. */
interface Level {
  table: Table;
  columns: string[];
  star: boolean;
  embeds: Embed[];
  filters: Filter[];
  /** `[not.]or=(…)` or `and=(…)`, when given: filters, and null tests of this level's embeddings. */
  logic?: Logic;
  /** Null filters on this level's embeddings: index into `embeds`, and whether `is.null`. */
  nullFilters: Array<{ index: number; isNull: boolean }>;
  order?: OrderTerm[];
  limit?: number;
  offset?: number;
}
interface Logic { op: 'or' | 'and'; negate: boolean; items: Array<Filter | { embed: number; isNull: boolean } | Logic> }
interface Embed { rel: Rel; hint?: string; alias?: string; inner: boolean; spread: boolean; level: Level }

const nameOf = (e: Embed) => e.alias ?? e.rel.name;

const filterOf = (table: Table): fc.Arbitrary<Filter> => {
  const { text, int } = COLUMNS[table];
  const word = fc.constantFrom(...WORDS);
  const number = fc.constantFrom(...NUMBERS.map(String));
  const textFilter = text.length === 0 ? [] : [fc.tuple(fc.constantFrom(...text), fc.oneof(
    fc.tuple(fc.constantFrom('eq', 'neq', 'gt', 'lt', 'gte', 'lte'), word),
    fc.tuple(fc.constantFrom('like', 'ilike'), fc.constantFrom('*a*', 'a*', '*a', 'b*', '*ta', '*')),
    fc.tuple(fc.constant('in'), fc.subarray(WORDS, { maxLength: 3 })),
    fc.tuple(fc.constant('is'), fc.constant('null')),
  ))];
  const intFilter = fc.tuple(fc.constantFrom(...int), fc.oneof(
    fc.tuple(fc.constantFrom('eq', 'neq', 'gt', 'lt', 'gte', 'lte'), number),
    fc.tuple(fc.constant('in'), fc.subarray(NUMBERS.map(String), { maxLength: 3 })),
    fc.tuple(fc.constant('is'), fc.constant('null')),
  ));
  return fc.tuple(fc.oneof(intFilter, ...textFilter), fc.boolean(), fc.boolean()).map(([[column, [op, value]], negate, quote]) => ({ column, op, value, negate, quote }));
};

const orderOf = (table: Table): fc.Arbitrary<OrderTerm[]> =>
  fc.array(fc.record({ column: fc.constantFrom(...columnsOf(table)), desc: fc.boolean(), nulls: fc.constantFrom(undefined, 'nullsfirst' as const, 'nullslast' as const) }), { minLength: 1, maxLength: 2 });

/** A level of `table` at `depth` (0 the root); `many` when it answers an array (the root does). */
function levelOf(table: Table, depth: number, many: boolean): fc.Arbitrary<Level> {
  const rels = depth < 3 ? RELS.filter((r) => r.from === table) : [];
  const embeds = rels.length === 0 ? fc.constant([] as Embed[]) : fc.array(fc.constantFrom(...rels), { maxLength: depth === 0 ? 3 : 2 }).chain((chosen) =>
    chosen.length === 0 ? fc.constant([] as Embed[]) : fc.tuple(...chosen.map((rel) => embedOf(rel, depth + 1))));
  // fc.option's `freq` is the odds of no value: 1 in freq.
  const page = many
    ? fc.record({ order: depth === 0 ? orderOf(table) : fc.option(orderOf(table), { freq: 2, nil: undefined }), limit: fc.option(fc.nat(depth === 0 ? 8 : 3), { freq: 2, nil: undefined }), offset: fc.option(fc.nat(depth === 0 ? 5 : 2), { freq: 2, nil: undefined }) })
    : fc.record({ order: fc.constant(undefined), limit: rarely(fc.nat(1)), offset: rarely(fc.nat(1)) });
  return fc.record({
    // No columns (`rel()`, `rel!inner()`): an embedding that only filters, left out of the answer.
    columns: depth === 0 ? fc.subarray(columnsOf(table), { minLength: 1 }) : fc.oneof({ weight: 12, arbitrary: fc.subarray(columnsOf(table), { minLength: 1 }) }, { weight: 1, arbitrary: fc.constant([] as string[]) }),
    star: fc.boolean(),
    embeds,
    filters: fc.oneof({ weight: 3, arbitrary: fc.array(filterOf(table), { maxLength: 1 }) }, { weight: 1, arbitrary: fc.array(filterOf(table), { minLength: 2, maxLength: 2 }) }),
    logic: rarely(logicOf(table, 2)),
    nulls: fc.array(fc.tuple(fc.nat(2), fc.boolean()), { maxLength: 1 }),
    related: fc.option(fc.tuple(fc.nat(2), fc.nat(9), fc.boolean(), fc.constantFrom(undefined, 'nullsfirst' as const, 'nullslast' as const)), { freq: 2, nil: undefined }),
    page,
  }).map(({ columns: drawnColumns, star, embeds, filters, logic: drawn, nulls, related, page }) => {
    let columns = drawnColumns;
    // Names at one level are unique: a second embedding of a name gets an alias.
    const taken = new Set<string>();
    const named = embeds.map((e, i) => {
      // A spread has no alias (PostgREST's grammar): one whose name is taken is an aliased embedding instead.
      const spread = e.spread && !taken.has(e.rel.name);
      let alias = spread ? undefined : e.alias;
      if (taken.has(alias ?? e.rel.name)) alias = `${e.rel.name.slice(0, 3)}${depth}${i}`;
      taken.add(alias ?? e.rel.name);
      return { ...e, alias, spread };
    }).map((e, i) => (e.spread ? { ...e, level: spreadLevel(e.level, `s${depth}${i}_`, e.rel.many) } : e));
    const logic = drawn && keptLogic(drawn, named);
    // A spread is an embedding of select= too: a null filter tests whether it has a row.
    const nullFilters = nulls.filter(([index]) => index < named.length).map(([index, isNull]) => ({ index, isNull }));
    // A page without an order is any page: a paged to-many embedding is ordered.
    let order = page.order ?? (many && (page.limit !== undefined || page.offset !== undefined) ? [{ column: COLUMNS[table].key[0]!, desc: false }] : undefined);
    // Ordered first by a column a to-one embedding of this level answers.
    if (order !== undefined && related !== undefined) {
      const [index, c, desc, nulls] = related;
      const target = named[index];
      if (target !== undefined && !target.spread && !target.rel.many && target.level.columns.length > 0) order = [{ embed: index, column: target.level.columns[c % target.level.columns.length]!, desc, nulls }, ...order];
    }
    // An embedding named as a column of this level takes its place in the answer (the column is not selected).
    const names = new Set(named.filter((e) => !e.spread).map(nameOf));
    // (A spread's name is no key of the answer, so a column of its name stays; `is.null` on that name still tests the spread.)
    const clash = columnsOf(table).some((c) => names.has(c));
    const starred = star && columns.length > 0 && !clash;
    columns = (star && columns.length > 0 ? columnsOf(table) : columns).filter((c) => !names.has(c));
    return { table, columns, star: starred, embeds: named, filters, logic, nullFilters, order, limit: page.limit, offset: page.offset };
  });
}

/** An `or`/`and` tree of filters and null tests of embeddings, `levels` deep at most. */
function logicOf(table: Table, levels: number): fc.Arbitrary<Logic> {
  const item: fc.Arbitrary<Logic['items'][number]> = fc.oneof(
    { weight: 3, arbitrary: filterOf(table) },
    { weight: 1, arbitrary: fc.record({ embed: fc.nat(2), isNull: fc.boolean() }) },
    { weight: levels > 1 ? 1 : 0, arbitrary: fc.constant(null).chain(() => logicOf(table, levels - 1)) },
  );
  return fc.record({ op: fc.constantFrom('or' as const, 'and' as const), negate: fc.boolean(), items: fc.array(item, { minLength: 1, maxLength: 3 }) });
}

/** A tree's null tests of embeddings that are not there left out; a group left empty with them. */
function keptLogic(logic: Logic, embeds: Embed[]): Logic | undefined {
  const items = logic.items.flatMap((item): Logic['items'] => {
    if ('items' in item) { const kept = keptLogic(item, embeds); return kept ? [kept] : []; }
    if ('embed' in item) return item.embed < embeds.length ? [item] : [];
    return [item];
  });
  return items.length > 0 ? { ...logic, items } : undefined;
}

/** Rarely a value, mostly none. */
function rarely<T>(arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

/**
 * A spread's level: its columns (at least one) and its embeddings' names prefixed so they cannot meet the
 * parent's; a to-one spread keeps its embeddings (they land in the parent's row), a to-many one has none.
 */
function spreadLevel(level: Level, prefix: string, many: boolean): Level {
  const columns = level.columns.length > 0 ? level.columns : columnsOf(level.table).slice(0, 1);
  const order = level.order?.filter((t) => t.embed === undefined);
  const embeds = many ? [] : level.embeds.map((e) => ({ ...e, alias: `${prefix}${nameOf(e)}` }));
  return {
    ...level,
    star: false,
    embeds,
    nullFilters: many ? [] : level.nullFilters,
    logic: undefined,
    order: order?.length ? order : level.order && [{ column: COLUMNS[level.table].key[0]!, desc: false }],
    columns: columns.map((c) => `${prefix}${c}`),
  };
}

function embedOf(rel: Rel, depth: number): fc.Arbitrary<Embed> {
  return fc.record({
    alias: fc.option(fc.constantFrom('one', 'two', 'Writer', 'the_x1', 'title', 'name', 'score', 'body', 'posts', 'authors', 'comments', 'tags'), { freq: 2, nil: undefined }),
    hint: rel.hints ? fc.constantFrom(...rel.hints) : rel.optionalHints ? rarely(fc.constantFrom(...rel.optionalHints)) : fc.constant(undefined),
    inner: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    spread: depth > 1 ? fc.constant(false) : fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    level: levelOf(rel.to, depth, rel.many),
  }).map(({ alias, hint, inner, spread, level }) => ({ rel, hint, alias, inner, spread, level }));
}

/** The column a spread's aliased column reads: `s1_2_title` reads `title`. */
const sourceColumn = (column: string) => column.replace(/^s\d+_/, '');

// ---- The query string ----

function selectOf(level: Level, spread: boolean): string {
  const columns = spread ? level.columns.map((c) => `${c}:${sourceColumn(c)}`) : level.star ? ['*'] : level.columns;
  const embeds = level.embeds.map((e) => {
    const head = `${e.spread ? '...' : ''}${e.alias !== undefined && !e.spread ? `${e.alias}:` : ''}${e.rel.name}${e.hint ? `!${e.hint}` : ''}${e.inner ? '!inner' : ''}`;
    return `${head}(${selectOf(e.level, e.spread)})`;
  });
  return [...columns, ...embeds].join(',');
}


/** `[not.]op.value`; in a logic tree (`inLogic`) a value with the grammar's punctuation is quoted. */
function operand(f: Filter, inLogic = false): string {
  const value = Array.isArray(f.value) ? `(${f.value.map((v) => listValue(v, f.quote)).join(',')})` : inLogic && f.op !== 'is' ? listValue(f.value, f.quote) : f.value;
  return `${f.negate ? 'not.' : ''}${f.op}.${value}`;
}

/** A logic tree as it is written inside `or=(…)`: `[not.]op(item,…)`. */
function logicText(level: Level, logic: Logic): string {
  const items = logic.items.map((item) =>
    'items' in item ? logicText(level, item) : 'embed' in item ? `${nameOf(level.embeds[item.embed]!)}.${item.isNull ? 'is' : 'not.is'}.null` : `${item.column}.${operand(item, true)}`);
  return `${logic.negate ? 'not.' : ''}${logic.op}(${items.join(',')})`;
}

/** The keys of an order with its table's key after it, so that the order is total. */
function totalOrder(level: Level): OrderTerm[] {
  const terms = [...(level.order ?? [])];
  for (const key of COLUMNS[level.table].key) if (!terms.some((t) => t.embed === undefined && t.column === key)) terms.push({ column: key, desc: false });
  return terms;
}
const orderText = (level: Level, terms: OrderTerm[]) =>
  terms.map((t) => `${t.embed === undefined ? t.column : `${nameOf(level.embeds[t.embed]!)}(${t.column})`}.${t.desc ? 'desc' : 'asc'}${t.nulls ? `.${t.nulls}` : ''}`).join(',');

function pairsOf(level: Level, path: string): Array<[string, string]> {
  const at = (key: string) => (path === '' ? key : `${path}.${key}`);
  const pairs: Array<[string, string]> = [];
  for (const f of level.filters) pairs.push([at(f.column), operand(f)]);
  if (level.logic) pairs.push([at(`${level.logic.negate ? 'not.' : ''}${level.logic.op}`), logicText(level, level.logic).slice(level.logic.op.length + (level.logic.negate ? 4 : 0))]);
  for (const n of level.nullFilters) pairs.push([at(nameOf(level.embeds[n.index]!)), n.isNull ? 'is.null' : 'not.is.null']);
  if (level.order) pairs.push([at('order'), orderText(level, totalOrder(level))]);
  if (level.limit !== undefined) pairs.push([at('limit'), String(level.limit)]);
  if (level.offset !== undefined) pairs.push([at('offset'), String(level.offset)]);
  for (const e of level.embeds) pairs.push(...pairsOf(e.level, at(nameOf(e))));
  return pairs;
}

// ---- The oracle ----

const likeRegex = (pattern: string, flags: string) => new RegExp(`^${pattern.split('*').map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, flags);

/**
 * SQL's answer for one filter on one row: true, false or null (unknown, which drops the row as false does).
 * `is.null` on the name of an embedding of the level tests the embedding, even where a column has that name.
 */
function truth(f: Filter, row: Row, level: Level, embedded: Array<Array<Record<string, unknown>>>): boolean | null {
  const embed = f.op === 'is' ? level.embeds.findIndex((e) => nameOf(e) === f.column) : -1;
  if (embed >= 0) return (embedded[embed]!.length === 0) !== f.negate;
  const v = row[f.column] ?? null;
  if (f.op === 'is') return (v === null) !== f.negate;
  // `= any('{}')` is false, for null too, so `not.in.()` keeps every row.
  if (f.op === 'in' && f.value.length === 0) return f.negate;
  if (v === null) return null;
  const numeric = typeof v === 'number';
  const read = (s: string) => (numeric ? Number(s) : s);
  let result: boolean;
  switch (f.op) {
    case 'eq': result = v === read(f.value as string); break;
    case 'neq': result = v !== read(f.value as string); break;
    case 'gt': result = v > read(f.value as string); break;
    case 'lt': result = v < read(f.value as string); break;
    case 'gte': result = v >= read(f.value as string); break;
    case 'lte': result = v <= read(f.value as string); break;
    case 'like': result = likeRegex(f.value as string, '').test(String(v)); break;
    case 'ilike': result = likeRegex(f.value as string, 'i').test(String(v)); break;
    case 'in': result = (f.value as string[]).some((s) => v === read(s)); break;
    default: throw new Error(`no oracle for ${f.op}`);
  }
  return result !== f.negate;
}

/** SQL's three-valued `and`/`or`, and `not` keeping unknown unknown. */
function logicTruth(logic: Logic, row: Row, level: Level, embedded: Array<Array<Record<string, unknown>>>): boolean | null {
  const values = logic.items.map((item) =>
    'items' in item ? logicTruth(item, row, level, embedded) : 'embed' in item ? (embedded[item.embed]!.length === 0) === item.isNull : truth(item, row, level, embedded));
  const decided = logic.op === 'or' ? values.includes(true) ? true : values.includes(null) ? null : false : values.includes(false) ? false : values.includes(null) ? null : true;
  return decided === null ? null : decided !== logic.negate;
}

/** A row and what its embeddings answer, as the oracle carries them. */
interface Built { row: Row; embedded: Array<Array<Record<string, unknown>>> }

/** The value an order term reads: the row's column, or the column of what a to-one embedding answers (null for none). */
const orderValue = (t: OrderTerm, b: Built): Value => (t.embed === undefined ? b.row[t.column] ?? null : ((b.embedded[t.embed]![0]?.[t.column] ?? null) as Value));

function compareBy(terms: OrderTerm[]) {
  return (a: Built, b: Built): number => {
    for (const t of terms) {
      const x = orderValue(t, a);
      const y = orderValue(t, b);
      if (x === y) continue;
      // PostgreSQL: nulls last ascending, first descending, unless told.
      const nullsFirst = t.nulls === 'nullsfirst' || (t.nulls === undefined && t.desc);
      if (x === null) return nullsFirst ? -1 : 1;
      if (y === null) return nullsFirst ? 1 : -1;
      const c = x < y ? -1 : 1;
      return t.desc ? -c : c;
    }
    return 0;
  };
}

/** The answer's objects for `level` among `candidates`: filtered, kept by `!inner` and null filters, ordered, paged. */
function evaluate(level: Level, candidates: Row[]): { rows: Array<Record<string, unknown>>; total: number } {
  const kept = candidates
    .map((row) => ({ row, embedded: level.embeds.map((e) => evaluate(e.level, e.rel.related(row)).rows) }))
    .filter(({ row, embedded }) => level.filters.every((f) => truth(f, row, level, embedded) === true))
    .filter(({ row, embedded }) => level.logic === undefined || logicTruth(level.logic, row, level, embedded) === true)
    .filter(({ embedded }) => level.embeds.every((e, i) => !e.inner || embedded[i]!.length > 0))
    .filter(({ embedded }) => level.nullFilters.every((n) => (embedded[n.index]!.length === 0) === n.isNull));
  if (level.order) {
    const compare = compareBy(totalOrder(level));
    kept.sort(compare);
  }
  const start = level.offset ?? 0;
  const paged = kept.slice(start, level.limit === undefined ? undefined : start + level.limit);
  return { rows: paged.map(({ row, embedded }) => project(level, row, embedded)), total: kept.length };
}

function project(level: Level, row: Row, embedded: Array<Array<Record<string, unknown>>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of level.columns) out[c] = row[sourceColumn(c)] ?? null;
  level.embeds.forEach((e, i) => {
    const rows = embedded[i]!;
    // `rel()` and `rel!inner()` filter only: nothing of them is answered.
    if (e.level.columns.length === 0 && e.level.embeds.length === 0) return;
    if (!e.spread) out[nameOf(e)] = e.rel.many ? rows : (rows[0] ?? null);
    else {
      for (const c of e.level.columns) out[c] = e.rel.many ? rows.map((r) => r[c]) : (rows[0]?.[c] ?? null);
      // A to-one spread's embeddings are the parent's, null where it has no row.
      for (const n of e.level.embeds) if (n.level.columns.length > 0 || n.level.embeds.length > 0) out[nameOf(n)] = rows[0] === undefined ? null : rows[0][nameOf(n)];
    }
  });
  return out;
}

/** Arrays of embeddings with no order asked are sets: both answers sort them the same way. */
function canonical(level: Level, rows: unknown): unknown {
  if (!Array.isArray(rows)) return rows;
  return rows.map((row) => {
    if (row === null || typeof row !== 'object') return row;
    const out: Record<string, unknown> = { ...(row as Record<string, unknown>) };
    const embeds = level.embeds.flatMap((e) => (e.spread ? [e, ...e.level.embeds] : [e]));
    for (const e of embeds) {
      if (e.spread) {
        if (e.rel.many && !e.level.order) for (const c of e.level.columns) if (Array.isArray(out[c])) out[c] = [...(out[c] as unknown[])].map((v) => JSON.stringify(v)).sort();
        continue;
      }
      const value = out[nameOf(e)];
      if (!e.rel.many) out[nameOf(e)] = value === null || value === undefined ? value : (canonical(e.level, [value]) as unknown[])[0];
      else {
        const inner = canonical(e.level, value);
        out[nameOf(e)] = Array.isArray(inner) && !e.level.order ? [...inner].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)) : inner;
      }
    }
    return out;
  });
}

/** Row-level security hides some posts and comments from the anonymous caller, wherever they are embedded. */
const READABLE: Record<Exclude<Table, 'post_view'>, string> = { authors: 'true', profiles: 'true', posts: 'id <> 14', comments: 'coalesce(votes, 1) <> 0', tags: 'true', post_tags: 'true' };

/** A project whose tables are in `schema` (exposed alone when not public), with the rows as the anonymous caller reads them in `data`. */
async function setUp(schema: string): Promise<void> {
  p = await restProject(`rest embed differential ${schema}`);
  const rows = seedRows();
  /** The table's name in its schema. */
  const q = (table: string) => `${schema}.${table}`;
  const insert = (table: Table) => `insert into ${q(table)} (${columnsOf(table).map((c) => `"${c}"`).join(', ')}) values ${rows[table].map((r) => `(${columnsOf(table).map((c) => literal(r[c] ?? null)).join(', ')})`).join(', ')};`;
  await sql(p, `
    create schema if not exists ${schema};
    create table ${q('authors')} (id int primary key, name text, rank int);
    create table ${q('profiles')} (author_id int primary key references ${q('authors')} (id), bio text);
    create table ${q('posts')} (id int primary key, title text, score int, author_id int, editor_id int,
      constraint written_by foreign key (author_id) references ${q('authors')} (id),
      constraint edited_by foreign key (editor_id) references ${q('authors')} (id));
    create table ${q('comments')} (id int primary key, post_id int references ${q('posts')} (id), body text, votes int, "Likes" int, reply_to int references ${q('comments')} (id));
    create table ${q('tags')} (id int primary key, label text not null);
    create table ${q('post_tags')} (post_id int references ${q('posts')} (id), tag_id int references ${q('tags')} (id), weight int, primary key (post_id, tag_id));
    ${(['authors', 'profiles', 'posts', 'comments', 'tags', 'post_tags'] as const).map((t) => `create policy "read" on ${q(t)} for select using (${READABLE[t]}); ${insert(t)}`).join('\n')}
    create view ${q('post_view')} as select id, title, score, author_id from ${q('posts')};
    create function ${q('all_posts')}() returns setof ${q('posts')} language sql stable as $$ select * from ${q('posts')} $$;
    -- public's tables, views and functions are the API roles' by default privileges; another schema's by these grants.
    grant usage on schema ${schema} to anon, authenticated, service_role;
    grant select on all tables in schema ${schema} to anon, authenticated, service_role;
    grant execute on all functions in schema ${schema} to anon, authenticated, service_role;
  `);
  if (schema !== 'public') {
    const exposed = await call('PATCH', `/api/projects/${p.project.id}/rest/settings`, { headers: bearer(p.operator.token), body: { exposedSchemas: [schema] } });
    expect(exposed.status, exposed.text).toBe(200);
  }
  tenant = await connectTenant(p.project.id);
  // The tables as the anonymous caller reads them (the view as its owner reads posts, as PostgreSQL runs it).
  data = {} as Record<Table, Row[]>;
  await tenant.client.query('begin');
  await tenant.client.query('set local role anon');
  for (const table of ['authors', 'profiles', 'posts', 'comments', 'tags', 'post_tags', 'post_view'] as const) {
    data[table] = (await tenant.client.query<Row>(`select ${columnsOf(table).map((c) => `"${c}"`).join(', ')} from ${q(table)}`)).rows;
  }
  await tenant.client.query('rollback');
  expect(data.posts.length).toBeLessThan(rows.posts.length);
  // The tables are in the data plane's schema cache once their DDL's event (and the settings') has reached it.
  for (let waited = 0; (await call('GET', '/rest/v1/post_view?select=authors(id),tags(id)&limit=1', { headers: p.anon })).status !== 200; waited += 100) {
    if (waited > 15_000) throw new Error('the data plane never saw the tables');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const ROOTS: Table[] = ['authors', 'authors', 'posts', 'posts', 'posts', 'comments', 'tags', 'post_tags', 'profiles', 'post_view'];
const request = fc.constantFrom(...ROOTS).chain((table) => levelOf(table, 0, true));

/** How the root is read: the table itself, or (for posts) an rpc returning its rows, embedding through its keys. */
const via = fc.constantFrom('table' as const, 'table' as const, 'rpc' as const);

describe.each(['public', 'app'])('embedding against an oracle, tables in schema %s', (schema) => {
  beforeAll(() => setUp(schema));
  afterAll(async () => {
    await tenant?.end();
  });

  it('answers the nested rows PostgREST semantics build from the tables', async () => {
    await fc.assert(
      fc.asyncProperty(request, via, fc.boolean(), async (root, how, single) => {
        const pairs: Array<[string, string]> = [['select', selectOf(root, false)], ...pairsOf(root, '')];
        const query = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        const path = how === 'rpc' && root.table === 'posts' ? 'rpc/all_posts' : root.table;
        const shown = `${path}?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`;
        const expected = evaluate(root, data[root.table]);
        // One row asked for as an object answers that row, as PostgREST's vnd.pgrst.object does.
        if (single && expected.rows.length === 1 && (root.offset ?? 0) === 0) {
          const one = await call('GET', `/rest/v1/${path}?${query}`, { headers: { ...p.anon, accept: 'application/vnd.pgrst.object+json' } });
          expect({ query: shown, status: one.status, body: canonical(root, [one.body]) }).toEqual({ query: shown, status: 200, body: canonical(root, expected.rows) });
          return;
        }
        const answer = await call('GET', `/rest/v1/${path}?${query}`, { headers: { ...p.anon, prefer: 'count=exact' } });
        if (answer.status === 416) {
          expect({ query: shown, expected: expected.rows, offset: (root.offset ?? 0) > 0 }).toEqual({ query: shown, expected: [], offset: true });
          return;
        }
        const ok = answer.status === 200 || answer.status === 206;
        const total = answer.headers.get('content-range')?.split('/')[1];
        expect({ query: shown, status: ok ? 'ok' : answer.status, body: canonical(root, answer.body), total }).toEqual({ query: shown, status: 'ok', body: canonical(root, expected.rows), total: String(expected.total) });
      }),
      fuzzRuns(300),
    );
  }, 300_000);
});
