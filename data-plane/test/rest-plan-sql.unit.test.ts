/**
 * Stages 2 to 5, plan → sql → respond, against a schema snapshot made in the
 * test: names resolved or refused, embeddings found through foreign keys in
 * both directions, values always parameters, answers' statuses and headers.
 */
import { describe, expect, it } from 'vitest';
import { parseRequest, type RawRequest } from '../src/rest/parse';
import { planRequest } from '../src/rest/plan';
import { checkBeforeCommit, checkedBeforeCommit, respond } from '../src/rest/respond';
import { snapshotOf, type ColumnInfo } from '../src/rest/schema-model';
import { RESPONSE_SETTINGS, statementFor } from '../src/rest/sql';

const col = (name: string, type = 'text', nullable = true): ColumnInfo => ({ name, type, nullable, hasDefault: name === 'id' });
const snapshot = snapshotOf({
  relations: [
    { name: 'authors', kind: 'table', columns: [col('id', 'bigint', false), col('name')], primaryKey: ['id'], comment: null },
    { name: 'posts', kind: 'table', columns: [col('id', 'bigint', false), col('title'), col('author_id', 'bigint'), col('editor_id', 'bigint'), col('body', 'tsvector')], primaryKey: ['id'], comment: null },
  ],
  foreignKeys: [
    { name: 'posts_author_id_fkey', table: 'posts', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
    { name: 'posts_editor_id_fkey', table: 'posts', columns: ['editor_id'], refTable: 'authors', refColumns: ['id'] },
  ],
  functions: [{ name: 'add', args: [{ name: 'a', type: 'integer', hasDefault: false }, { name: 'b', type: 'integer', hasDefault: true }], returnType: 'integer', returnsSet: false, returnsRow: false, returnsVoid: false, volatile: false }],
});

const request = (method: string, target: string, query: string, more: Partial<RawRequest> = {}) =>
  parseRequest({ method, target, rpc: false, query, headers: {}, ...more });
const plan = (method: string, target: string, query: string, more: Partial<RawRequest> = {}) => planRequest(request(method, target, query, more), snapshot);
const sql = (method: string, target: string, query: string, more: Partial<RawRequest> = {}) => statementFor(plan(method, target, query, more));

describe('plan', () => {
  it('refuses unknown tables, columns, relationships and functions with their codes', () => {
    expect(() => plan('GET', 'nope', '')).toThrow(expect.objectContaining({ status: 404, code: '42P01' }));
    expect(() => plan('GET', 'posts', 'select=nope')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    expect(() => plan('GET', 'posts', 'nope=eq.1')).toThrow(expect.objectContaining({ code: 'unknown_column' }));
    expect(() => plan('GET', 'posts', 'order=nope')).toThrow(expect.objectContaining({ code: 'unknown_column' }));
    expect(() => plan('GET', 'authors', 'select=comments(*)')).toThrow(expect.objectContaining({ code: 'unknown_relation' }));
    expect(() => plan('GET', 'posts', 'select=id::text;drop')).toThrow(/not a type name/);
    expect(() => planRequest(parseRequest({ method: 'POST', target: 'nope', rpc: true, query: '', headers: {}, body: '{}' }), snapshot)).toThrow(expect.objectContaining({ status: 404 }));
  });

  it('finds embeddings both ways, and asks for a hint when two foreign keys qualify', () => {
    expect(() => plan('GET', 'posts', 'select=authors(*)')).toThrow(expect.objectContaining({ status: 300 }));
    const one = plan('GET', 'posts', 'select=author:authors!posts_author_id_fkey(name)');
    expect(one.kind === 'read' && one.select[0]).toMatchObject({ kind: 'embed', many: false, on: [['author_id', 'id']] });
    const many = plan('GET', 'authors', 'select=posts!author_id(id)');
    expect(many.kind === 'read' && many.select[0]).toMatchObject({ kind: 'embed', many: true, on: [['id', 'author_id']] });
  });

  it('embeds a self-referencing table as PostgREST does: the table’s name is the one-to-many, the key’s column the many-to-one', () => {
    const people = (keys: Array<[string, string]>) => snapshotOf({
      relations: [{ name: 'emp', kind: 'table', columns: [col('id', 'integer'), col('name'), col('manager_id', 'integer'), col('mentor_id', 'integer')], primaryKey: ['id'], comment: null }],
      foreignKeys: keys.map(([name, column]) => ({ name, table: 'emp', columns: [column], refTable: 'emp', refColumns: ['id'] })),
    });
    const one = people([['emp_manager_id_fkey', 'manager_id']]);
    const embed = (query: string, schema = one) => {
      const planned = planRequest(request('GET', 'emp', query), schema);
      return planned.kind === 'read' ? planned.select[0] : undefined;
    };
    expect(embed('select=reports:emp(name)')).toMatchObject({ kind: 'embed', alias: 'reports', many: true, on: [['id', 'manager_id']] });
    expect(embed('select=emp!manager_id(name)')).toMatchObject({ alias: 'emp', many: true, on: [['id', 'manager_id']] });
    expect(embed('select=manager_id(name)')).toMatchObject({ alias: 'manager_id', many: false, on: [['manager_id', 'id']] });
    expect(statementFor(planRequest(request('GET', 'emp', 'select=reports:emp(name)'), one)).text).toContain('from "public"."emp" _t1 where _t1."manager_id" = _t0."id"');
    const two = people([['emp_manager_id_fkey', 'manager_id'], ['emp_mentor_fkey', 'mentor_id']]);
    expect(() => embed('select=emp(name)', two)).toThrow(expect.objectContaining({ status: 300, details: ['emp_manager_id_fkey', 'emp_mentor_fkey'] }));
    expect(embed('select=emp!mentor_id(name)', two)).toMatchObject({ on: [['id', 'mentor_id']] });
    expect(embed('select=emp!emp_mentor_fkey(name)', two)).toMatchObject({ on: [['id', 'mentor_id']] });
    expect(embed('select=mentor_id(name)', two)).toMatchObject({ many: false, on: [['mentor_id', 'id']] });
    expect(() => embed('select=name(id)', two)).toThrow(expect.objectContaining({ code: 'unknown_relation' }));
    expect(() => embed('select=emp!name(id)', two)).toThrow(expect.objectContaining({ code: 'unknown_relation' }));
  });

  it('embeds the referencing side of a one-to-one (its key columns are its primary key or unique, in any order) as one object', () => {
    const o2o = snapshotOf({
      relations: [
        { name: 'authors', kind: 'table', columns: [col('id', 'bigint'), col('org', 'bigint')], primaryKey: ['id'], uniqueKeys: [['id'], ['org', 'id']], comment: null },
        { name: 'profiles', kind: 'table', columns: [col('author_id', 'bigint'), col('bio')], primaryKey: ['author_id'], comment: null },
        { name: 'badges', kind: 'table', columns: [col('id', 'integer'), col('a', 'bigint'), col('o', 'bigint')], primaryKey: ['id'], uniqueKeys: [['id'], ['o', 'a']], comment: null },
        { name: 'shifts', kind: 'table', columns: [col('id', 'integer'), col('author_id', 'bigint'), col('day', 'integer')], primaryKey: ['id'], uniqueKeys: [['id'], ['author_id', 'day']], comment: null },
      ],
      foreignKeys: [
        { name: 'profiles_author_id_fkey', table: 'profiles', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
        { name: 'badges_fkey', table: 'badges', columns: ['a', 'o'], refTable: 'authors', refColumns: ['id', 'org'] },
        { name: 'shifts_author_id_fkey', table: 'shifts', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
      ],
    });
    const embed = (target: string, query: string) => {
      const planned = planRequest(request('GET', target, query), o2o);
      return planned.kind === 'read' ? planned.select[0] : undefined;
    };
    expect(embed('authors', 'select=profiles(bio)')).toMatchObject({ kind: 'embed', many: false, on: [['id', 'author_id']] });
    expect(embed('profiles', 'select=authors(id)')).toMatchObject({ kind: 'embed', many: false });
    expect(embed('authors', 'select=badges(id)')).toMatchObject({ kind: 'embed', many: false, on: [['id', 'a'], ['org', 'o']] });
    expect(embed('authors', 'select=shifts(day)')).toMatchObject({ kind: 'embed', many: true });
    expect(statementFor(planRequest(request('GET', 'authors', 'select=profiles(bio)'), o2o)).text).toContain('select to_json(_e2) from (select _t1."bio" as "bio" from "public"."profiles" _t1 where _t1."author_id" = _t0."id" and true limit 1) _e2');
  });

  it('finds many-to-many through a junction table when no key links the two directly', () => {
    const m2m = snapshotOf({
      relations: [
        { name: 'posts', kind: 'table', columns: [col('id', 'bigint')], primaryKey: ['id'], comment: null },
        { name: 'tags', kind: 'table', columns: [col('id', 'integer'), col('label')], primaryKey: ['id'], comment: null },
        { name: 'post_tags', kind: 'table', columns: [col('post_id', 'bigint'), col('tag_id', 'integer')], primaryKey: ['post_id', 'tag_id'], comment: null },
      ],
      foreignKeys: [
        { name: 'post_tags_post_id_fkey', table: 'post_tags', columns: ['post_id'], refTable: 'posts', refColumns: ['id'] },
        { name: 'post_tags_tag_id_fkey', table: 'post_tags', columns: ['tag_id'], refTable: 'tags', refColumns: ['id'] },
      ],
    });
    const statement = statementFor(planRequest(request('GET', 'posts', 'select=id,tags(label)'), m2m));
    expect(statement.text).toContain('from "public"."tags" _t1 join "public"."post_tags" _j3 on _j3."tag_id" = _t1."id" where _j3."post_id" = _t0."id"');
  });

  it('orders by a column of a to-one embedding named as select= names it, and refuses one not embedded or to-many (PostgREST 11’s related order)', () => {
    const ordered = plan('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&order=author(name).desc.nullslast,id');
    expect(ordered.kind === 'read' && ordered.modifiers.order).toMatchObject([
      { embed: { alias: 'author', many: false }, column: { name: 'name' }, direction: 'desc', nulls: 'last' },
      { column: { name: 'id' }, direction: 'asc' },
    ]);
    // Any column of the embedded table, selected or not; a filter-only embedding will do.
    expect(() => plan('GET', 'posts', 'select=id,authors!posts_author_id_fkey()&order=authors(id)')).not.toThrow();
    const notEmbedded = { status: 400, code: 'invalid_filter', message: '"authors" is not an embedded resource in this request' };
    expect(() => plan('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&order=authors(name)')).toThrow(expect.objectContaining(notEmbedded));
    expect(() => plan('GET', 'posts', 'select=id&order=authors(name)')).toThrow(expect.objectContaining(notEmbedded));
    expect(() => plan('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&order=author(nope)')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    expect(() => plan('GET', 'authors', 'select=name,writes:posts!author_id(id)&order=writes(id)')).toThrow(
      expect.objectContaining({ status: 400, code: 'invalid_filter', message: 'A related order on "writes" is not possible', details: '"authors" and "writes" do not form a many-to-one or one-to-one relationship' }),
    );
    // In an embedding, by that level's embeddings.
    const nested = plan('GET', 'authors', 'select=name,posts!author_id(id,editor:authors!editor_id(name))&posts.order=editor(name)');
    expect(nested.kind === 'read' && nested.select[1]).toMatchObject({ modifiers: { order: [{ embed: { alias: 'editor' }, column: { name: 'name' } }] } });
    expect(() => plan('GET', 'authors', 'select=name,posts!author_id(id)&posts.order=editor(name)')).toThrow(expect.objectContaining({ ...notEmbedded, message: '"editor" is not an embedded resource in this request' }));
    // A write is ordered by its own columns, as its filters are.
    expect(() => plan('PATCH', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&id=gt.0&order=author(name)&limit=1', { body: '{"title":"x"}' })).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
  });

  it('reads name=is.null and name=not.is.null on an embedding of the level as filters on the embedding, anywhere in or=/and=; other filters stay on columns', () => {
    const where = (query: string, target = 'posts') => {
      const planned = plan('GET', target, query);
      return planned.kind === 'read' ? planned.modifiers.where : [];
    };
    const select = 'select=id,author:authors!posts_author_id_fkey()';
    expect(where(`${select}&author=not.is.null`)).toMatchObject([{ kind: 'embedded', embed: { alias: 'author' }, negate: false }]);
    expect(where(`${select}&author=is.null`)).toMatchObject([{ kind: 'embedded', negate: true }]);
    expect(where(`${select}&author=is.not_null`)).toMatchObject([{ kind: 'embedded', negate: false }]);
    expect(where(`${select}&or=(author.is.null,id.eq.1)`)).toMatchObject([{ kind: 'logic', children: [{ kind: 'embedded', negate: true }, { kind: 'filter', column: { name: 'id' } }] }]);
    expect(where('select=name,posts!author_id(id)&posts=not.is.null', 'authors')).toMatchObject([{ kind: 'embedded', embed: { alias: 'posts', many: true } }]);
    // The embedding must be in select=, under its alias; other operators are column filters.
    expect(() => where('select=id&author=is.null')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column', hint: expect.stringMatching(/select=/) }));
    expect(() => where(`${select}&authors=is.null`)).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    expect(() => where(`${select}&author=eq.1`)).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    // A column keeps its filters when no embedding has its name, and loses is.null to one that has it, as in PostgREST.
    expect(where('select=id,author:authors!posts_author_id_fkey()&title=is.null')).toMatchObject([{ kind: 'filter', column: { name: 'title' } }]);
    expect(where('select=id,author_id:authors!posts_author_id_fkey()&author_id=is.null')).toMatchObject([{ kind: 'embedded', embed: { alias: 'author_id' } }]);
    expect(where('select=id,author_id:authors!posts_author_id_fkey()&author_id=eq.1')).toMatchObject([{ kind: 'filter', column: { name: 'author_id' } }]);
    // A write's filters are on its columns only.
    expect(() => plan('DELETE', 'posts', `${select}&author=is.null`)).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
  });

  it('refuses PATCH and DELETE without a filter', () => {
    expect(() => plan('PATCH', 'posts', '', { body: '{"title":"x"}' })).toThrow(expect.objectContaining({ code: 'filter_required' }));
    expect(() => plan('DELETE', 'posts', 'limit=1')).toThrow(expect.objectContaining({ code: 'filter_required' }));
  });

  it('takes insert columns from the body keys or columns=, refusing unknown ones', () => {
    const insert = plan('POST', 'posts', '', { body: '[{"title":"a"},{"author_id":1}]' });
    expect(insert.kind === 'insert' && insert.columns.map((c) => c.name)).toEqual(['title', 'author_id']);
    expect(() => plan('POST', 'posts', '', { body: '{"nope":1}' })).toThrow(expect.objectContaining({ code: 'unknown_column' }));
    const upsert = plan('POST', 'posts', 'on_conflict=title', { body: '{"title":"a"}', headers: { prefer: 'resolution=ignore-duplicates' } });
    expect(upsert.kind === 'insert' && upsert.onConflict).toMatchObject({ action: 'ignore', columns: [{ name: 'title' }] });
  });

  it('picks the overload whose named arguments fit', () => {
    const call = planRequest(parseRequest({ method: 'GET', target: 'add', rpc: true, query: 'a=1', headers: {} }), snapshot);
    expect(call.kind === 'rpc' && call.args).toEqual([{ arg: expect.objectContaining({ name: 'a' }), value: '1' }]);
  });

  it('answers 300 for overloads whose argument names do not tell them apart, as PostgREST (PGRST203), instead of picking one by catalog order', () => {
    const fn = (type: string, more: Array<{ name: string; type: string; hasDefault: boolean }> = []) => ({ name: 'ov', args: [{ name: 'a', type, hasDefault: false }, ...more], returnType: type, returnsSet: false, returnsRow: false, returnsVoid: false, volatile: false });
    const overloaded = snapshotOf({ relations: [], functions: [fn('integer'), fn('text'), fn('integer', [{ name: 'b', type: 'integer', hasDefault: false }])] });
    const call = (method: string, query: string, body?: string) => planRequest(parseRequest({ method, target: 'ov', rpc: true, query, headers: {}, ...(body ? { body } : {}) }), overloaded);
    for (const attempt of [() => call('GET', 'a=1'), () => call('POST', '', '{"a":"x"}')]) {
      expect(attempt).toThrow(expect.objectContaining({ status: 300, code: 'ambiguous_function', details: ['ov(a => integer)', 'ov(a => text)'] }));
    }
    const both = call('POST', '', '{"a":1,"b":2}');
    expect(both.kind === 'rpc' && both.fn.args.map((a) => a.name)).toEqual(['a', 'b']);
  });
});

describe('sql', () => {
  it('puts every value in a parameter and only catalog names in the text', () => {
    const statement = sql('GET', 'posts', "select=id,t:title&title=eq.x';drop table posts--&id=in.(1,2)&or=(title.like.*a*,body.fts(english).cat)&order=id.desc.nullslast&limit=5&offset=10");
    expect(statement.values).toEqual(["x';drop table posts--", ['1', '2'], '%a%', 'english', 'cat', 5, 10]);
    expect(statement.text).not.toContain('drop');
    expect(statement.text).toContain('_t0."id" as "id", _t0."title" as "t"');
    expect(statement.text).toContain('order by _t0."id" desc nulls last limit $6 offset $7');
    expect(statement.text).toContain(`_t0."body" @@ to_tsquery($4::regconfig, $5)`);
    expect(statement.text).toMatch(/^select coalesce\(json_agg\(_s\), '\[\]'\)::text as body/);
  });

  it('takes JSON path keys as parameters', () => {
    const withJson = snapshotOf({ relations: [{ name: 'docs', kind: 'table', columns: [col('id', 'bigint'), col('meta', 'jsonb')], primaryKey: ['id'], comment: null }] });
    const statement = statementFor(planRequest(request('GET', 'docs', "select=meta->a->>b&meta->>x=eq.1&order=meta->0.desc"), withJson));
    expect(statement.text).toContain(`((_t0."meta" -> $1::text) ->> $2::text) as "b"`);
    expect(statement.text).toContain(`(_t0."meta" ->> $3::text) = $4`);
    expect(statement.text).toContain(`order by (_t0."meta" -> $5::int) desc`);
    expect(statement.values).toEqual(['a', 'b', 'x', '1', '0']);
  });

  it('reads a JSON path on a column that is not json or jsonb (an array, a composite, a domain) through to_jsonb, as PostgREST; json and jsonb as they are', () => {
    const shapes = snapshotOf({
      relations: [{
        name: 'places', kind: 'table', primaryKey: ['id'], comment: null,
        columns: [col('id', 'bigint'), col('tags', 'text[]'), col('location', 'point2'), col('aliases', 'tag_list'), col('doc', 'json'), col('meta', 'jsonb')],
      }],
    });
    const statement = statementFor(planRequest(request('GET', 'places', 'select=tags->0,location->>lat,aliases->>-1,doc->a,meta->>b&location->>lat=gte.19&tags->>1=eq.x&order=location->lat.desc'), shapes));
    expect(statement.text).toContain(`(to_jsonb(_t0."tags") -> $1::int) as "tags"`);
    expect(statement.text).toContain(`(to_jsonb(_t0."location") ->> $2::text) as "lat"`);
    expect(statement.text).toContain(`(to_jsonb(_t0."aliases") ->> $3::int) as "aliases"`);
    expect(statement.text).toContain(`(_t0."doc" -> $4::text) as "a"`);
    expect(statement.text).toContain(`(_t0."meta" ->> $5::text) as "b"`);
    expect(statement.text).toContain(`((to_jsonb(_t0."location") ->> $6::text) >= $7) and ((to_jsonb(_t0."tags") ->> $8::int) = $9)`);
    expect(statement.text).toContain(`order by (to_jsonb(_t0."location") -> $10::text) desc`);
    expect(statement.values).toEqual(['0', 'lat', '-1', 'a', 'b', 'lat', '19', '1', 'x', 'lat']);
    // On a scalar too, as PostgREST: the path reads null there.
    expect(sql('GET', 'posts', 'title->>x=eq.1').text).toContain(`(to_jsonb(_t0."title") ->> $1::text) = $2`);
  });

  it('names a field with a JSON path after its last key that is not an index, else after its column, as PostgREST', () => {
    const withJson = snapshotOf({ relations: [{ name: 'docs', kind: 'table', columns: [col('id', 'bigint'), col('data', 'jsonb')], primaryKey: ['id'], comment: null }] });
    const read = planRequest(request('GET', 'docs', 'select=data->0,data->c->0->>1,data->0->a,x:data->0,data->0xy1->>-2'), withJson);
    expect(read.kind === 'read' && read.select.map((item) => item.alias)).toEqual(['data', 'c', 'a', 'x', '0xy1']);
  });

  it('reads ov.(a,b) as an array literal on an array column only; on a range it is the range literal', () => {
    const spans = snapshotOf({ relations: [{ name: 'spans', kind: 'table', columns: [col('id', 'bigint'), col('tags', 'text[]'), col('during', 'int4range')], primaryKey: ['id'], comment: null }] });
    const statement = statementFor(planRequest(request('GET', 'spans', 'tags=ov.(a,b)&during=ov.(1,5)'), spans));
    expect(statement.text).toContain('(_t0."tags" && $1) and (_t0."during" && $2)');
    expect(statement.values).toEqual(['{a,b}', '(1,5)']);
  });

  it('compares with any/all of a list as one array parameter', () => {
    const statement = sql('GET', 'posts', 'title=like(any).{a*,b*}&id=not.gt(all).{1,2}');
    expect(statement.text).toContain('_t0."title"::text like any($1)');
    expect(statement.text).toContain('not (_t0."id" > all($2))');
    expect(statement.values).toEqual([['a%', 'b%'], ['1', '2']]);
  });

  it('writes casts from the validated type: SQL’s keyword types unquoted, other names quoted, modifiers and arrays rebuilt', () => {
    const casts: Array<[string, string]> = [
      ['int', '::int'],
      ['INTEGER', '::integer'],
      ['bigint[]', '::bigint[]'],
      ['boolean', '::boolean'],
      ['double%20%20precision', '::double precision'],
      ['numeric(%2010%20,2)', '::numeric(10,2)'],
      ['character%20varying(20)[][]', '::character varying(20)[][]'],
      ['timestamp(3)%20with%20time%20zone', '::timestamp(3) with time zone'],
      ['time%20without%20time%20zone', '::time without time zone'],
      ['text', '::"text"'],
      ['Int8[3]', '::"int8"[3]'],
      ['timestamptz(0)', '::"timestamptz"(0)'],
    ];
    for (const [cast, written] of casts) expect(sql('GET', 'posts', `select=title::${cast}`).text, cast).toContain(`_t0."title"${written} as "title"`);
    const refused = ['int(5)', 'double%20precision(2)', 'text(3)', 'timestamp%20with%20time%20zone(3)', 'numeric(1,2,3)', 'int%20or%20true', 'x%20y', '"int"', 'int;', 'int[]x', 'in-t', 'varchar(99999)'];
    for (const cast of refused) expect(() => plan('GET', 'posts', `select=title::${cast}`), cast).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
  });

  it('quotes an alias with quotes in it as an identifier', () => {
    const statement = sql('GET', 'posts', 'select=%22a%5C%22b%22:id');
    expect(statement.text).toContain('as "a""b"');
  });

  it('builds embeddings as correlated subqueries and counts with the same filters', () => {
    const statement = sql('GET', 'authors', 'select=name,posts!author_id(id)&posts.title=eq.x&id=gt.1', { headers: { prefer: 'count=exact' } });
    expect(statement.text).toContain(`(select coalesce(json_agg(_e2), '[]') from (select _t1."id" as "id" from "public"."posts" _t1 where _t1."author_id" = _t0."id" and _t1."title" = $1) _e2) as "posts"`);
    expect(statement.text).toContain('(select count(*) from "public"."authors" _t0 where _t0."id" > $3)');
    expect(statement.values).toEqual(['x', '1', '1']);
  });

  it('orders by a to-one embedding’s column, read from its row with the embedding’s filters', () => {
    const ordered = sql('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&author.name=neq.x&order=author(name).desc.nullslast,id');
    expect(ordered.text).toMatch(/ order by \(select (_t\d)\."name" from "public"\."authors" \1 where \1\."id" = _t0\."author_id" and \1\."name" <> \$\d limit 1\) desc nulls last, _t0\."id" asc\) _s$/);
    expect(ordered.values).toEqual(['x', 'x']);
  });

  it('filters by an embedding with exists over its rows and their filters, in the page and the count alike, and one level down', () => {
    const present = sql('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey()&author.name=eq.Ada&author=not.is.null', { headers: { prefer: 'count=exact' } });
    const exists = 'exists (select 1 from "public"."authors" _t1 where _t1."id" = _t0."author_id" and _t1."name" = $';
    expect(present.text).toContain(`from "public"."posts" _t0 where ${exists}1)`);
    expect(present.text).toContain(`(select count(*) from "public"."posts" _t0 where ${exists}2))`);
    expect(sql('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey()&author=is.null').text).toContain(`where not (exists (select 1 from "public"."authors" _t1 where _t1."id" = _t0."author_id" and true))`);
    const nested = sql('GET', 'authors', 'select=name,posts!author_id(id,editor:authors!editor_id(name))&posts.editor=not.is.null');
    expect(nested.text).toMatch(/from "public"\."posts" _t1 where _t1\."author_id" = _t0\."id" and exists \(select 1 from "public"\."authors" (_t\d) where \1\."id" = _t1\."editor_id" and true\)\) _e2/);
  });

  it('tests an embedding’s rows within its limit and offset, for a null filter and !inner alike, as PostgREST’s lateral subquery; a to-one answers and orders by its row within them too', () => {
    const paged = sql('GET', 'authors', 'select=name,posts!author_id(id)&posts=not.is.null&posts.limit=0&posts.offset=2', { headers: { prefer: 'count=exact' } });
    const exists = 'exists (select 1 from "public"."posts" _t1 where _t1."author_id" = _t0."id" and true limit $';
    expect(paged.text).toContain(`(select count(*) from "public"."authors" _t0 where ${exists}`);
    expect(paged.text).toContain(`from "public"."authors" _t0 where ${exists}`);
    expect(paged.values).toEqual([0, 2, 0, 2, 0, 2]);
    const inner = sql('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey!inner(name)&author.limit=0');
    expect(inner.text).toContain(`(select to_json(_e2) from (select _t1."name" as "name" from "public"."authors" _t1 where _t1."id" = _t0."author_id" and true limit 0) _e2) as "author"`);
    expect(inner.text).toContain(`where true and exists (select 1 from "public"."authors" _t3 where _t3."id" = _t0."author_id" and true limit $1)`);
    const offset = sql('GET', 'posts', 'select=id,author:authors!posts_author_id_fkey(name)&author.offset=1&order=author(name)');
    expect(offset.text).toContain(`where _t1."id" = _t0."author_id" and true limit 1 offset $1) _e2) as "author"`);
    expect(offset.text).toMatch(/ order by \(select (_t\d)\."name" from "public"\."authors" \1 where \1\."id" = _t0\."author_id" and true limit 1 offset \$2\) asc\) _s$/);
  });

  it('filters an embedding’s rows by their own !inner embeddings, as the root’s are', () => {
    const inner = sql('GET', 'authors', 'select=name,posts!author_id(id,editor:authors!editor_id!inner(name))');
    expect(inner.text).toMatch(/from "public"\."posts" _t1 where _t1\."author_id" = _t0\."id" and true and exists \(select 1 from "public"\."authors" (_t\d) where \1\."id" = _t1\."editor_id" and true\)\) _e2/);
  });

  it('asks the planner for count=planned, with the same filters as parameters', () => {
    const statement = sql('GET', 'posts', 'title=eq.x', { headers: { prefer: 'count=planned' } });
    expect(statement.text).toContain('null::bigint as total');
    expect(statement.estimate).toEqual({ text: 'explain (format json) select 1 from "public"."posts" _t0 where _t0."title" = $1', values: ['x'] });
  });

  it('writes with the body as one JSON parameter', () => {
    const insert = sql('POST', 'authors', 'on_conflict=id', { body: '{"id":1,"name":"a"}', headers: { prefer: 'resolution=merge-duplicates,return=representation' } });
    expect(insert.values).toEqual(['{"id":1,"name":"a"}']);
    expect(insert.text).toContain('insert into "public"."authors" ("id", "name") select "id", "name" from (select * from json_populate_recordset(null::"public"."authors"');
    expect(insert.text).toContain('on conflict ("id") do update set "name" = excluded."name"');
    const update = sql('PATCH', 'authors', 'id=eq.1', { body: '{"name":"b"}' });
    expect(update.text).toContain('update "public"."authors" _t0 set "name" = _b."name" from json_populate_record(null::"public"."authors", $1::json) _b where _t0."id" = $2');
    expect(update.text).toContain('null::text as body');
    const del = sql('DELETE', 'authors', 'id=eq.1');
    expect(del.text).toContain('delete from "public"."authors" _t0 where _t0."id" = $1 returning _t0.*');
  });

  it('writes a view’s PUT, default on_conflict and Location by the key inferred from its table, under the view’s column names', () => {
    const views = snapshotOf({
      relations: [
        { name: 'posts', kind: 'table', columns: [col('id', 'bigint', false), col('title')], primaryKey: ['id'], comment: null },
        { name: 'post_titles', kind: 'view', columns: [col('post_id', 'bigint'), col('title')], primaryKey: [], comment: null },
      ],
      viewColumns: [
        { view: 'post_titles', column: 'post_id', table: 'posts', tableColumn: 'id' },
        { view: 'post_titles', column: 'title', table: 'posts', tableColumn: 'title' },
      ],
    });
    const on = (method: string, query: string, more: Partial<RawRequest>) => statementFor(planRequest(request(method, 'post_titles', query, more), views));
    const put = on('PUT', 'post_id=eq.1', { body: '{"post_id":1,"title":"a"}' });
    expect(put.text).toContain('insert into "public"."post_titles" ("post_id", "title")');
    // PostgreSQL takes ON CONFLICT on an automatically updatable view to its table's unique index; a view's RETURNING has no xmax.
    expect(put.text).toContain(') _r where _r."post_id" = $2 on conflict ("post_id") do update set "title" = excluded."title" returning *)');
    const merge = on('POST', '', { body: '{"post_id":1,"title":"a"}', headers: { prefer: 'resolution=merge-duplicates,return=headers-only' } });
    expect(merge.text).toContain('on conflict ("post_id") do update set "title" = excluded."title" returning *)');
    expect(merge.text).toContain('(select to_json(_k)::text from (select _t0."post_id" from pgrst_mutation _t0 limit 1) _k) as location');
    const headersOnly = respond(planRequest(request('POST', 'post_titles', '', { body: '{"title":"a"}', headers: { prefer: 'return=headers-only' } }), views), { body: null, page_count: 1, total: 1, location: '{"post_id":7}' });
    expect(headersOnly.headers.location).toBe('/post_titles?post_id=eq.7');
  });

  it('inserts each key set of a missing=default bulk insert from the body by position, so PostgreSQL reads every value as sent', () => {
    const body = '[{"title":"a","author_id":9007199254740993},{"title":"b"},{"title":"c","author_id":1}]';
    const statement = sql('POST', 'posts', '', { body, headers: { prefer: 'missing=default' } });
    // Each object's key set by position ([0, 1, 0]), looked up once per object; the body split once.
    expect(statement.values).toEqual([body, [0, 1, 0]]);
    expect(statement.text).toContain('with pgrst_body as materialized (select _e.j, _e.n from json_array_elements($1::json) with ordinality _e(j, n)), ');
    expect(statement.text).toContain('pgrst_g0 as (insert into "public"."posts" ("author_id", "title") select "author_id", "title" from (select _o.* from pgrst_body _e cross join lateral json_populate_record(null::"public"."posts", _e.j) _o where ($2::int[])[_e.n] = 0 order by _e.n) _r returning *)');
    expect(statement.text).toContain('pgrst_g1 as (insert into "public"."posts" ("title") select "title" from (select _o.* from pgrst_body _e cross join lateral json_populate_record(null::"public"."posts", _e.j) _o where ($2::int[])[_e.n] = 1 order by _e.n) _r returning *)');
  });

  it('writes a PUT only when the body’s key meets the filters, compared by PostgreSQL', () => {
    const statement = sql('PUT', 'authors', 'id=eq.9007199254740993', { body: '{"id":9007199254740993,"name":"a"}' });
    expect(statement.values).toEqual(['{"id":9007199254740993,"name":"a"}', '9007199254740993']);
    expect(statement.text).toContain(') _r where _r."id" = $2 on conflict ("id") do update set "name" = excluded."name" returning *');
    expect(() => plan('PUT', 'authors', 'id=gt.1', { body: '{"id":2}' })).toThrow(/eq filter on each primary key/);
  });

  it('limits a PATCH or DELETE through ctid, in order', () => {
    const statement = sql('DELETE', 'posts', 'title=eq.x&order=id&limit=2');
    expect(statement.text).toContain('delete from "public"."posts" _t0 where _t0."title" = $1 and _t0.ctid = any(array(select _l0.ctid from "public"."posts" _l0 where _l0."title" = $2 order by _l0."id" asc limit $3))');
    expect(statement.values).toEqual(['x', 'x', 2]);
  });

  it('calls functions with named arguments: a POST’s read by PostgreSQL from the body as sent, in their types; a GET’s as query texts', () => {
    const body = '{"a":9007199254740993,"b":2}';
    const post = statementFor(planRequest(parseRequest({ method: 'POST', target: 'add', rpc: true, query: '', headers: {}, body }), snapshot));
    expect(post).toEqual({
      text: `select to_json("public"."add"("a" => _a."a", "b" => _a."b"))::text as body, 1 as page_count, null::bigint as total${RESPONSE_SETTINGS} from json_to_record($1::json) as _a("a" integer, "b" integer)`,
      values: [body],
    });
    const get = statementFor(planRequest(parseRequest({ method: 'GET', target: 'add', rpc: true, query: 'a=1', headers: {} }), snapshot));
    expect(get).toEqual({ text: `select to_json("public"."add"("a" => $1))::text as body, 1 as page_count, null::bigint as total${RESPONSE_SETTINGS}`, values: ['1'] });
  });

  it('reads response.status and response.headers as the last columns of every statement’s row, after what the others ran', () => {
    const fns = snapshotOf({
      relations: [{ name: 'posts', kind: 'table', columns: [col('id', 'bigint', false), col('title')], primaryKey: ['id'], comment: null }],
      functions: [
        { name: 'rows', args: [], returnType: 'posts', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title')] },
        { name: 'one', args: [], returnType: 'posts', returnsSet: false, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title')] },
        { name: 'numbers', args: [], returnType: 'integer', returnsSet: true, returnsRow: false, returnsVoid: false, volatile: false },
        { name: 'scalar', args: [], returnType: 'integer', returnsSet: false, returnsRow: false, returnsVoid: false, volatile: false },
        { name: 'nothing', args: [], returnType: 'void', returnsSet: false, returnsRow: false, returnsVoid: true, volatile: true },
      ],
    });
    const rpc = (target: string, prefer = '') => statementFor(planRequest(parseRequest({ method: 'POST', target, rpc: true, query: '', headers: { prefer }, body: '{}' }), fns));
    const statements = [
      sql('GET', 'posts', 'id=eq.1'),
      sql('GET', 'posts', '', { headers: { prefer: 'count=exact' } }),
      sql('POST', 'posts', '', { body: '{"title":"a"}', headers: { prefer: 'return=representation' } }),
      sql('PATCH', 'posts', 'id=eq.1', { body: '{"title":"a"}' }),
      sql('DELETE', 'posts', 'id=eq.1'),
      ...['rows', 'one', 'numbers', 'scalar', 'nothing'].map((fn) => rpc(fn)),
      rpc('rows', 'count=exact'),
      rpc('numbers', 'count=exact'),
    ];
    for (const statement of statements) {
      // The final select's list ends with them: its FROM, if any, follows, and no other column comes after.
      expect(statement.text, statement.text).toMatch(new RegExp(`(as total|as inserted)${RESPONSE_SETTINGS.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( from (\\(|json_to_record|"public"\\.|pgrst_source)|$)`));
    }
  });

  it('counts a set-returning function’s rows under count=exact, calling it once in a CTE that the page and the count both read', () => {
    const fns = snapshotOf({
      relations: [],
      functions: [
        { name: 'by_author', args: [{ name: 'author', type: 'bigint', hasDefault: false }], returnType: 'posts', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title')] },
        { name: 'numbers', args: [], returnType: 'integer', returnsSet: true, returnsRow: false, returnsVoid: false, volatile: true },
      ],
    });
    const call = (target: string, query: string, prefer = 'count=exact') => statementFor(planRequest(parseRequest({ method: 'GET', target, rpc: true, query, headers: { prefer } }), fns));
    const rows = call('by_author', 'author=1&select=id&id=gt.1&order=id&limit=2');
    expect(rows.text).toBe(
      'with pgrst_source as (select _t0.* from "public"."by_author"("author" => $1) _t0 where _t0."id" > $2) ' +
        `select coalesce(json_agg(_s), '[]')::text as body, count(*)::int as page_count, (select count(*) from pgrst_source) as total${RESPONSE_SETTINGS} ` +
        'from (select _t0."id" as "id" from pgrst_source _t0 order by _t0."id" asc limit $3) _s',
    );
    expect(rows.values).toEqual(['1', '1', 2]);
    const scalars = call('numbers', 'limit=1&offset=1');
    expect(scalars.text.match(/"public"\."numbers"/g)).toHaveLength(1);
    expect(scalars.text).toContain(`(select count(*) from pgrst_source) as total${RESPONSE_SETTINGS} from (select _s.v from pgrst_source _s limit $1 offset $2) _s`);
    expect(call('numbers', '', 'count=planned').text).toContain('null::bigint as total');
  });
});

describe('views and computed fields (PostgREST’s view relationships, computed fields and relationships)', () => {
  const library = snapshotOf({
    relations: [
      { name: 'authors', kind: 'table', columns: [col('id', 'bigint', false), col('name')], primaryKey: ['id'], comment: null },
      { name: 'books', kind: 'table', columns: [col('id', 'bigint', false), col('title'), col('author_id', 'bigint')], primaryKey: ['id'], comment: null },
      { name: 'tags', kind: 'table', columns: [col('id', 'integer', false), col('label')], primaryKey: ['id'], comment: null },
      { name: 'books_tags', kind: 'table', columns: [col('book_id', 'bigint'), col('tag_id', 'integer')], primaryKey: ['book_id', 'tag_id'], comment: null },
      { name: 'published_books', kind: 'view', columns: [col('id', 'bigint'), col('title'), col('writer', 'bigint')], primaryKey: [], comment: null },
      { name: 'writers', kind: 'view', columns: [col('id', 'bigint'), col('name'), col('alias_id', 'bigint')], primaryKey: [], comment: null },
    ],
    foreignKeys: [
      { name: 'books_author_id_fkey', table: 'books', columns: ['author_id'], refTable: 'authors', refColumns: ['id'] },
      { name: 'books_tags_book_id_fkey', table: 'books_tags', columns: ['book_id'], refTable: 'books', refColumns: ['id'] },
      { name: 'books_tags_tag_id_fkey', table: 'books_tags', columns: ['tag_id'], refTable: 'tags', refColumns: ['id'] },
    ],
    viewColumns: [
      { view: 'published_books', column: 'id', table: 'books', tableColumn: 'id' },
      { view: 'published_books', column: 'title', table: 'books', tableColumn: 'title' },
      { view: 'published_books', column: 'writer', table: 'books', tableColumn: 'author_id' },
      // writers shows authors.id twice: as id and as alias_id.
      { view: 'writers', column: 'id', table: 'authors', tableColumn: 'id' },
      { view: 'writers', column: 'name', table: 'authors', tableColumn: 'name' },
      { view: 'writers', column: 'alias_id', table: 'authors', tableColumn: 'id' },
    ],
    rowFunctions: [
      { name: 'shout', relation: 'authors', type: 'text', returnsSet: false },
      { name: 'name', relation: 'authors', type: 'text', returnsSet: false },
      { name: 'meta', relation: 'books', type: 'jsonb', returnsSet: false },
      { name: 'books_of', relation: 'authors', type: 'books', returnsSet: true, returnsRowOf: 'books' },
      { name: 'authors', relation: 'books', type: 'authors', returnsSet: true, returnsRowOf: 'authors', oneRow: true },
    ],
    functions: [
      { name: 'books_by', args: [{ name: 'author', type: 'bigint', hasDefault: false }], returnType: 'books', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title'), col('author_id', 'bigint')], returnsRowOf: 'books' },
      { name: 'first_book', args: [], returnType: 'books', returnsSet: false, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title'), col('author_id', 'bigint')], returnsRowOf: 'books' },
      { name: 'published', args: [], returnType: 'published_books', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('title'), col('writer', 'bigint')], returnsRowOf: 'published_books' },
      // `returns table (…)`, one of them named as a table: rows of no relation.
      { name: 'book_rows', args: [], returnType: 'record', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('author_id', 'bigint')] },
      { name: 'books', args: [], returnType: 'record', returnsSet: true, returnsRow: true, returnsVoid: false, volatile: false, resultColumns: [col('id', 'bigint'), col('author_id', 'bigint')] },
    ],
  });
  const planOf = (method: string, target: string, query: string, more: Partial<RawRequest> = {}) => planRequest(request(method, target, query, more), library);
  const first = (target: string, query: string) => {
    const planned = planOf('GET', target, query);
    return planned.kind === 'read' ? planned.select.at(-1) : undefined;
  };

  it('embeds from a view and into one through the keys of the tables it shows, under the key’s name', () => {
    expect(first('published_books', 'select=title,authors(name)')).toMatchObject({ kind: 'embed', relation: { name: 'authors' }, many: false, on: [['writer', 'id']] });
    expect(first('authors', 'select=name,published_books(title)')).toMatchObject({ kind: 'embed', many: true, on: [['id', 'writer']] });
    expect(first('published_books', 'select=title,authors!books_author_id_fkey(name)')).toMatchObject({ on: [['writer', 'id']] });
    expect(first('published_books', 'select=title,authors!writer(name)')).toMatchObject({ on: [['writer', 'id']] });
    // Many-to-many with a view on one side: its key to the junction is the table's.
    expect(first('published_books', 'select=title,tags(label)')).toMatchObject({ many: true, through: { relation: 'books_tags', parentOn: [['id', 'book_id']] } });
    const statement = statementFor(planOf('GET', 'published_books', 'select=title,authors(name)'));
    expect(statement.text).toContain('from "public"."authors" _t1 where _t1."id" = _t0."writer"');
    // No key links a view to its own table, nor one key a junction to both (books ← books_tags → published_books is one key).
    expect(() => planOf('GET', 'books', 'select=published_books(title)')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_relation' }));
  });

  it('answers 300 when a view shows a key’s column twice, naming each way; a hint on either column picks one', () => {
    expect(() => planOf('GET', 'books', 'select=writers(name)')).toThrow(expect.objectContaining({
      status: 300,
      code: 'ambiguous_relation',
      details: ['books_author_id_fkey (books(author_id) → writers(id))', 'books_author_id_fkey (books(author_id) → writers(alias_id))'],
      hint: 'name one with !<foreign key> or !<column>, e.g. writers!id(...)',
    }));
    expect(() => planOf('GET', 'writers', 'select=books(title)')).toThrow(expect.objectContaining({ status: 300, hint: expect.stringContaining('books!id(...)') }));
    expect(first('writers', 'select=books!id(title)')).toMatchObject({ many: true, on: [['id', 'author_id']] });
    expect(first('books', 'select=writers!alias_id(name)')).toMatchObject({ many: false, on: [['author_id', 'alias_id']] });
    expect(first('published_books', 'select=writers!id(name)')).toMatchObject({ many: false, on: [['writer', 'id']] });
    expect(first('writers', 'select=books!alias_id(title)')).toMatchObject({ many: true, on: [['alias_id', 'author_id']] });
  });

  it('reads, filters and orders a computed field as a column: the function called on the row, its values parameters', () => {
    const statement = statementFor(planOf('GET', 'authors', 'select=id,shout,loud:shout::varchar&shout=eq.ADA&or=(shout.like.*A*,id.eq.1)&order=shout.desc'));
    const call = '"public"."shout"((_t0.*)::"public"."authors")';
    expect(statement.text).toContain(`select _t0."id" as "id", ${call} as "shout", ${call}::varchar as "loud" from "public"."authors" _t0 where (${call} = $1) and (((${call}::text like $2) or (_t0."id" = $3))) order by ${call} desc) _s`);
    expect(statement.values).toEqual(['ADA', '%A%', '1']);
    // A JSON path on a function returning jsonb, in an embedding.
    const nested = statementFor(planOf('GET', 'authors', 'select=books!author_id(lang:meta->>lang)&books.meta->>lang=eq.en'));
    expect(nested.text).toContain('("public"."meta"((_t1.*)::"public"."books") ->> $3::text) as "lang" from "public"."books" _t1 where _t1."author_id" = _t0."id" and ("public"."meta"((_t1.*)::"public"."books") ->> $1::text) = $2');
    // Not part of *, and a column of the same name wins, as in PostgreSQL.
    expect((planOf('GET', 'authors', 'select=*') as { select: unknown[] }).select).toHaveLength(2);
    expect(statementFor(planOf('GET', 'authors', 'select=name')).text).toContain('_t0."name" as "name"');
    // Refused as any unknown column; never written.
    expect(() => planOf('GET', 'authors', 'select=whisper')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    expect(() => planOf('GET', 'books', 'select=shout')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
    expect(() => planOf('POST', 'authors', '', { body: '{"shout":"x"}' })).toThrow(expect.objectContaining({ status: 400, code: 'unknown_column' }));
  });

  it('takes a computed field in a write’s filters and returned rows, from the rows as the relation’s type (an upsert’s without its own column)', () => {
    const patch = statementFor(planOf('PATCH', 'authors', 'shout=eq.ADA&select=id,shout', { body: '{"name":"b"}', headers: { prefer: 'return=representation' } }));
    expect(patch.text).toContain('where "public"."shout"((_t0.*)::"public"."authors") = $2 returning _t0.*');
    expect(patch.text).toContain('select _t0."id" as "id", "public"."shout"((_t0.*)::"public"."authors") as "shout" from pgrst_mutation _t0');
    const upsert = statementFor(planOf('POST', 'authors', 'select=shout', { body: '{"id":1,"name":"a"}', headers: { prefer: 'resolution=merge-duplicates,return=representation' } }));
    expect(upsert.text).toContain('from (select "public"."shout"((_t0.*)::"public"."authors") as "shout" from (select "id", "name" from pgrst_mutation) _t0) _s');
  });

  it('embeds through a computed relationship: the function’s rows for the parent’s row, to-many or to-one (rows 1), before a key to a table of its name', () => {
    expect(first('authors', 'select=name,books_of(title)')).toMatchObject({ kind: 'embed', relation: { name: 'books' }, many: true, on: [], computed: { function: 'books_of', argument: 'authors' } });
    const toOne = first('books', 'select=title,authors(name)');
    expect(toOne).toMatchObject({ relation: { name: 'authors' }, many: false, computed: { function: 'authors' } });
    expect(first('books', 'select=title,authors!books_author_id_fkey(name)')).toMatchObject({ computed: { function: 'authors' } });
    const statement = statementFor(planOf('GET', 'authors', 'select=name,books_of!inner(title)&books_of.title=eq.x&books_of.order=id'));
    expect(statement.text).toContain(`(select coalesce(json_agg(_e2), '[]') from (select _t1."title" as "title" from "public"."books_of"((_t0.*)::"public"."authors") _t1 where true and _t1."title" = $1 order by _t1."id" asc) _e2) as "books_of"`);
    expect(statement.text).toContain('from "public"."authors" _t0 where true and exists (select 1 from "public"."books_of"((_t0.*)::"public"."authors") _t3 where true and _t3."title" = $2)) _s');
    expect(statementFor(planOf('GET', 'books', 'select=title,authors(name)&order=authors(name)')).text).toContain('order by (select _t3."name" from "public"."authors"((_t0.*)::"public"."books") _t3 where true and true limit 1) asc');
    // A computed relationship is the relation's own: from a view or another table it is unknown.
    expect(() => planOf('GET', 'published_books', 'select=books_of(title)')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_relation' }));
  });

  it('reads an rpc’s rows of a relation’s type as that relation’s: its keys, computed fields and relationships, !inner and related order, in the count too', () => {
    const rpc = (method: string, target: string, query: string, more: Partial<RawRequest> = {}) => planRequest(parseRequest({ method, target, rpc: true, query, headers: {}, ...more }), library);
    const planned = rpc('POST', 'books_by', 'select=title,lang:meta->>lang,authors(name,shout),tags(label)', { body: '{"author":1}' });
    expect(planned.kind === 'rpc' && planned.select).toMatchObject([
      { kind: 'column', column: { name: 'title' } },
      { kind: 'column', column: { name: 'meta', computedOf: 'books' } },
      { kind: 'embed', relation: { name: 'authors' }, many: false, computed: { function: 'authors', argument: 'books' }, select: [{}, { column: { computedOf: 'authors' } }] },
      { kind: 'embed', relation: { name: 'tags' }, many: true, through: { relation: 'books_tags', parentOn: [['id', 'book_id']] } },
    ]);
    const statement = statementFor(rpc('GET', 'books_by', 'author=1&select=title,authors!inner(name)&authors.name=eq.Ada&title=neq.x&order=authors(name).desc', { headers: { prefer: 'count=exact' } }));
    expect(statement.text).toBe(
      'with pgrst_source as (select _t0.* from "public"."books_by"("author" => $1) _t0 where _t0."title" <> $2 and exists (select 1 from "public"."authors"((_t0.*)::"public"."books") _t1 where true and _t1."name" = $3)) ' +
        `select coalesce(json_agg(_s), '[]')::text as body, count(*)::int as page_count, (select count(*) from pgrst_source) as total${RESPONSE_SETTINGS} ` +
        'from (select _t0."title" as "title", (select to_json(_e3) from (select _t2."name" as "name" from "public"."authors"((_t0.*)::"public"."books") _t2 where true and _t2."name" = $4 limit 1) _e3) as "authors" from pgrst_source _t0 ' +
        'order by (select _t4."name" from "public"."authors"((_t0.*)::"public"."books") _t4 where true and _t4."name" = $5 limit 1) desc) _s',
    );
    expect(statement.values).toEqual(['1', 'x', 'Ada', 'Ada', 'Ada']);
    // One row of a table's type, and rows of a view's type through the keys of the table it shows.
    expect(statementFor(rpc('POST', 'first_book', 'select=title,tags(label)', { body: '{}' })).text).toContain('from "public"."tags" _t1 join "public"."books_tags" _j3 on _j3."tag_id" = _t1."id" where _j3."book_id" = _t0."id"');
    expect(statementFor(rpc('GET', 'published', 'select=title,authors(name)&authors=not.is.null')).text).toContain('from "public"."published"() _t0 where exists (select 1 from "public"."authors" _t1 where _t1."id" = _t0."writer" and true)');
    // Rows of no relation have no relationships, even under a table's name (PostgREST's PGRST200); an unused embedded filter is refused.
    for (const target of ['book_rows', 'books']) {
      expect(() => rpc('GET', target, 'select=id,authors(name)')).toThrow(expect.objectContaining({ status: 400, code: 'unknown_relation', message: `could not find a relationship between "${target}" and "authors"` }));
    }
    expect(() => rpc('GET', 'books_by', 'author=1&tags.label=eq.x')).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
  });
});

describe('respond', () => {
  it('answers reads with Content-Range, and 206 when a count shows more rows', () => {
    const read = plan('GET', 'posts', 'limit=2', { headers: { prefer: 'count=exact' } });
    const answer = respond(read, { body: '[{},{}]', page_count: 2, total: '5' });
    expect(answer).toMatchObject({ status: 206, body: '[{},{}]', headers: { 'content-range': '0-1/5', 'preference-applied': 'count=exact' } });
    expect(respond(plan('GET', 'posts', ''), { body: '[]', page_count: 0, total: null }).headers['content-range']).toBe('*/*');
  });

  it('answers a counted rpc returning a set as a read: Content-Range with the total, 206 for part of it, 416 past it', () => {
    const fns = snapshotOf({ relations: [], functions: [{ name: 'numbers', args: [], returnType: 'integer', returnsSet: true, returnsRow: false, returnsVoid: false, volatile: false }] });
    const call = (query: string) => planRequest(parseRequest({ method: 'GET', target: 'numbers', rpc: true, query, headers: { prefer: 'count=exact' } }), fns);
    expect(respond(call('limit=2'), { body: '[1,2]', page_count: 2, total: '5' })).toMatchObject({ status: 206, headers: { 'content-range': '0-1/5' } });
    expect(respond(call(''), { body: '[1,2]', page_count: 2, total: '2' })).toMatchObject({ status: 200, headers: { 'content-range': '0-1/2' } });
    expect(() => respond(call('offset=6'), { body: '[]', page_count: 0, total: '5' })).toThrow(expect.objectContaining({ status: 416 }));
  });

  it('answers 416 for a counted request that starts past the last row', () => {
    const past = plan('GET', 'posts', 'offset=10', { headers: { prefer: 'count=exact' } });
    expect(() => respond(past, { body: '[]', page_count: 0, total: '5' })).toThrow(expect.objectContaining({ status: 416, code: 'range_not_satisfiable' }));
    expect(respond(plan('GET', 'posts', 'offset=5', { headers: { prefer: 'count=exact' } }), { body: '[]', page_count: 0, total: '5' }).headers['content-range']).toBe('*/5');
  });

  it('refuses anything but one row for the single-object media type', () => {
    const single = plan('GET', 'posts', '', { headers: { accept: 'application/vnd.pgrst.object+json' } });
    expect(() => respond(single, { body: null, page_count: 2, total: null })).toThrow(expect.objectContaining({ status: 406 }));
    expect(respond(single, { body: '{"id":1}', page_count: 1, total: null })).toMatchObject({ status: 200, body: '{"id":1}' });
  });

  it('checks a write under the single-object media type before COMMIT whatever Prefer: return says, and a PUT’s one row', () => {
    const single = { accept: 'application/vnd.pgrst.object+json' };
    for (const prefer of ['return=minimal', 'return=headers-only', 'return=representation']) {
      const patch = plan('PATCH', 'posts', 'id=gt.1', { body: '{"title":"a"}', headers: { ...single, prefer } });
      expect(checkedBeforeCommit(patch), prefer).toBe(true);
      expect(() => checkBeforeCommit(patch, { body: null, page_count: 2, total: 2 }), prefer).toThrow(expect.objectContaining({ status: 406, code: 'not_single_object' }));
      expect(() => checkBeforeCommit(patch, { body: null, page_count: 1, total: 1 })).not.toThrow();
    }
    expect(checkedBeforeCommit(plan('DELETE', 'posts', 'id=gt.1'))).toBe(false);
    const put = plan('PUT', 'authors', 'id=eq.1', { body: '{"id":2}' });
    expect(checkedBeforeCommit(put)).toBe(true);
    expect(() => checkBeforeCommit(put, { body: null, page_count: 0, total: 0 })).toThrow(expect.objectContaining({ status: 400, message: expect.stringMatching(/primary key/) }));
  });

  it('answers the status and headers SQL set in response.*, ours of the same name replaced, framing kept; 500 for values of the wrong shape', () => {
    const post = plan('POST', 'posts', '', { body: '{"title":"a"}', headers: { prefer: 'return=representation' } });
    const row = { body: '[{"id":1}]', page_count: 1, total: 1 };
    expect(respond(post, { ...row, response_status: null, response_headers: null })).toMatchObject({ status: 201, headers: { 'content-type': 'application/json; charset=utf-8' } });
    const set = respond(post, { ...row, response_status: '202', response_headers: '[{"X-Job":"7"},{"Set-Cookie":"a=1"},{"Set-Cookie":"b=2"},{"Content-Type":"text/plain"},{"Content-Length":"1"}]' });
    expect(set).toEqual({
      status: 202,
      headers: { 'content-range': '*/*', 'preference-applied': 'return=representation', 'content-type': 'text/plain', 'x-job': '7', 'set-cookie': ['a=1', 'b=2'] },
      body: '[{"id":1}]',
    });
    expect(respond(plan('GET', 'posts', ''), { ...row, response_status: '418' }).status).toBe(418);
    for (const status of ['abc', '99', '600', '2001', '20.5']) {
      expect(() => respond(post, { ...row, response_status: status }), status).toThrow(expect.objectContaining({ status: 500, code: 'invalid_response_status' }));
    }
    for (const headers of ['{"X-A":"1"}', 'not json', '[{"X-A":1}]', '[{"X-A":"1","X-B":"2"}]', '[{}]', '["X-A"]', '[{"X A":"1"}]', '[{"X-A":"5 €"}]']) {
      expect(() => respond(post, { ...row, response_headers: headers }), headers).toThrow(expect.objectContaining({ status: 500, code: 'invalid_response_headers' }));
    }
  });

  it('prepends the CSV header', () => {
    const csv = plan('GET', 'posts', 'select=id,title', { headers: { accept: 'text/csv' } });
    expect(respond(csv, { body: '"1","a"', page_count: 1, total: null })).toMatchObject({ body: '"id","title"\n"1","a"', headers: { 'content-type': 'text/csv; charset=utf-8' } });
  });

  it('answers an upsert 200 when it inserted nothing (POST) or replaced its row (PUT), 201 when it inserted, from the rows the statement saw inserted', () => {
    const merge = (prefer: string) => plan('POST', 'posts', '', { body: '{"id":1,"title":"a"}', headers: { prefer: `resolution=merge-duplicates,${prefer}` } });
    expect(statementFor(merge('return=minimal')).text).toContain('on conflict ("id") do update set "title" = excluded."title" returning *, xmax = 0 as pgrst_inserted');
    expect(statementFor(merge('return=minimal')).text).toContain('(select count(*) from pgrst_mutation where pgrst_inserted) as inserted');
    expect(statementFor(plan('POST', 'posts', '', { body: '{"title":"a"}' })).text).toContain('returning *) select null::text as body, count(*)::int as page_count, count(*) as total, null::text as location, null::bigint as inserted');
    for (const prefer of ['return=minimal', 'return=headers-only', 'return=representation']) {
      expect(respond(merge(prefer), { body: null, page_count: 2, total: 2, inserted: '0' }).status, prefer).toBe(200);
      expect(respond(merge(prefer), { body: null, page_count: 2, total: 2, inserted: '1' }).status, prefer).toBe(201);
    }
    const ignore = plan('POST', 'posts', '', { body: '{"id":1}', headers: { prefer: 'resolution=ignore-duplicates' } });
    expect(respond(ignore, { body: null, page_count: 0, total: 0 }).status).toBe(201);
    const put = (prefer: string) => plan('PUT', 'authors', 'id=eq.1', { body: '{"id":1}', headers: { prefer } });
    expect(respond(put('return=representation'), { body: '[]', page_count: 1, total: 1, inserted: '1' }).status).toBe(201);
    expect(respond(put('return=representation'), { body: '[]', page_count: 1, total: 1, inserted: '0' }).status).toBe(200);
    expect(respond(put('return=minimal'), { body: null, page_count: 1, total: 1, inserted: '1' }).status).toBe(204);
  });

  it('answers a PATCH’s Content-Range over the rows it changed, a POST’s and a DELETE’s as a count, a PUT without one', () => {
    const range = (method: string, query: string, prefer: string, rows: number) =>
      respond(plan(method, method === 'PUT' ? 'authors' : 'posts', query, { body: method === 'DELETE' ? undefined : '{"id":1}', headers: { prefer } }), { body: null, page_count: rows, total: rows }).headers['content-range'];
    expect(range('PATCH', 'id=gt.1', 'return=representation,count=exact', 2)).toBe('0-1/2');
    expect(range('PATCH', 'id=gt.1', '', 2)).toBe('0-1/*');
    expect(range('PATCH', 'id=gt.1', 'count=exact', 0)).toBe('*/0');
    expect(range('POST', '', 'count=exact', 2)).toBe('*/2');
    expect(range('DELETE', 'id=gt.1', '', 2)).toBe('*/*');
    expect(range('PUT', 'id=eq.1', 'count=exact', 1)).toBeUndefined();
  });

  it('answers writes 201/204 by preference, with a Location for headers-only', () => {
    expect(respond(plan('POST', 'posts', '', { body: '{"title":"a"}' }), { body: null, page_count: 1, total: 1 })).toMatchObject({ status: 201, body: null });
    expect(respond(plan('PATCH', 'posts', 'id=eq.1', { body: '{"title":"a"}' }), { body: null, page_count: 1, total: 1 }).status).toBe(204);
    const headersOnly = respond(plan('POST', 'posts', '', { body: '{"title":"a"}', headers: { prefer: 'return=headers-only' } }), { body: null, page_count: 1, total: 1, location: '{"id":7}' });
    expect(headersOnly.headers.location).toBe('/posts?id=eq.7');
  });
});
