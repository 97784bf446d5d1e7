/**
 * Reading through `/rest/v1/:table` over plain HTTP: select with aliases,
 * casts and embedding both ways, every filter operator, logic trees, order,
 * paging and counts, single-object and CSV answers, the OpenAPI root.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { call, scenarios } from '../../deploy/test/http';
import { blogSchema, rangesTable, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
const get = (path: string, headers: Record<string, string> = {}) => call('GET', `/rest/v1/${path}`, { headers: { ...p.anon, ...headers } });
const ids = (rows: Array<{ id: number }>) => rows.map((r) => r.id);
/** Spaces and double quotes of a query value, percent-encoded. */
const quoted = (text: string) => text.replace(/ /g, '%20').replace(/"/g, '%22');

beforeAll(async () => {
  p = await restProject('rest read');
  await blogSchema(p);
});

describe('select', () => {
  it('answers every row with every column as a JSON array built by PostgreSQL, with Server-Timing', async () => {
    const answer = await get('posts?order=id');
    expect(answer.status, answer.text).toBe(200);
    expect(ids(answer.body)).toEqual([1, 2, 3, 4]);
    expect(answer.body[0]).toEqual({ id: 1, title: 'Hello world', author_id: 1, published: true, score: 10, tags: ['intro', 'hello'], meta: { lang: 'en' } });
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('content-range')).toBe('0-3/*');
    expect(answer.headers.get('server-timing')).toMatch(/parse;dur=[\d.]+.*plan;dur=.*sql;dur=.*execute;dur=.*respond;dur=/);
  });

  it('serves the /api/rest/v1 alias and the apikey as a query parameter', async () => {
    const answer = await call('GET', `/api/rest/v1/authors?select=name&order=id&apikey=${encodeURIComponent(p.project.anonKey)}`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ name: 'Ada' }, { name: 'Bob' }, { name: 'Cy' }]);
  });

  it('renames with alias:column and casts with ::type', async () => {
    const answer = await get('posts?select=key:id,headline:title,score::text&id=eq.1');
    expect(answer.body).toEqual([{ key: 1, headline: 'Hello world', score: '10' }]);
  });

  it('casts with SQL’s own type names, unquoted as PostgREST writes them: int, integer, bigint, boolean, double precision, numeric(p,s), arrays', async () => {
    const select = ['a:score::int', 'b:score::integer', 'c:score::bigint', 'd:published::boolean', 'e:score::double precision', 'f:score::numeric(6,2)', 'g:tags::varchar(3)[]', 'h:score::INT8'];
    const answer = await get(`posts?select=${select.join(',').replace(/ /g, '%20')}&id=eq.1`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ a: 10, b: 10, c: 10, d: true, e: 10, f: 10, g: ['int', 'hel'], h: 10 }]);
    expect(answer.text).toContain('"f":10.00');
  });

  it('embeds many-to-one as an object and one-to-many as an array', async () => {
    const answer = await get('posts?select=id,author:authors(name),comments(id,body)&order=id&limit=2');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([
      { id: 1, author: { name: 'Ada' }, comments: [{ id: 1, body: 'first!' }, { id: 2, body: 'nice' }] },
      { id: 2, author: { name: 'Ada' }, comments: [] },
    ]);
    const reverse = await get('authors?select=name,posts(title,comments(body))&id=eq.2');
    expect(reverse.body).toEqual([{ name: 'Bob', posts: [{ title: 'Bob writes', comments: [{ body: 'ok' }] }] }]);
    const orphan = await get('posts?select=id,authors(*)&id=eq.4');
    expect(orphan.body).toEqual([{ id: 4, authors: null }]);
  });

  it('embeds a one-to-one (a foreign key that is also the primary key or unique) as an object or null both ways, as PostgREST 10+', async () => {
    await sql(p, `
      create table profiles (author_id bigint primary key references authors (id), bio text);
      create table badges (id int primary key, holder_id bigint unique references authors (id), label text);
      create table shifts (id int primary key, author_id bigint references authors (id), day int, unique (author_id, day));
      create policy "read" on profiles for select using (true);
      create policy "read" on badges for select using (true);
      create policy "read" on shifts for select using (true);
      insert into profiles values (1, 'likes maths');
      insert into badges values (1, 2, 'gold');
      insert into shifts values (1, 1, 1), (2, 1, 2);
    `);
    const profiles = await get('authors?select=name,profiles(bio)&order=id');
    expect(profiles.status, profiles.text).toBe(200);
    expect(profiles.body).toEqual([{ name: 'Ada', profiles: { bio: 'likes maths' } }, { name: 'Bob', profiles: null }, { name: 'Cy', profiles: null }]);
    const badges = await get('authors?select=name,badge:badges(label)&order=id');
    expect(badges.body).toEqual([{ name: 'Ada', badge: null }, { name: 'Bob', badge: { label: 'gold' } }, { name: 'Cy', badge: null }]);
    expect((await get('profiles?select=bio,authors(name)')).body).toEqual([{ bio: 'likes maths', authors: { name: 'Ada' } }]);
    expect((await get('authors?select=name,...badges(label)&id=eq.2')).body).toEqual([{ name: 'Bob', label: 'gold' }]);
    expect((await get('authors?select=name,profiles!inner(bio)')).body).toEqual([{ name: 'Ada', profiles: { bio: 'likes maths' } }]);
    // Unique only together with another column: still one-to-many.
    expect((await get('authors?select=name,shifts(day)&id=eq.1&shifts.order=day')).body).toEqual([{ name: 'Ada', shifts: [{ day: 1 }, { day: 2 }] }]);
  });

  it('filters, orders and limits inside an embedding, and !inner keeps only parents with a match', async () => {
    const answer = await get('authors?select=name,posts(id,title)&posts.published=is.true&posts.order=id.desc&posts.limit=1&order=id');
    expect(answer.body).toEqual([{ name: 'Ada', posts: [{ id: 1, title: 'Hello world' }] }, { name: 'Bob', posts: [{ id: 3, title: 'Bob writes' }] }, { name: 'Cy', posts: [] }]);
    const inner = await get('authors?select=name,posts!inner(id)&posts.score=gte.10');
    expect(inner.body).toEqual([{ name: 'Ada', posts: [{ id: 1 }] }]);
  });

  it('keeps only the embedded rows that have a match of their own !inner embedding, as PostgREST’s inner join at that level', async () => {
    const answer = await get('authors?select=name,posts(id,comments!inner(body))&order=id&posts.order=id&posts.comments.order=id');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([
      { name: 'Ada', posts: [{ id: 1, comments: [{ body: 'first!' }, { body: 'nice' }] }] },
      { name: 'Bob', posts: [{ id: 3, comments: [{ body: 'ok' }] }] },
      { name: 'Cy', posts: [] },
    ]);
    const toOne = await get('comments?select=id,posts(id,authors!inner(name))&posts.authors.name=eq.Bob&order=id');
    expect(toOne.body).toEqual([{ id: 1, posts: null }, { id: 2, posts: null }, { id: 3, posts: { id: 3, authors: { name: 'Bob' } } }]);
  });

  it('uses an empty embedding for filtering only and leaves it out of the answer, in JSON and CSV, as PostgREST 11+', async () => {
    const answer = await get('posts?select=id,authors!inner()&authors.name=eq.Ada&order=id');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 1 }, { id: 2 }]);
    const nested = await get('comments?select=body,posts!inner(authors!inner())&posts.authors.name=eq.Bob');
    expect(nested.body).toEqual([{ body: 'ok', posts: {} }]);
    // Without !inner it neither filters nor shows.
    expect((await get('posts?select=id,authors()&order=id')).body).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
    expect((await get('authors?select=posts!inner()&posts.id=eq.3')).body).toEqual([{}]);
    const csv = await get('posts?select=id,authors!inner()&authors.name=eq.Bob', { accept: 'text/csv' });
    expect(csv.text).toBe('"id"\n"3"');
  });

  it('reads, filters and orders by JSON paths', async () => {
    const answer = await get('posts?select=id,meta->>lang,raw:meta->lang&meta->>lang=in.(en,fr)&order=meta->>lang.desc');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 3, lang: 'fr', raw: 'fr' }, { id: 1, lang: 'en', raw: 'en' }]);
    // On a scalar column the path reads null, as PostgREST's to_jsonb(title)->>'x' does.
    const scalar = await get('posts?select=id&title->>x=eq.1');
    expect(scalar.status, scalar.text).toBe(200);
    expect(scalar.body).toEqual([]);
  });

  it('reads, filters and orders by -> and ->> on array and composite columns through to_jsonb, as PostgREST: 0-based indexes, attributes by name, keys named after the last key', async () => {
    await sql(p, `
      create type geo as (lat numeric, lng numeric, label text);
      create domain tag_list as text[];
      create table places (id int primary key, location geo, tags tag_list, stops geo[], grid int[], doc json);
      create policy "read" on places for select using (true);
      insert into places values
        (1, row(18.52, 73.85, 'city'), '{west,big}', array[row(1, 2, 'a')::geo, row(3, 4, 'b')::geo], '{{1,2},{3,4}}', '{"k": [10,  20]}'),
        (2, row(19.07, 72.87, 'coast'), '{west}', array[row(5, 6, 'c')::geo], '{{5,6},{7,8}}', '{"k": [30]}'),
        (3, null, null, null, null, null);
      create function places_at() returns table (id int, val geo) language sql stable as $$ select id, location from places order by id $$;
    `);
    await expect.poll(async () => (await get('places?select=id')).status, { timeout: 1000, interval: 20 }).toBe(200);
    const selected = await get('places?select=id,location->>lat,lng:location->lng,first:tags->0,second:tags->>1,stops->1->>label,grid->1->0,doc->k&order=id');
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body).toEqual([
      { id: 1, lat: '18.52', lng: 73.85, first: 'west', second: 'big', label: 'b', grid: 3, k: [10, 20] },
      { id: 2, lat: '19.07', lng: 72.87, first: 'west', second: null, label: null, grid: 7, k: [30] },
      { id: 3, lat: null, lng: null, first: null, second: null, label: null, grid: null, k: null },
    ]);
    // A json column's path stays json: its text as stored, not jsonb's.
    expect(selected.text).toContain('[10,  20]');
    const places = async (query: string) => {
      const answer = await get(`places?select=id&${query}`);
      expect(answer.status, `${query}: ${answer.text}`).toBe(200);
      return ids(answer.body);
    };
    expect(await places('location->>lat=gte.19')).toEqual([2]);
    expect(await places('location->lat=lt.19')).toEqual([1]);
    expect(await places('tags->>1=eq.big')).toEqual([1]);
    expect(await places('stops->0->>label=in.(a,c)&order=id')).toEqual([1, 2]);
    expect(await places('or=(location->>label.eq.coast,tags->>1.eq.big)&order=id')).toEqual([1, 2]);
    expect(await places('order=location->lat.desc.nullslast')).toEqual([2, 1, 3]);
    expect(await places('order=tags->>1.asc.nullsfirst,id')).toEqual([2, 3, 1]);
    const csv = await get('places?select=location->>label&id=eq.1', { accept: 'text/csv' });
    expect(csv.text).toBe('"label"\n"city"');
    // A function's rows too, as PostgREST's returns_complex.
    const rpc = await get('rpc/places_at?select=val->>label&val->lat=gt.18.6');
    expect(rpc.status, rpc.text).toBe(200);
    expect(rpc.body).toEqual([{ label: 'coast' }]);
  });

  it('embeds many-to-many through a junction table', async () => {
    await sql(p, `
      create table tags (id int primary key, label text not null);
      create table post_tags (post_id bigint references posts (id), tag_id int references tags (id), primary key (post_id, tag_id));
      create policy "read" on tags for select using (true);
      create policy "read" on post_tags for select using (true);
      insert into tags values (1, 'news'), (2, 'tech'), (3, 'unused');
      insert into post_tags values (1, 1), (1, 2), (3, 2);
    `);
    const answer = await get('posts?select=id,tags(label)&order=id&tags.order=label.desc&id=lte.3');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 1, tags: [{ label: 'tech' }, { label: 'news' }] }, { id: 2, tags: [] }, { id: 3, tags: [{ label: 'tech' }] }]);
    const back = await get('tags?select=label,posts!inner(id)&posts.id=eq.3');
    expect(back.body).toEqual([{ label: 'tech', posts: [{ id: 3 }] }]);
  });

  it('spreads a to-one embedding’s columns into the row, in JSON and CSV', async () => {
    const answer = await get('posts?select=id,...authors(author:name,email)&id=in.(1,4)&order=id');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 1, author: 'Ada', email: 'ada@example.com' }, { id: 4, author: null, email: null }]);
    const csv = await get('posts?select=id,...authors(name)&id=eq.3', { accept: 'text/csv' });
    expect(csv.text).toBe('"id","name"\n"3","Bob"');
  });

  it('spreads a to-many embedding’s columns into the row as arrays, in the embedding’s order and page, empty when none (PostgREST 13)', async () => {
    const answer = await get('authors?select=name,...posts(post_id:id,title)&id=in.(1,2,3)&order=id&posts.order=id.desc');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([
      { name: 'Ada', post_id: [2, 1], title: ['Second post', 'Hello world'] },
      { name: 'Bob', post_id: [3], title: ['Bob writes'] },
      { name: 'Cy', post_id: [], title: [] },
    ]);
    const paged = await get('authors?select=name,...posts(id)&id=eq.1&posts.order=id&posts.limit=1');
    expect(paged.body).toEqual([{ name: 'Ada', id: [1] }]);
    const filtered = await get('authors?select=name,...posts!inner(id)&posts.id=eq.3');
    expect(filtered.body).toEqual([{ name: 'Bob', id: [3] }]);
  });

  it('embeds tables whose names need quoting, both directions, as "name"(…)', async () => {
    await sql(p, `
      create table "Odd Parent" ("Id" int primary key, "first name" text);
      create table "odd child" (id int primary key, "Parent Id" int references "Odd Parent" ("Id"), note text);
      create policy "read" on "Odd Parent" for select using (true);
      create policy "read" on "odd child" for select using (true);
      insert into "Odd Parent" values (1, 'Zoë'), (2, 'Al');
      insert into "odd child" values (10, 1, 'n1'), (11, 1, 'n2'), (12, 2, 'n3');
    `);
    const down = await get(`Odd%20Parent?select=${quoted('Id,"odd child"(note)')}&order=Id`);
    expect(down.status, down.text).toBe(200);
    expect(down.body).toEqual([{ Id: 1, 'odd child': [{ note: 'n1' }, { note: 'n2' }] }, { Id: 2, 'odd child': [{ note: 'n3' }] }]);
    const up = await get(`odd%20child?select=${quoted('id,parent:"Odd Parent"!"odd child_Parent Id_fkey"("first name")')}&id=eq.12`);
    expect(up.status, up.text).toBe(200);
    expect(up.body).toEqual([{ id: 12, parent: { 'first name': 'Al' } }]);
  });

  it('embeds a self-referencing table as PostgREST does: its name is the one-to-many, its key’s column the many-to-one', async () => {
    await sql(p, `
      create table emp (id int primary key, name text, manager_id int references emp (id), mentor_id int);
      create policy "read" on emp for select using (true);
      insert into emp values (1, 'boss', null, null), (2, 'worker', 1, null), (3, 'intern', 2, 1);
    `);
    const reports = await get('emp?select=id,reports:emp(name)&id=eq.1');
    expect(reports.status, reports.text).toBe(200);
    expect(reports.body).toEqual([{ id: 1, reports: [{ name: 'worker' }] }]);
    const hinted = await get('emp?select=id,reports:emp!manager_id(name)&id=eq.1');
    expect(hinted.status, hinted.text).toBe(200);
    expect(hinted.body).toEqual([{ id: 1, reports: [{ name: 'worker' }] }]);
    const manager = await get('emp?select=name,manager:manager_id(name)&order=id');
    expect(manager.status, manager.text).toBe(200);
    expect(manager.body).toEqual([{ name: 'boss', manager: null }, { name: 'worker', manager: { name: 'boss' } }, { name: 'intern', manager: { name: 'worker' } }]);
    // A second key to itself makes the table's name ambiguous; the key's column or name picks one.
    await sql(p, 'alter table emp add constraint emp_mentor_fkey foreign key (mentor_id) references emp (id)');
    await expect.poll(async () => (await get('emp?select=id,emp(name)&id=eq.1')).status, { timeout: 1000, interval: 20 }).toBe(300);
    for (const hint of ['mentor_id', 'emp_mentor_fkey']) {
      await expect.poll(async () => (await get(`emp?select=id,mentees:emp!${hint}(name)&id=eq.1`)).body, { timeout: 1000, interval: 20 }).toEqual([{ id: 1, mentees: [{ name: 'intern' }] }]);
    }
  });

  it('names the foreign key with !hint', async () => {
    const answer = await get('posts?select=id,writer:authors!posts_author_id_fkey(name)&id=eq.3');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 3, writer: { name: 'Bob' } }]);
  });
});

describe('filters', () => {
  const cases: Array<[string, number[]]> = [
    ['id=eq.2', [2]],
    ['id=neq.2', [1, 3, 4]],
    ['score=gt.5', [1, 4]],
    ['score=gte.5', [1, 3, 4]],
    ['score=lt.7', [3]],
    ['score=lte.7', [3, 4]],
    ['title=like.*post*', [2]],
    ['title=ilike.hello*', [1]],
    ['title=match.^B', [3]],
    ['title=imatch.^b', [3]],
    ['score=is.null', [2]],
    ['score=not.is.null', [1, 3, 4]],
    ['published=is.true', [1, 3, 4]],
    ['published=is.false', [2]],
    ['id=in.(1,3,99)', [1, 3]],
    ['title=in.("Orphan, with comma","Bob writes")', [3, 4]],
    ['id=not.in.(1,2)', [3, 4]],
    ['tags=cs.{hello}', [1, 3]],
    ['tags=cd.{hello,intro,misc}', [1, 2, 3, 4]],
    ['tags=ov.{misc,intro}', [1, 2]],
    ['tags=ov.(misc,intro)', [1, 2]],
    ['meta=cs.{"lang":"fr"}', [3]],
    ['title=fts.world', [1]],
    ['title=plfts(english).bob writes', [3]],
    ['score=isdistinct.10', [2, 3, 4]],
    ['title=like(any).{Hello*,Bob*}', [1, 3]],
    ['title=ilike(all).{*o*,*w*}', [1, 3, 4]],
    ['id=gt(all).{1,2}', [3, 4]],
    ['id=eq(any).{2,4}', [2, 4]],
    ['or=(id.eq.1,score.lt.6)', [1, 3]],
    ['or=(id.eq.4,and(published.is.true,score.gte.10))', [1, 4]],
    ['not.or=(id.eq.1,id.eq.2)', [3, 4]],
    ['and=(published.is.true,or(score.lt.6,score.gt.9))', [1, 3]],
    ['id=gt.1&score=not.is.null', [3, 4]],
  ];
  for (const [query, expected] of cases) {
    it(`?${query}`, async () => {
      const answer = await get(`posts?select=id&order=id&${query.replace(/ /g, '%20').replace(/"/g, '%22')}`);
      expect(answer.status, answer.text).toBe(200);
      expect(ids(answer.body)).toEqual(expected);
    });
  }

  it('passes ov.(a,b) on a range column through as the range literal it is, as PostgREST (the list form is an array’s only)', async () => {
    await rangesTable(p, 'bookings');
    await expect.poll(async () => (await get('bookings?select=id&order=id&during=ov.(1,5)')).body, { timeout: 1000, interval: 20 }).toEqual([{ id: 1 }]);
    expect(ids((await get('bookings?select=id&order=id&during=ov.[5,10]')).body)).toEqual([2, 3]);
    expect(ids((await get('bookings?select=id&order=id&during=not.ov.(0,100)')).body)).toEqual([]);
  });

  it('reads double-quoted names in filter keys, or=/and= trees, order=, select= and JSON paths, for names holding . , spaces or ->, as PostgREST’s pFieldName', async () => {
    await sql(p, `
      create table "dotted.things" (id int primary key, "a.b" int, "c,d" text, "e f" text, "g->h" int, "limit" int, doc jsonb);
      create table "dotted.parts" (id int primary key, "thing.id" int references "dotted.things" (id), "x.y" text);
      create policy "read" on "dotted.things" for select using (true);
      create policy "read" on "dotted.parts" for select using (true);
      insert into "dotted.things" values (1, 10, 'one', 'x', 5, 7, '{"k l": "v", "m.n": 1}'), (2, 20, 'two', 'y', 6, 8, '{"k l": "w"}');
      insert into "dotted.parts" values (1, 1, 'p'), (2, 2, 'q'), (3, 2, 'r');
    `);
    const things = async (query: string) => {
      const answer = await get(`dotted.things?select=id&order=id&${quoted(query)}`);
      expect(answer.status, `${query}: ${answer.text}`).toBe(200);
      return ids(answer.body);
    };
    await expect.poll(async () => (await get('dotted.things?select=id')).status, { timeout: 1000, interval: 20 }).toBe(200);
    expect(await things('"a.b"=eq.10')).toEqual([1]);
    expect(await things('"c,d"=eq.two')).toEqual([2]);
    expect(await things('"e f"=in.(x,y)')).toEqual([1, 2]);
    expect(await things('"g->h"=gt.5')).toEqual([2]);
    expect(await things('"limit"=eq.8')).toEqual([2]);
    expect(await things('"id"=eq.1')).toEqual([1]);
    expect(await things('doc->>"k l"=eq.w')).toEqual([2]);
    expect(await things('doc->"m.n"=eq.1')).toEqual([1]);
    expect(await things('or=("a.b".eq.10,"c,d".eq.two)')).toEqual([1, 2]);
    expect(await things('and=("a.b".gt.5,or("e f".eq.y,"id".eq.9))')).toEqual([2]);
    expect(await things('not.or=("a.b".eq.10)')).toEqual([2]);
    expect(ids((await get(`dotted.things?select=id&order=${quoted('"a.b".desc')}`)).body)).toEqual([2, 1]);
    const selected = await get(`dotted.things?select=${quoted('"a.b","c,d",x:"e f",doc->>"k l"')}&id=eq.1`);
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body).toEqual([{ 'a.b': 10, 'c,d': 'one', x: 'x', 'k l': 'v' }]);
    const embedded = await get(`dotted.things?select=${quoted('id,"dotted.parts"("x.y")')}&${quoted('"dotted.parts"."x.y"=neq.q&"dotted.parts".order="x.y".desc')}&order=id`);
    expect(embedded.status, embedded.text).toBe(200);
    expect(embedded.body).toEqual([{ id: 1, 'dotted.parts': [{ 'x.y': 'p' }] }, { id: 2, 'dotted.parts': [{ 'x.y': 'r' }] }]);
    // Unquoted, the dot still separates an embedding from its column.
    expect((await get('dotted.things?a.b=eq.10')).status).toBe(400);
  });

  it('compares ranges with sl, sr, nxl, nxr and adj (<<, >>, &<, &>, -|-), negated and inside or=, the value read as the column’s type', async () => {
    await sql(p, `
      create table stays (id int primary key, during int4range, days daterange);
      create policy "read" on stays for select using (true);
      insert into stays values (1, '[1,3)', '[2024-01-01,2024-01-03)'), (2, '[5,9)', '[2024-01-05,2024-01-09)'), (3, '[10,12)', null);
    `);
    const stays = async (query: string) => {
      const answer = await get(`stays?select=id&order=id&${query}`);
      expect(answer.status, answer.text).toBe(200);
      return ids(answer.body);
    };
    await expect.poll(async () => (await get('stays?select=id&during=sl.[5,6)')).status, { timeout: 1000, interval: 20 }).toBe(200);
    expect(await stays('during=sl.[5,6)')).toEqual([1]);
    expect(await stays('during=sr.[5,6)')).toEqual([3]);
    expect(await stays('during=nxl.[0,9)')).toEqual([1, 2]);
    expect(await stays('during=nxr.[5,6)')).toEqual([2, 3]);
    expect(await stays('during=adj.[3,5)')).toEqual([1, 2]);
    expect(await stays('during=not.adj.[3,5)')).toEqual([3]);
    expect(await stays('or=(during.sl.[5,6),during.sr.[5,6))')).toEqual([1, 3]);
    expect(await stays('days=sr.[2024-01-04,2024-01-05)')).toEqual([2]);
    const notARange = await get('stays?select=id&during=sl.5');
    expect(notARange.status).toBe(400);
    expect(notARange.body.code).toBe('22P02');
  });
});

describe('order, paging, counts', () => {
  it('orders by several columns with nulls placement', async () => {
    expect(ids((await get('posts?select=id&order=score.desc.nullslast')).body)).toEqual([1, 4, 3, 2]);
    expect(ids((await get('posts?select=id&order=score.asc.nullsfirst')).body)).toEqual([2, 3, 4, 1]);
    expect(ids((await get('posts?select=id&order=published.desc,author_id.asc.nullsfirst,id.desc')).body)).toEqual([4, 1, 3, 2]);
  });

  it('pages with limit/offset and with Range, and counts with Content-Range', async () => {
    const page = await get('posts?select=id&order=id&limit=2&offset=1');
    expect(ids(page.body)).toEqual([2, 3]);
    expect(page.headers.get('content-range')).toBe('1-2/*');
    const counted = await get('posts?select=id&order=id&limit=2', { prefer: 'count=exact' });
    expect(counted.status).toBe(206);
    expect(counted.headers.get('content-range')).toBe('0-1/4');
    const ranged = await get('posts?select=id&order=id', { range: '2-3', 'range-unit': 'items', prefer: 'count=exact' });
    expect(ids(ranged.body)).toEqual([3, 4]);
    expect(ranged.headers.get('content-range')).toBe('2-3/4');
    // planned answers the planner's estimate, a number not necessarily the exact one; estimated is exact below the row cap (rest-limits).
    for (const count of ['planned', 'estimated']) {
      const planned = await get('posts?select=id&published=is.true', { prefer: `count=${count}` });
      expect(planned.status, planned.text).toBeLessThan(300);
      expect(planned.headers.get('content-range')).toMatch(/^0-2\/\d+$/);
      expect(planned.headers.get('preference-applied')).toBe(`count=${count}`);
    }
    // A Range header that does not read as one is ignored, as PostgREST; one ending before it starts is 416 (PGRST103).
    const unreadable = await get('posts?select=id&order=id', { range: 'abc' });
    expect(unreadable.status, unreadable.text).toBe(200);
    expect(ids(unreadable.body)).toEqual([1, 2, 3, 4]);
    const backwards = await get('posts?select=id', { range: '3-1' });
    expect(backwards.status).toBe(416);
    expect(backwards.body.code).toBe('range_not_satisfiable');
    const past = await get('posts?offset=10', { prefer: 'count=exact' });
    expect(past.status).toBe(416);
    expect(past.body.code).toBe('range_not_satisfiable');
    const none = await get('posts?id=eq.999', { prefer: 'count=exact' });
    expect(none.body).toEqual([]);
    expect(none.headers.get('content-range')).toBe('*/0');
  });

  it('answers HEAD with the headers alone, ignoring a Range header as PostgREST does on anything but GET', async () => {
    const answer = await call('HEAD', '/rest/v1/posts', { headers: { ...p.anon, prefer: 'count=exact' } });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('');
    expect(answer.headers.get('content-range')).toBe('0-3/4');
    const ranged = await call('HEAD', '/rest/v1/posts', { headers: { ...p.anon, prefer: 'count=exact', range: '0-0' } });
    expect(ranged.status).toBe(200);
    expect(ranged.headers.get('content-range')).toBe('0-3/4');
  });
});

describe('an embedding’s count (PostgREST’s rel(count))', () => {
  it('counts each row’s embedded rows, under the embedding’s filters, beside the same embedding’s rows', async () => {
    const counted = await get('authors?select=name,posts(count)&order=id');
    expect(counted.status, counted.text).toBe(200);
    expect(counted.body).toEqual([
      { name: 'Ada', posts: [{ count: 2 }] },
      { name: 'Bob', posts: [{ count: 1 }] },
      { name: 'Cy', posts: [{ count: 0 }] },
    ]);
    const filtered = await get('authors?select=name,titles:posts(title),published:posts(n:count)&published.published=is.true&published.order=id.desc&order=id&limit=2');
    expect(filtered.body).toEqual([
      { name: 'Ada', titles: [{ title: 'Hello world' }, { title: 'Second post' }], published: [{ n: 1 }] },
      { name: 'Bob', titles: [{ title: 'Bob writes' }], published: [{ n: 1 }] },
    ]);
    // Nested, and with !inner: only posts with comments, and how many each has.
    const nested = await get('authors?select=name,posts!inner(title,comments(count))&posts.comments=not.is.null&order=id');
    expect(nested.body).toEqual([
      { name: 'Ada', posts: [{ title: 'Hello world', comments: [{ count: 2 }] }] },
      { name: 'Bob', posts: [{ title: 'Bob writes', comments: [{ count: 1 }] }] },
    ]);
  });

  it('reads count as a column where the relation has one, and anywhere but alone in an embedding', async () => {
    expect((await get('authors?select=name,posts(id,count)')).body.code).toBe('unknown_column');
    expect((await get('authors?select=count')).body.code).toBe('unknown_column');
  });
});

describe('ordering by and filtering on embeddings (PostgREST 11+)', () => {
  it('orders by a column of a to-one embedding, by its name or alias, nulls placed, with the embedding’s filters, a JSON path, and counts', async () => {
    const byName = await get('posts?select=id,authors(name)&order=authors(name).desc.nullslast,id');
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body).toEqual([
      { id: 3, authors: { name: 'Bob' } },
      { id: 1, authors: { name: 'Ada' } },
      { id: 2, authors: { name: 'Ada' } },
      { id: 4, authors: null },
    ]);
    expect(ids((await get('posts?select=id,authors(name)&order=authors(name).nullsfirst,id')).body)).toEqual([4, 1, 2, 3]);
    // By the alias select= gives it; a column it does not select, of an embedding that selects none.
    expect(ids((await get('posts?select=id,writer:authors(name)&order=writer(name).desc,id')).body)).toEqual([4, 3, 1, 2]);
    expect((await get('posts?select=id,authors()&order=authors(email).desc.nullslast,id')).body).toEqual([{ id: 3 }, { id: 1 }, { id: 2 }, { id: 4 }]);
    // The embedding's filters make it null where the answer shows null, and order it so.
    const filtered = await get('posts?select=id,authors(name)&authors.name=eq.Ada&order=authors(name).nullsfirst,id');
    expect(filtered.body).toEqual([{ id: 3, authors: null }, { id: 4, authors: null }, { id: 1, authors: { name: 'Ada' } }, { id: 2, authors: { name: 'Ada' } }]);
    const json = await get('comments?select=id,posts(title)&order=posts(meta->>lang).desc.nullslast,id');
    expect(ids(json.body)).toEqual([3, 1, 2]);
    const counted = await get('posts?select=id,authors(name)&order=authors(name).desc.nullslast&limit=2', { prefer: 'count=exact' });
    expect(counted.status, counted.text).toBe(206);
    expect(ids(counted.body)).toEqual([3, 1]);
    expect(counted.headers.get('content-range')).toBe('0-1/4');
  });

  it('orders an embedding’s rows by a column of their own to-one embedding', async () => {
    await sql(p, `
      create table reviews (id int primary key, post_id bigint references posts (id), reviewer_id bigint references authors (id), stars int);
      create policy "read" on reviews for select using (true);
      insert into reviews values (1, 1, 1, 3), (2, 1, 3, 5), (3, 1, 2, 4), (4, 3, null, 1);
    `);
    const answer = await get('posts?select=id,reviews(stars,reviewer:authors(name))&id=in.(1,3)&order=id&reviews.order=reviewer(name).desc.nullsfirst');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([
      { id: 1, reviews: [{ stars: 5, reviewer: { name: 'Cy' } }, { stars: 4, reviewer: { name: 'Bob' } }, { stars: 3, reviewer: { name: 'Ada' } }] },
      { id: 3, reviews: [{ stars: 1, reviewer: null }] },
    ]);
  });

  it('keeps the rows whose embedding has a row with embedding=not.is.null, those with none with is.null, to-one and to-many, by alias, in or=, nested, counted', async () => {
    const present = await get('posts?select=id,authors(name)&authors=not.is.null&order=id');
    expect(present.status, present.text).toBe(200);
    expect(present.body).toEqual([{ id: 1, authors: { name: 'Ada' } }, { id: 2, authors: { name: 'Ada' } }, { id: 3, authors: { name: 'Bob' } }]);
    expect((await get('posts?select=id,authors(name)&authors=is.null')).body).toEqual([{ id: 4, authors: null }]);
    // After the embedding's own filters: not.is.null is !inner, is.null its opposite (an anti-join).
    const bob = await get('posts?select=id,authors(name)&authors.name=eq.Bob&authors=not.is.null');
    expect(bob.body).toEqual([{ id: 3, authors: { name: 'Bob' } }]);
    expect((await get('posts?select=id,authors!inner(name)&authors.name=eq.Bob')).body).toEqual(bob.body);
    expect((await get('posts?select=id,authors()&authors.name=eq.Bob&authors=is.null&order=id')).body).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }]);
    // !inner and is.null together leave nothing, as in PostgREST.
    expect((await get('posts?select=id,authors!inner(name)&authors=is.null')).body).toEqual([]);
    // To-many: at least one row, or none; by the alias select= gives it.
    expect((await get('authors?select=name,posts()&posts=not.is.null&order=id')).body).toEqual([{ name: 'Ada' }, { name: 'Bob' }]);
    expect((await get('authors?select=name,writes:posts(id)&writes=is.null')).body).toEqual([{ name: 'Cy', writes: [] }]);
    // Across embeddings in or=, and one level down.
    expect(ids((await get('posts?select=id,authors(),comments()&authors.name=eq.Bob&or=(authors.not.is.null,comments.not.is.null)&order=id')).body)).toEqual([1, 3]);
    const nested = await get('authors?select=name,posts(id,comments())&posts.comments=not.is.null&posts=not.is.null&order=id');
    expect(nested.body).toEqual([{ name: 'Ada', posts: [{ id: 1 }] }, { name: 'Bob', posts: [{ id: 3 }] }]);
    const counted = await get('posts?select=id,authors()&authors=is.null', { prefer: 'count=exact' });
    expect(counted.headers.get('content-range')).toBe('0-0/1');
    const planned = await get('posts?select=id,authors()&authors=not.is.null', { prefer: 'count=planned' });
    expect(planned.status, planned.text).toBeLessThan(300);
    expect(ids(planned.body).sort()).toEqual([1, 2, 3]);
  });

  it('tests an embedding within its limit and offset for a null filter and !inner, as PostgREST’s lateral subquery, to-many and to-one; a to-one answers null past its page', async () => {
    // To-many: limit=0 leaves every embedding empty, and an offset past a parent's rows leaves its embedding empty.
    expect((await get('authors?select=name,posts(id)&posts=not.is.null&posts.limit=0')).body).toEqual([]);
    expect((await get('authors?select=name,posts(id)&posts=is.null&posts.limit=0&order=id')).body).toEqual([{ name: 'Ada', posts: [] }, { name: 'Bob', posts: [] }, { name: 'Cy', posts: [] }]);
    const second = await get('authors?select=name,posts(id)&posts=not.is.null&posts.order=id&posts.offset=1', { prefer: 'count=exact' });
    expect(second.status, second.text).toBe(200);
    expect(second.body).toEqual([{ name: 'Ada', posts: [{ id: 2 }] }]);
    expect(second.headers.get('content-range')).toBe('0-0/1');
    expect((await get('authors?select=name,posts!inner(id)&posts.order=id&posts.offset=1')).body).toEqual([{ name: 'Ada', posts: [{ id: 2 }] }]);
    expect((await get('authors?select=name,posts!inner(id)&posts.limit=0')).body).toEqual([]);
    // To-one: its one row, or none under limit=0 or an offset, answered null and tested so.
    expect((await get('posts?select=id,authors(name)&authors.limit=0&order=id')).body).toEqual([1, 2, 3, 4].map((id) => ({ id, authors: null })));
    expect((await get('posts?select=id,authors!inner(name)&authors.limit=0')).body).toEqual([]);
    expect(ids((await get('posts?select=id,authors(name)&authors=is.null&authors.offset=1&order=id')).body)).toEqual([1, 2, 3, 4]);
    expect((await get('posts?select=id,authors(name)&authors=not.is.null&authors.limit=1&order=id')).body).toEqual([{ id: 1, authors: { name: 'Ada' } }, { id: 2, authors: { name: 'Ada' } }, { id: 3, authors: { name: 'Bob' } }]);
  });
});

describe('media types', () => {
  it('answers one object for application/vnd.pgrst.object+json, else 406', async () => {
    const one = await get('posts?select=id,title&id=eq.1', { accept: 'application/vnd.pgrst.object+json' });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toEqual({ id: 1, title: 'Hello world' });
    const many = await get('posts?select=id', { accept: 'application/vnd.pgrst.object+json' });
    expect(many.status).toBe(406);
    expect(many.body.code).toBe('not_single_object');
    const none = await get('posts?id=eq.999', { accept: 'application/vnd.pgrst.object+json' });
    expect(none.status).toBe(406);
  });

  it('answers CSV for text/csv', async () => {
    const answer = await get('posts?select=id,title,score&order=id', { accept: 'text/csv' });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(answer.text).toBe('"id","title","score"\n"1","Hello world","10"\n"2","Second post",\n"3","Bob writes","5"\n"4","Orphan, with comma","7"');
  });

  it('refuses a media type it cannot produce with 406', async () => {
    expect((await get('posts', { accept: 'application/xml' })).status).toBe(406);
  });
});

describe('CORS', () => {
  it('answers a browser’s preflight and lets it read the paging headers', async () => {
    const preflight = await call('OPTIONS', '/rest/v1/posts', { headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'apikey, prefer' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PATCH');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('prefer');
    // An app's own headers, which policies read in request.headers, are allowed when asked for; a list that is none is not echoed.
    const own = await call('OPTIONS', '/rest/v1/posts', { headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'apikey, X-Tenant-Id' } });
    expect(own.headers.get('access-control-allow-headers')).toMatch(/, x-tenant-id$/);
    const odd = await call('OPTIONS', '/rest/v1/posts', { headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'a b, <c>' } });
    expect(odd.headers.get('access-control-allow-headers')).not.toContain('<c>');
    const read = await get('posts?limit=1', { origin: 'https://app.example.com' });
    expect(read.headers.get('access-control-allow-origin')).toBe('*');
    expect(read.headers.get('access-control-expose-headers')).toContain('content-range');
    expect((await call('GET', '/rest/v1/nope', { headers: p.anon })).headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('the OpenAPI root', () => {
  it('lists tables, their columns and the functions', async () => {
    const answer = await call('GET', '/rest/v1/', { headers: p.anon });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.paths)).toEqual(expect.arrayContaining(['/authors', '/posts', '/comments', '/rpc/add_numbers']));
    expect(answer.body.definitions.posts.properties.title).toMatchObject({ type: 'string', format: 'text' });
    expect(answer.body.definitions.posts.required).toEqual(['title']);
  });

  it('is a Swagger 2.0 document as PostgREST serves it: definitions, shared parameters, every $ref resolving, query parameters typed and bodies with a schema', async () => {
    const { body: doc } = await call('GET', '/rest/v1/', { headers: p.anon });
    expect(doc).toMatchObject({ swagger: '2.0', basePath: '/rest/v1', schemes: [expect.stringMatching(/^https?$/)], host: expect.any(String) });
    expect(doc).not.toHaveProperty('openapi');
    expect(doc).not.toHaveProperty('components');
    expect(doc.definitions.posts.properties).toMatchObject({ id: { type: 'integer', format: 'bigint', description: expect.stringContaining('Primary Key') }, tags: { type: 'array', format: 'text[]', items: { type: 'string' } }, meta: { format: 'jsonb' } });
    const refs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') for (const [key, value] of Object.entries(node)) key === '$ref' ? refs.push(value as string) : walk(value);
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(0);
    for (const target of refs) {
      const [, section, name] = /^#\/(definitions|parameters)\/(.+)$/.exec(target) ?? [];
      expect(doc[section!]?.[decodeURIComponent(name!).replace(/~1/g, '/').replace(/~0/g, '~')], target).toBeDefined();
    }
    for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        expect(Object.keys(operation.responses).length, `${method} ${path}`).toBeGreaterThan(0);
        for (const parameter of operation.parameters ?? []) {
          const resolved = parameter.$ref ? doc.parameters[decodeURIComponent(parameter.$ref.split('/').pop())] : parameter;
          if (resolved.in === 'body') expect(resolved.schema, `${method} ${path}`).toBeDefined();
          else expect(resolved, `${method} ${path}`).toMatchObject({ in: expect.stringMatching(/^(query|header|path)$/), type: expect.any(String) });
        }
      }
    }
    expect(doc.paths['/rpc/add_numbers'].post.parameters[0]).toMatchObject({ in: 'body', schema: { type: 'object', required: ['a'], properties: { a: { type: 'integer' }, b: { type: 'integer' } } } });
  });

  it('follows changes made through the SQL console within a second, on every replica', async () => {
    const definitionOnEachReplica = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const seen = [];
      for (let i = 0; i < 2; i++) seen.push((await call('GET', '/rest/v1/', { headers: p.anon })).body.definitions.api_doc);
      return seen;
    };
    await sql(p, 'create table api_doc (id int primary key, label varchar(20) not null)');
    for (const seen of await definitionOnEachReplica()) expect(seen).toMatchObject({ required: ['id', 'label'], properties: { label: { type: 'string', format: 'character varying(20)' } } });
    await sql(p, 'alter table api_doc add column note text, alter column label set default \'\'');
    for (const seen of await definitionOnEachReplica()) expect(seen).toMatchObject({ required: ['id'], properties: { note: { type: 'string', format: 'text' } } });
    await sql(p, 'drop table api_doc');
    for (const seen of await definitionOnEachReplica()) expect(seen).toBeUndefined();
  });
});

describe('refusals', () => {
  scenarios([
    { name: 'an unknown table is 404', method: 'GET', url: '/rest/v1/nope', headers: () => p.anon, expectedStatus: 404, expectedContent: ['42P01'] },
    { name: 'an unknown column in select is 400', method: 'GET', url: '/rest/v1/posts?select=nope', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'an unknown filter column is 400', method: 'GET', url: '/rest/v1/posts?nope=eq.1', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'an unknown order column is 400', method: 'GET', url: '/rest/v1/posts?order=nope.desc', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'an unknown operator is 400', method: 'GET', url: '/rest/v1/posts?id=foo.1', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter'] },
    { name: 'a filter without operator is 400', method: 'GET', url: '/rest/v1/posts?id=1', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter'] },
    { name: 'an unrelated embedding is 400', method: 'GET', url: '/rest/v1/authors?select=comments(*)', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_relation'] },
    { name: 'a related order on an embedding not in select is 400', method: 'GET', url: '/rest/v1/posts?select=id,writer:authors(name)&order=authors(name)', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter', 'not an embedded resource'] },
    { name: 'a related order on a to-many embedding is 400', method: 'GET', url: '/rest/v1/authors?select=name,posts(id)&order=posts(id)', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter', 'A related order on \\"posts\\" is not possible'] },
    { name: 'a related order on an unknown column of the embedding is 400', method: 'GET', url: '/rest/v1/posts?select=id,authors(name)&order=authors(nope)', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'a malformed related order is 400', method: 'GET', url: '/rest/v1/posts?select=id,authors(name)&order=authors(name', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter'] },
    { name: 'a null filter on an embedding not in select is 400', method: 'GET', url: '/rest/v1/posts?select=id&authors=not.is.null', headers: () => p.anon, expectedStatus: 400, expectedContent: ['unknown_column', 'select='] },
    { name: 'a cast to a type that does not exist is 400 42704', method: 'GET', url: '/rest/v1/posts?select=id::nosuchtype', headers: () => p.anon, expectedStatus: 400, expectedContent: ['42704'] },
    { name: 'a cast outside the type-name grammar is 400', method: 'GET', url: '/rest/v1/posts?select=id::int%20or%20true', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter'] },
    { name: 'a modifier on a type that takes none is 400', method: 'GET', url: '/rest/v1/posts?select=id::int(5)', headers: () => p.anon, expectedStatus: 400, expectedContent: ['invalid_filter'] },
    { name: 'a bad value for the column type is 400 22P02', method: 'GET', url: '/rest/v1/posts?id=eq.abc', headers: () => p.anon, expectedStatus: 400, expectedContent: ['22P02'], notExpectedContent: ['_t0', 'select'] },
    { name: 'a bad limit is 400', method: 'GET', url: '/rest/v1/posts?limit=-1', headers: () => p.anon, expectedStatus: 400 },
    { name: 'unbalanced logic is 400', method: 'GET', url: '/rest/v1/posts?or=(id.eq.1', headers: () => p.anon, expectedStatus: 400 },
    { name: 'no key is 401', method: 'GET', url: '/rest/v1/posts', expectedStatus: 401, expectedContent: ['missing_api_key'] },
  ]);
});

describe('one round trip per request', () => {
  it('runs a statement shape again on connections where it failed before, at bind or after', async () => {
    // More rounds than the pool has connections, so a connection meets the shape again after its failure.
    for (let round = 0; round < 15; round++) {
      const bad = await get(`posts?select=id,title&id=eq.x${round}`);
      expect(bad.status, bad.text).toBe(400);
      expect(bad.text).toContain('22P02');
      const good = await get('posts?select=id,title&id=eq.1');
      expect(good.status, good.text).toBe(200);
      expect(ids(good.body)).toEqual([1]);
    }
  });
});

describe('embedding views, computed fields and computed relationships (PostgREST)', () => {
  it('embeds from a view and into one through the keys of the tables it shows, views over views and many-to-many included', async () => {
    await sql(p, `
      create view published_posts as select id, title, author_id as writer from posts where published;
      create view bob_posts as select title as headline, writer from published_posts where writer = 2;
      create view authors_twice as select id, name, id as alias_id from authors;
      create table topics (id int primary key, name text not null);
      create table post_topics (post_id bigint references posts (id), topic_id int references topics (id), primary key (post_id, topic_id));
      create policy "read" on topics for select using (true);
      create policy "read" on post_topics for select using (true);
      insert into topics values (1, 'news'), (2, 'tech');
      insert into post_topics values (1, 1), (1, 2), (2, 2), (3, 2);
    `);
    const from = await get('published_posts?select=title,authors(name)&order=id');
    expect(from.status, from.text).toBe(200);
    expect(from.body).toEqual([{ title: 'Hello world', authors: { name: 'Ada' } }, { title: 'Bob writes', authors: { name: 'Bob' } }, { title: 'Orphan, with comma', authors: null }]);
    const into = await get('authors?select=name,published_posts(title)&order=id&published_posts.order=id');
    expect(into.body).toEqual([{ name: 'Ada', published_posts: [{ title: 'Hello world' }] }, { name: 'Bob', published_posts: [{ title: 'Bob writes' }] }, { name: 'Cy', published_posts: [] }]);
    // A view over a view, renamed, and the key's name or column as hint.
    expect((await get('bob_posts?select=headline,author:authors!writer(name)')).body).toEqual([{ headline: 'Bob writes', author: { name: 'Bob' } }]);
    expect((await get('authors?select=name,bob_posts!posts_author_id_fkey(headline)&id=eq.2')).body).toEqual([{ name: 'Bob', bob_posts: [{ headline: 'Bob writes' }] }]);
    // Both sides views; a view's key to a junction table makes a many-to-many; filters, !inner and related order as on tables.
    expect((await get('published_posts?select=title,authors_twice!id(name)&id=eq.3')).body).toEqual([{ title: 'Bob writes', authors_twice: { name: 'Bob' } }]);
    expect((await get('published_posts?select=id,topics(name)&order=id&topics.order=name&id=lte.3')).body).toEqual([{ id: 1, topics: [{ name: 'news' }, { name: 'tech' }] }, { id: 3, topics: [{ name: 'tech' }] }]);
    expect((await get('topics?select=name,published_posts(id)&published_posts.order=id&order=id')).body).toEqual([{ name: 'news', published_posts: [{ id: 1 }] }, { name: 'tech', published_posts: [{ id: 1 }, { id: 3 }] }]);
    expect((await get('published_posts?select=id,authors!inner(name)&authors.name=eq.Ada')).body).toEqual([{ id: 1, authors: { name: 'Ada' } }]);
    expect(ids((await get('published_posts?select=id,authors(name)&order=authors(name).desc.nullsfirst')).body)).toEqual([4, 3, 1]);
    // A view showing the referenced column twice: 300 naming both ways, and a hint on either column picks one.
    const ambiguous = await get('posts?select=id,authors_twice(name)');
    expect(ambiguous.status, ambiguous.text).toBe(300);
    expect(ambiguous.body).toMatchObject({ code: 'ambiguous_relation', details: [expect.stringContaining('authors_twice(id)'), expect.stringContaining('authors_twice(alias_id)')] });
    expect((await get('posts?select=id,authors_twice!alias_id(name)&id=eq.3')).body).toEqual([{ id: 3, authors_twice: { name: 'Bob' } }]);
    // No key links a view to the table it shows.
    const unrelated = await get('posts?select=id,published_posts(title)');
    expect(unrelated.status, unrelated.text).toBe(400);
    expect(unrelated.body.code).toBe('unknown_relation');
  });

  it('reads an embedded view’s rows as reading the view does: RLS applies to a security_invoker view as to its table', async () => {
    await sql(p, `
      create table diaries (id int primary key, author_id bigint references authors (id), body text);
      insert into diaries values (1, 1, 'dear diary'), (2, 2, 'private');
      create view diaries_invoker with (security_invoker = true) as select id, author_id, body from diaries;
    `);
    // The table has RLS on and no policy: anon reads nothing, through the view it invokes too; the service key reads all.
    const asAnon = await get('authors?select=name,diaries_invoker(body)&order=id');
    expect(asAnon.status, asAnon.text).toBe(200);
    expect(asAnon.body).toEqual([{ name: 'Ada', diaries_invoker: [] }, { name: 'Bob', diaries_invoker: [] }, { name: 'Cy', diaries_invoker: [] }]);
    expect((await get('diaries_invoker?select=body,authors(name)')).body).toEqual([]);
    const asService = await get('authors?select=name,diaries_invoker(body)&order=id&id=lte.2', p.service);
    expect(asService.body).toEqual([{ name: 'Ada', diaries_invoker: [{ body: 'dear diary' }] }, { name: 'Bob', diaries_invoker: [{ body: 'private' }] }]);
  });

  it('selects, filters and orders a computed field as a column, at any level, and embeds computed relationships', async () => {
    await sql(p, `
      create table people (id int primary key, first_name text, last_name text, author_id bigint references authors (id));
      create policy "read" on people for select using (true);
      insert into people values (1, 'Ada', 'Lovelace', 1), (2, 'Alan', 'Turing', 2), (3, 'Grace', 'Hopper', null);
      create function full_name(people) returns text language sql stable as $$ select $1.first_name || ' ' || $1.last_name $$;
      create function initials(p people) returns text language sql immutable as $$ select left(p.first_name, 1) || left(p.last_name, 1) $$;
      create function posts_of(people) returns setof posts language sql stable as $$ select * from posts where author_id = $1.author_id $$;
      create function writer(people) returns setof authors rows 1 language sql stable as $$ select * from authors where id = $1.author_id $$;
      create function shout(authors) returns text language sql immutable as $$ select upper($1.name) $$;
      create function tag(people, prefix text default '#') returns text language sql immutable as $$ select prefix || $1.id $$;
    `);
    const selected = await get('people?select=id,full_name,short:initials&order=id');
    expect(selected.status, selected.text).toBe(200);
    expect(selected.body).toEqual([{ id: 1, full_name: 'Ada Lovelace', short: 'AL' }, { id: 2, full_name: 'Alan Turing', short: 'AT' }, { id: 3, full_name: 'Grace Hopper', short: 'GH' }]);
    // Further arguments with defaults are left to them, as PostgreSQL's people.tag would.
    expect((await get('people?select=tag&id=eq.2')).body).toEqual([{ tag: '#2' }]);
    // Not part of *, as in PostgREST.
    expect(Object.keys((await get('people?id=eq.1')).body[0])).toEqual(['id', 'first_name', 'last_name', 'author_id']);
    expect(ids((await get(`people?select=id&full_name=eq.${quoted('Ada Lovelace')}`)).body)).toEqual([1]);
    expect(ids((await get('people?select=id&or=(full_name.ilike.*turing*,initials.eq.GH)&order=id')).body)).toEqual([2, 3]);
    expect((await get('people?select=full_name&order=full_name.desc')).body).toEqual([{ full_name: 'Grace Hopper' }, { full_name: 'Alan Turing' }, { full_name: 'Ada Lovelace' }]);
    expect((await get('people?select=full_name&initials=neq.AL', { accept: 'text/csv' })).text).toBe('"full_name"\n"Alan Turing"\n"Grace Hopper"');
    // In an embedding, filtered there, and a to-one embedding's computed field to order by.
    expect((await get('authors?select=name,people(full_name)&people.initials=eq.AL&order=id&limit=2')).body).toEqual([{ name: 'Ada', people: [{ full_name: 'Ada Lovelace' }] }, { name: 'Bob', people: [] }]);
    expect(ids((await get('people?select=id,authors(shout)&order=authors(shout).desc.nullslast')).body)).toEqual([2, 1, 3]);
    expect((await get('people?select=id,authors!inner(shout)&authors.shout=eq.BOB')).body).toEqual([{ id: 2, authors: { shout: 'BOB' } }]);
    // Computed relationships: to-many (setof), to-one (rows 1, null when none), filtered, !inner, related order.
    const embedded = await get('people?select=full_name,writer(name),posts_of(title)&posts_of.order=id&order=id');
    expect(embedded.status, embedded.text).toBe(200);
    expect(embedded.body).toEqual([
      { full_name: 'Ada Lovelace', writer: { name: 'Ada' }, posts_of: [{ title: 'Hello world' }, { title: 'Second post' }] },
      { full_name: 'Alan Turing', writer: { name: 'Bob' }, posts_of: [{ title: 'Bob writes' }] },
      { full_name: 'Grace Hopper', writer: null, posts_of: [] },
    ]);
    expect(ids((await get('people?select=id,writer!inner(name)&writer.name=eq.Bob')).body)).toEqual([2]);
    expect(ids((await get('people?select=id,writer(name)&order=writer(name).desc.nullslast')).body)).toEqual([2, 1, 3]);
    expect((await get('people?select=id,posts_of(id)&posts_of=not.is.null&posts_of.published=is.false')).body).toEqual([{ id: 1, posts_of: [{ id: 2 }] }]);
  });

  it('embeds from an rpc’s rows of a table’s or view’s type through its keys, with its computed fields and relationships, by GET and POST', async () => {
    await sql(p, `
      create function everyone() returns setof people language sql stable as $$ select * from people $$;
      create function first_person() returns people language sql stable as $$ select * from people order by id limit 1 $$;
      create function published_by(w bigint) returns setof published_posts language sql stable as $$ select * from published_posts where writer = w $$;
      create function post_rows() returns table (id bigint, author_id bigint) language sql stable as $$ select id, author_id from posts $$;
    `);
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => call('POST', `/rest/v1/${path}`, { headers: { ...p.anon, ...headers }, body });
    // Foreign keys both ways, filtered, ordered and limited inside; !inner and a filter-only embedding; the count sees them.
    const byPost = await post('rpc/posts_by_author?select=title,authors(name),comments(body)&order=id&comments.order=id.desc', { author: 1 });
    expect(byPost.status, byPost.text).toBe(200);
    expect(byPost.body).toEqual([{ title: 'Hello world', authors: { name: 'Ada' }, comments: [{ body: 'nice' }, { body: 'first!' }] }, { title: 'Second post', authors: { name: 'Ada' }, comments: [] }]);
    expect((await get('rpc/posts_by_author?author=1&select=id,comments!inner(body)&comments.body=eq.nice')).body).toEqual([{ id: 1, comments: [{ body: 'nice' }] }]);
    const counted = await get('rpc/posts_by_author?author=1&select=id,comments!inner()', { prefer: 'count=exact' });
    expect([counted.status, counted.headers.get('content-range'), counted.body]).toEqual([200, '0-0/1', [{ id: 1 }]]);
    expect((await get('rpc/posts_by_author?author=1&select=id,comments()&comments=is.null')).body).toEqual([{ id: 2 }]);
    // Computed fields and relationships of the table, selected, filtered, ordered, and a related order.
    const computed = await get('rpc/everyone?select=full_name,writer(name),posts_of(title)&posts_of.order=id&full_name=like.A*&order=full_name.desc');
    expect(computed.status, computed.text).toBe(200);
    expect(computed.body).toEqual([
      { full_name: 'Alan Turing', writer: { name: 'Bob' }, posts_of: [{ title: 'Bob writes' }] },
      { full_name: 'Ada Lovelace', writer: { name: 'Ada' }, posts_of: [{ title: 'Hello world' }, { title: 'Second post' }] },
    ]);
    expect(ids((await get('rpc/everyone?select=id,authors(shout)&order=authors(shout).desc.nullslast')).body)).toEqual([2, 1, 3]);
    expect((await post('rpc/everyone?select=id,writer!inner(name)&writer.name=eq.Bob', {})).body).toEqual([{ id: 2, writer: { name: 'Bob' } }]);
    // One row of the table's type is an object; rows of a view's type embed through the keys of the table it shows.
    expect((await post('rpc/first_person?select=initials,authors(name)', {})).body).toEqual({ initials: 'AL', authors: { name: 'Ada' } });
    expect((await get('rpc/published_by?w=2&select=title,authors(name)')).body).toEqual([{ title: 'Bob writes', authors: { name: 'Bob' } }]);
    // Rows of no table have no relationships (PostgREST's PGRST200), and an embedded filter needs its embedding.
    const unrelated = await get('rpc/post_rows?select=id,authors(name)');
    expect(unrelated.status, unrelated.text).toBe(400);
    expect(unrelated.body).toMatchObject({ code: 'unknown_relation', message: 'could not find a relationship between "post_rows" and "authors"' });
    const unused = await get('rpc/posts_by_author?author=1&select=id&comments.body=eq.nice');
    expect([unused.status, unused.body.code]).toEqual([400, 'invalid_filter']);
  });

  it('refuses an unknown computed field as an unknown column, and one the role may not execute as PostgreSQL does', async () => {
    await sql(p, `
      create function secret_score(people) returns int language sql stable as $$ select 42 $$;
      revoke execute on function secret_score(people) from public, anon;
    `);
    for (const query of ['select=id,full_names', 'full_names=eq.x', 'order=full_names', 'select=id,authors(full_name)']) {
      const answer = await get(`people?${query}`);
      expect(answer.status, `${query}: ${answer.text}`).toBe(400);
      expect(answer.body).toMatchObject({ code: 'unknown_column', details: null });
    }
    const refused = await get('people?select=id,secret_score');
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body).toMatchObject({ code: '42501', message: 'permission denied for function secret_score' });
    expect((await get('people?select=secret_score&id=eq.1', p.service)).body).toEqual([{ secret_score: 42 }]);
  });
});
