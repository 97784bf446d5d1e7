/**
 * Stage 1, parse: the PostgREST grammar of select, filters, logic trees,
 * order, paging, Prefer and Accept, and the refusals of malformed input.
 */
import { describe, expect, it } from 'vitest';
import { MAX_NESTING, parseFilter, parseLogic, parseOrder, parseSelect, splitJsonPath, splitTopLevel } from '../src/rest/grammar';
import { parseAccept, parseRequest, type RawRequest } from '../src/rest/parse';
import { profileOf } from '../src/rest/profile';

const raw = (query: string, more: Partial<RawRequest> = {}): RawRequest => ({ method: 'GET', target: 'posts', rpc: false, query, headers: {}, ...more });

describe('select', () => {
  it('reads columns, aliases, casts, stars and embeddings with hints and !inner', () => {
    expect(parseSelect(undefined)).toEqual([{ kind: 'star' }]);
    expect(parseSelect('id,name:title,score::text,total:score::int8,*')).toEqual([
      { kind: 'field', name: 'id', alias: undefined, cast: undefined },
      { kind: 'field', name: 'title', alias: 'name', cast: undefined },
      { kind: 'field', name: 'score', alias: undefined, cast: 'text' },
      { kind: 'field', name: 'score', alias: 'total', cast: 'int8' },
      { kind: 'star' },
    ]);
    expect(parseSelect('id,author:authors!posts_author_id_fkey(name),comments!inner(id,body),tags()')).toEqual([
      { kind: 'field', name: 'id', alias: undefined, cast: undefined },
      { kind: 'embed', relation: 'authors', alias: 'author', hint: 'posts_author_id_fkey', inner: false, children: [{ kind: 'field', name: 'name', alias: undefined, cast: undefined }] },
      { kind: 'embed', relation: 'comments', alias: undefined, hint: undefined, inner: true, children: [{ kind: 'field', name: 'id', alias: undefined, cast: undefined }, { kind: 'field', name: 'body', alias: undefined, cast: undefined }] },
      { kind: 'embed', relation: 'tags', alias: undefined, hint: undefined, inner: false, children: [] },
    ]);
  });

  it('reads quoted identifiers as relation names and hints, and casts whose type has modifiers or spaces', () => {
    expect(parseSelect('"odd child"(note),p:"Odd Parent"!"a!b"!inner("first name")')).toEqual([
      { kind: 'embed', relation: 'odd child', alias: undefined, hint: undefined, inner: false, children: [{ kind: 'field', name: 'note', alias: undefined, cast: undefined }] },
      { kind: 'embed', relation: 'Odd Parent', alias: 'p', hint: 'a!b', inner: true, children: [{ kind: 'field', name: 'first name', alias: undefined, cast: undefined }] },
    ]);
    expect(parseSelect('"a(b)"(x)')).toMatchObject([{ kind: 'embed', relation: 'a(b)' }]);
    expect(parseSelect('t:score::numeric(10,2),score::double precision,"x::y"::int')).toEqual([
      { kind: 'field', name: 'score', alias: 't', cast: 'numeric(10,2)' },
      { kind: 'field', name: 'score', alias: undefined, cast: 'double precision' },
      { kind: 'field', name: 'x::y', alias: undefined, cast: 'int' },
    ]);
    for (const bad of ['""(x)', '"a"b(x)', 'a!""(x)', 'a::']) expect(() => parseSelect(bad), bad).toThrow();
  });

  it('reads spreads', () => {
    expect(parseSelect('id,...authors(name)')[1]).toMatchObject({ kind: 'embed', relation: 'authors', spread: true, children: [{ kind: 'field', name: 'name' }] });
    expect(() => parseSelect('...name')).toThrow(/spread/);
    expect(() => parseSelect('...a:authors(name)')).toThrow(/spread/);
  });

  it('refuses what is not the grammar', () => {
    for (const bad of ['id,', 'a(b', 'a::b::c', 'x(y))', 'rel!nope!nope(x)']) expect(() => parseSelect(bad), bad).toThrow();
  });
});

describe('filters and logic', () => {
  it('reads operators, negation, lists and text-search configurations', () => {
    expect(parseFilter('id', 'eq.5')).toEqual({ kind: 'filter', column: 'id', negate: false, op: 'eq', value: '5' });
    expect(parseFilter('id', 'not.in.(1,"a,b",3)')).toEqual({ kind: 'filter', column: 'id', negate: true, op: 'in', value: ['1', 'a,b', '3'] });
    expect(parseFilter('t', 'fts(english).cat')).toMatchObject({ op: 'fts', language: 'english', value: 'cat' });
    expect(parseFilter('t', 'eq.a.b.c')).toMatchObject({ value: 'a.b.c' });
    expect(parseFilter('t', 'in.()')).toMatchObject({ value: [] });
  });

  it('reads any/all quantifiers over a list', () => {
    expect(parseFilter('t', 'like(any).{a*,"b,c"}')).toMatchObject({ op: 'like', quantifier: 'any', value: ['a*', 'b,c'] });
    expect(parseFilter('id', 'not.gt(all).{1,2}')).toMatchObject({ op: 'gt', quantifier: 'all', negate: true, value: ['1', '2'] });
  });

  it('refuses unknown operators and malformed values', () => {
    for (const bad of ['5', 'foo.5', 'in.1,2', 'is.maybe', 'eq(any).1', 'in(any).{1}', 'eq(some).{1}', 'fts(x']) expect(() => parseFilter('id', bad), bad).toThrow(/./);
  });

  it('reads nested and/or trees with quoted values', () => {
    expect(parseLogic('or', false, '(id.eq.1,and(a.is.null,b.not.eq."x,y"),not.or(c.gt.2,c.lt.0))')).toEqual({
      kind: 'logic', op: 'or', negate: false,
      children: [
        { kind: 'filter', column: 'id', negate: false, op: 'eq', value: '1' },
        { kind: 'logic', op: 'and', negate: false, children: [{ kind: 'filter', column: 'a', negate: false, op: 'is', value: 'null' }, { kind: 'filter', column: 'b', negate: true, op: 'eq', value: 'x,y' }] },
        { kind: 'logic', op: 'or', negate: true, children: [{ kind: 'filter', column: 'c', negate: false, op: 'gt', value: '2' }, { kind: 'filter', column: 'c', negate: false, op: 'lt', value: '0' }] },
      ],
    });
    expect(() => parseLogic('or', false, '(id.eq.1')).toThrow();
    expect(() => parseLogic('or', false, '()')).toThrow();
    expect(splitTopLevel('a,(b,c),"d,e",{f,g}')).toEqual(['a', '(b,c)', '"d,e"', '{f,g}']);
  });

  it('refuses or=/and= trees and select embeddings nested past MAX_NESTING with 400, not a stack overflow', () => {
    const logic = (depth: number) => `(${Array.from({ length: depth }).reduce<string>((inner) => `or(${inner})`, 'id.eq.1')})`;
    const embeds = (depth: number) => Array.from({ length: depth }).reduce<string>((inner) => `posts(${inner})`, 'id');
    expect(() => parseLogic('or', false, logic(MAX_NESTING - 1))).not.toThrow();
    expect(() => parseSelect(embeds(MAX_NESTING))).not.toThrow();
    for (const depth of [MAX_NESTING, 5000]) {
      expect(() => parseLogic('or', false, logic(depth))).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
      expect(() => parseSelect(embeds(depth + 1))).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
      expect(() => parseRequest(raw(`not.and=${logic(depth)}`))).toThrow(expect.objectContaining({ status: 400 }));
    }
  });

  it('splits JSON paths', () => {
    expect(splitJsonPath('meta->a->>b')).toEqual({ name: 'meta', json: [{ op: '->', key: 'a' }, { op: '->>', key: 'b' }] });
    expect(splitJsonPath('plain')).toEqual({ name: 'plain', json: [] });
    expect(() => splitJsonPath('meta->')).toThrow(/empty key/);
  });

  it('reads double-quoted names and JSON keys as PostgREST’s pFieldName: filters, or=/and= trees, order=, select=', () => {
    expect(splitJsonPath('"a->b"->"c d"->>"e.f"')).toEqual({ name: 'a->b', json: [{ op: '->', key: 'c d' }, { op: '->>', key: 'e.f' }] });
    expect(parseFilter('"a.b"', 'eq.1')).toEqual({ kind: 'filter', column: 'a.b', negate: false, op: 'eq', value: '1' });
    expect(parseLogic('or', false, '("a.b".eq.1,and("c,d".gt.2,"e f".is.null))')).toMatchObject({
      children: [{ column: 'a.b', op: 'eq', value: '1' }, { op: 'and', children: [{ column: 'c,d', op: 'gt' }, { column: 'e f', op: 'is' }] }],
    });
    expect(parseOrder('"a.b".desc,doc->>"k.l"')).toEqual([
      { column: 'a.b', direction: 'desc' },
      { column: 'doc', json: [{ op: '->>', key: 'k.l' }], direction: 'asc' },
    ]);
    expect(parseSelect('"a.b",doc->>"k l"')).toEqual([{ kind: 'field', name: 'a.b' }, { kind: 'field', name: 'doc', json: [{ op: '->>', key: 'k l' }] }]);
    const request = parseRequest(raw('"a.b"=eq.1&"emb.x"."c,d"=eq.2&"emb.x".order="e.f"&"limit"=eq.3'));
    expect(request.modifiers.get('')!.where).toMatchObject([{ column: 'a.b' }, { column: 'limit' }]);
    expect(request.modifiers.get('"emb.x"')).toMatchObject({ where: [{ column: 'c,d' }], order: [{ column: 'e.f' }] });
    expect(request.modifiers.has('emb.x')).toBe(false);
    expect(parseRequest(raw('columns="a,b",c', { method: 'POST', body: '{}' })).columns).toEqual(['a,b', 'c']);
  });

  it('reads order terms', () => {
    expect(parseOrder('a.desc.nullslast,b,c.asc.nullsfirst')).toEqual([
      { column: 'a', direction: 'desc', nulls: 'last' },
      { column: 'b', direction: 'asc' },
      { column: 'c', direction: 'asc', nulls: 'first' },
    ]);
    expect(() => parseOrder('a.sideways')).toThrow();
  });

  it('reads related order terms, embedding(column), by an embedding’s name or alias, with a JSON path and quoted names (PostgREST 11)', () => {
    expect(parseOrder('authors(name).desc.nullslast,id')).toEqual([
      { relation: 'authors', column: 'name', direction: 'desc', nulls: 'last' },
      { column: 'id', direction: 'asc' },
    ]);
    expect(parseOrder('writer(meta->"a.b")')).toEqual([{ relation: 'writer', column: 'meta', json: [{ op: '->', key: 'a.b' }], direction: 'asc' }]);
    expect(parseOrder('"Odd Parent"("first name").nullsfirst')).toEqual([{ relation: 'Odd Parent', column: 'first name', direction: 'asc', nulls: 'first' }]);
    expect(parseOrder('"a(b)".desc')).toEqual([{ column: 'a(b)', direction: 'desc' }]);
    const request = parseRequest(raw('select=id,posts(id,authors(name))&order=authors(name)&posts.order=authors(name).desc'));
    expect(request.modifiers.get('')!.order).toEqual([{ relation: 'authors', column: 'name', direction: 'asc' }]);
    expect(request.modifiers.get('posts')!.order).toEqual([{ relation: 'authors', column: 'name', direction: 'desc' }]);
    for (const bad of ['authors(name', 'authors(name)desc', 'authors(name,id)', 'authors()', '(name)', 'authors(name).up', 'a b(name)']) {
      expect(() => parseOrder(bad), bad).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
    }
  });
});

describe('requests', () => {
  it('collects filters per embedding path, paging, and the Range header', () => {
    const request = parseRequest(raw('select=id,authors(name)&id=gt.1&authors.name=like.A*&authors.order=name&authors.limit=2&limit=10&offset=5&or=(a.eq.1,b.eq.2)', { headers: { range: '0-4' } }));
    expect(request.action).toBe('read');
    const root = request.modifiers.get('')!;
    expect(root.where).toHaveLength(2);
    expect(root).toMatchObject({ limit: 5, offset: 5 });
    expect(request.modifiers.get('authors')).toMatchObject({ order: [{ column: 'name' }], limit: 2, where: [{ column: 'name', op: 'like' }] });
  });

  it('reads the Range header on GET only, as PostgREST does (RFC 9110)', () => {
    expect(parseRequest(raw('', { headers: { range: '2-3' } })).modifiers.get('')).toMatchObject({ offset: 2, limit: 2 });
    const ignored: Array<Partial<RawRequest>> = [
      { method: 'HEAD' },
      { method: 'PATCH', body: '{"a":1}' },
      { method: 'DELETE' },
      { method: 'POST', body: '{}', rpc: true, target: 'fn' },
      { method: 'PATCH', body: '{"a":1}', headers: { range: 'nonsense' } },
    ];
    for (const more of ignored) {
      const request = parseRequest(raw('id=eq.1', { headers: { range: '0-0' }, ...more }));
      expect(request.modifiers.get(''), more.method).toEqual({ where: [expect.objectContaining({ column: 'id' })], order: [] });
    }
  });

  it('ignores a Range header that does not read as a range, as PostgREST; one ending before it starts is 416', () => {
    for (const range of ['abc', 'items=abc', '1-2-3', '-5', 'bytes=0-1,2-3']) {
      expect(parseRequest(raw('', { headers: { range } })).modifiers.get(''), range).toEqual({ where: [], order: [] });
    }
    expect(() => parseRequest(raw('', { headers: { range: '5-2' } }))).toThrow(expect.objectContaining({ status: 416, code: 'range_not_satisfiable' }));
  });

  it('refuses limit= and offset= on a PUT, as PostgREST (PutLimitNotAllowedError), not on an embedding', () => {
    const put = (query: string) => parseRequest(raw(query, { method: 'PUT', body: '{"id":1}' }));
    for (const query of ['id=eq.1&limit=1', 'id=eq.1&offset=0']) {
      expect(() => put(query), query).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request', message: 'limit/offset querystring parameters are not allowed for PUT' }));
    }
    expect(() => put('id=eq.1&select=id,posts(id)&posts.limit=1')).not.toThrow();
    expect(() => parseRequest(raw('id=eq.1&limit=1', { method: 'PATCH', body: '{"id":1}' }))).not.toThrow();
  });

  it('reads + as a space and percent-encoding, as form encoding does', () => {
    const request = parseRequest(raw('title=eq.hello+world%2B'));
    expect(request.modifiers.get('')!.where[0]).toMatchObject({ value: 'hello world+' });
  });

  it('reads a form body as one object of texts: + a space, percent-encoding decoded, __proto__ one more field, a field given twice refused', () => {
    const form = (body: string, method = 'POST') => parseRequest(raw('', { method, body, bodyType: 'form' })).body;
    const body = form('title=hello+world%2B&__proto__=x&empty=&bare');
    expect(body!.raw).toBe('{"title":"hello world+","__proto__":"x","empty":"","bare":""}');
    expect(Object.keys(body!.value as object)).toEqual(['title', '__proto__', 'empty', 'bare']);
    expect(form('a=1', 'PATCH')!.value).toEqual({ a: '1' });
    expect(() => form('a=1&b=2&a=3')).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request', message: 'the form body gives "a" twice' }));
    expect(() => form('', 'PATCH')).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('reads an (any)/(all) list double-quoted inside a logic tree, as any value there', () => {
    const [quoted] = (parseRequest(raw('or=(name.like(any)."{a*,\\"b,c\\"}",n.eq(all).{})')).modifiers.get('')!.where[0] as { children: unknown[] }).children;
    expect(quoted).toMatchObject({ op: 'like', quantifier: 'any', value: ['a*', 'b,c'] });
    expect(() => parseRequest(raw('or=(n.eq(any)."1,2")'))).toThrow(expect.objectContaining({ status: 400, code: 'invalid_filter' }));
  });

  it('refuses a NUL character anywhere in the query string: a name would carry it into the statement’s text', () => {
    for (const query of ['select=id-%3E%00', 'select=a%00:id', 'title=eq.a%00b', 'id%00=eq.1']) {
      expect(() => parseRequest(raw(query)), query).toThrow(expect.objectContaining({ status: 400, code: 'invalid_request', message: 'the query string holds a NUL character (%00)' }));
    }
  });

  it('reads Prefer and Accept', () => {
    const request = parseRequest(raw('', { method: 'POST', body: '[{"a":1}]', headers: { prefer: 'return=representation, count=exact,resolution=merge-duplicates, tx=commit' } }));
    expect(request.prefer).toEqual({ return: 'representation', count: 'exact', resolution: 'merge-duplicates', missingDefault: false });
    expect(request.body).toEqual({ raw: '[{"a":1}]', value: [{ a: 1 }] });
    expect(parseAccept('application/vnd.pgrst.object+json')).toEqual({ media: 'object', stripNulls: false });
    expect(parseAccept('text/csv')).toEqual({ media: 'csv', stripNulls: false });
    expect(parseAccept('text/html, */*;q=0.8')).toEqual({ media: 'json', stripNulls: false });
    expect(() => parseAccept('application/xml')).toThrow(/none of these media types/);
    // nulls=stripped on PostgREST's own types, as postgrest-js's stripNulls() sends them; not on plain JSON.
    expect(parseAccept('application/vnd.pgrst.object+json;nulls=stripped')).toEqual({ media: 'object', stripNulls: true });
    expect(parseAccept('application/vnd.pgrst.array+json;nulls=stripped')).toEqual({ media: 'json', stripNulls: true });
    expect(parseAccept('application/vnd.pgrst.array+json; nulls = stripped')).toEqual({ media: 'json', stripNulls: true });
    expect(parseAccept('application/vnd.pgrst.array+json')).toEqual({ media: 'json', stripNulls: false });
    expect(parseAccept('application/json;nulls=stripped')).toEqual({ media: 'json', stripNulls: false });
    expect(parseRequest(raw('', { headers: { accept: 'application/vnd.pgrst.array+json;nulls=stripped' } }))).toMatchObject({ accept: 'json', stripNulls: true });
  });

  it('ignores preferences it does not honour unless Prefer: handling=strict asks, which is 400 naming them (PostgREST PGRST122)', () => {
    const prefer = (value: string) => parseRequest(raw('', { headers: { prefer: value } })).prefer;
    expect(prefer('handling=lenient, foo, bar, tx=rollback, count=exact')).toMatchObject({ count: 'exact' });
    expect(prefer('handling=strict, count=exact, return=minimal, missing=null')).toMatchObject({ count: 'exact' });
    for (const [value, named] of [['handling=strict, foo, bar', 'foo, bar'], ['count=bogus,handling=strict', 'count=bogus'], ['handling=strict, tx=rollback', 'tx=rollback'], ['handling=strict, max-affected=many', 'max-affected=many'], ['handling=strict, timezone=Jupiter/Red_Spot', 'timezone=Jupiter/Red_Spot']]) {
      expect(() => prefer(value!), value).toThrow(expect.objectContaining({ status: 400, message: 'Invalid preferences given with handling=strict', details: `Invalid preferences: ${named}` }));
    }
  });

  it('takes a timezone PostgreSQL lists, and max-affected only under handling=strict', () => {
    const zones = new Set(['America/Los_Angeles', 'UTC']);
    const prefer = (value: string) => parseRequest({ ...raw('', { headers: { prefer: value } }), timeZones: zones }).prefer;
    expect(prefer('timezone=America/Los_Angeles')).toMatchObject({ timezone: 'America/Los_Angeles' });
    expect(prefer('timezone=america/los_angeles').timezone).toBeUndefined();
    expect(prefer('max-affected=5').maxAffected).toBeUndefined();
    expect(prefer('handling=strict, max-affected=5')).toMatchObject({ handling: 'strict', maxAffected: 5 });
  });

  it('maps methods to actions and refuses bodies that are not JSON objects', () => {
    expect(parseRequest(raw('id=eq.1', { method: 'DELETE' })).action).toBe('delete');
    expect(parseRequest(raw('id=eq.1', { method: 'PATCH', body: '{"a":1}' })).action).toBe('update');
    expect(() => parseRequest(raw('', { method: 'PATCH', body: '[1]' }))).toThrow(/JSON object/);
    expect(() => parseRequest(raw('', { method: 'POST', body: '{' }))).toThrow(/not valid JSON/);
    expect(() => parseRequest(raw('', { method: 'POST' }))).toThrow(/required/);
    expect(() => parseRequest(raw('', { method: 'TRACE' }))).toThrow(/not allowed/);
    expect(parseRequest(raw('id=eq.1', { method: 'PUT', body: '{"id":1}' })).action).toBe('upsert');
  });

  it('refuses writes to the root, which names no table (405, as PostgREST)', () => {
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
      expect(() => parseRequest(raw('', { method, target: '', body: '{"id":1}' })), method).toThrow(expect.objectContaining({ status: 405, code: 'method_not_allowed' }));
    }
  });

  it('picks the schema as PostgREST does: Accept-Profile on a read, Content-Profile on a write, else the first exposed; one not exposed is 406', () => {
    const exposed = ['public', 'api'];
    expect(profileOf('GET', {}, exposed)).toBe('public');
    expect(profileOf('GET', {}, ['api', 'public'])).toBe('api');
    expect(profileOf('GET', { 'accept-profile': 'api' }, exposed)).toBe('api');
    expect(profileOf('HEAD', { 'accept-profile': ' api ' }, exposed)).toBe('api');
    // Each method reads its own header only.
    expect(profileOf('GET', { 'content-profile': 'api' }, exposed)).toBe('public');
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
      expect(profileOf(method, { 'content-profile': 'api' }, exposed), method).toBe('api');
      expect(profileOf(method, { 'accept-profile': 'api' }, exposed), method).toBe('public');
    }
    for (const asked of ['auth', 'storage', 'API', 'pg_catalog', 'public,api']) {
      expect(() => profileOf('GET', { 'accept-profile': asked }, exposed), asked).toThrow(expect.objectContaining({ status: 406, code: 'invalid_schema', message: 'the schema must be one of the following: public, api' }));
    }
    expect(() => profileOf('POST', { 'content-profile': 'storage' }, ['public'])).toThrow(expect.objectContaining({ status: 406, code: 'invalid_schema' }));
  });

  it('keeps the query parameters of a GET rpc for the planner to tell arguments from filters', () => {
    const request = parseRequest(raw('a=1&select=id&id=eq.2', { rpc: true, target: 'fn' }));
    expect(request.action).toBe('rpc');
    expect(request.rpcQuery).toEqual([['a', '1'], ['id', 'eq.2']]);
  });
});
