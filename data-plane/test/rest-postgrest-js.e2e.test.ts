/**
 * Conformance: `@supabase/postgrest-js`, unmodified, drives the data API as
 * any third-party client would — selects with aliases, casts and embedding,
 * every filter, order, range, counts, single/maybeSingle/csv, insert,
 * upsert, update, delete, rpc, and RLS as two users and anon.
 */
import { PostgrestClient } from '@supabase/postgrest-js';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { blogSchema, createTable, rangesTable, restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let anon: PostgrestClient;
let service: PostgrestClient;
const client = (key: string, token?: string) =>
  new PostgrestClient(`${inject('baseUrl')}/rest/v1`, { headers: { apikey: key, ...(token ? { Authorization: `Bearer ${token}` } : {}) } });
const ids = (rows: Array<{ id: number }> | null) => (rows ?? []).map((r) => r.id);

beforeAll(async () => {
  p = await restProject('postgrest-js');
  await blogSchema(p);
  await createTable(p, { name: 'notes', access: 'owner', columns: [{ name: 'body', type: 'text' }] });
  anon = client(p.project.anonKey);
  service = client(p.project.serviceKey);
});

describe('select', () => {
  it('reads with aliases, casts and embedding both ways', async () => {
    const { data, error, status } = await anon.from('posts').select('id, headline:title, score::text, author:authors(name), comments(body)').eq('id', 1);
    expect(error).toBeNull();
    expect(status).toBe(200);
    expect(data).toEqual([{ id: 1, headline: 'Hello world', score: '10', author: { name: 'Ada' }, comments: [{ body: 'first!' }, { body: 'nice' }] }]);
    const spread = await anon.from('posts').select('id, ...authors(name)').eq('id', 3);
    expect(spread.data).toEqual([{ id: 3, name: 'Bob' }]);
    const reverse = await anon.from('authors').select('name, posts!inner(id)').eq('posts.published', false);
    expect(reverse.data).toEqual([{ name: 'Ada', posts: [{ id: 2 }] }]);
  });

  it('orders by a to-one embedding’s column with order("embedding(column)"), and refuses a to-many one', async () => {
    const ordered = await anon.from('posts').select('id, authors(name)').order('authors(name)', { ascending: false, nullsFirst: false }).order('id');
    expect(ordered.error).toBeNull();
    expect(ids(ordered.data)).toEqual([3, 1, 2, 4]);
    const toMany = await anon.from('authors').select('name, posts(id)').order('posts(id)');
    expect(toMany.data).toBeNull();
    expect(toMany.error).toMatchObject({ code: 'invalid_filter', message: 'A related order on "posts" is not possible' });
    expect(toMany.status).toBe(400);
  });

  it('filters by an embedding’s presence with not(…, is, null) and is(…, null), as postgrest-js writes them', async () => {
    const present = await anon.from('posts').select('id, author:authors(name)').not('author', 'is', null).order('id');
    expect(present.error).toBeNull();
    expect(present.data).toEqual([{ id: 1, author: { name: 'Ada' } }, { id: 2, author: { name: 'Ada' } }, { id: 3, author: { name: 'Bob' } }]);
    const absent = await anon.from('authors').select('name, posts()').is('posts', null);
    expect(absent.data).toEqual([{ name: 'Cy' }]);
  });

  it('embeds from a view through its table’s keys, and selects, filters and orders a computed field and a computed relationship', async () => {
    await sql(p, `
      create view published_posts as select id, title, author_id as writer from posts where published;
      create function shout(authors) returns text language sql immutable as $$ select upper($1.name) $$;
      create function latest_post(authors) returns setof posts rows 1 language sql stable as $$ select * from posts where author_id = $1.id order by id desc limit 1 $$;
    `);
    const fromView = await anon.from('published_posts').select('title, authors(name)').order('id').limit(2);
    expect(fromView.error).toBeNull();
    expect(fromView.data).toEqual([{ title: 'Hello world', authors: { name: 'Ada' } }, { title: 'Bob writes', authors: { name: 'Bob' } }]);
    const intoView = await anon.from('authors').select('name, published_posts!inner(title)').eq('published_posts.title', 'Bob writes');
    expect(intoView.data).toEqual([{ name: 'Bob', published_posts: [{ title: 'Bob writes' }] }]);
    const computed = await anon.from('authors').select('id, shout, latest_post(title)').neq('shout', 'CY').order('shout', { ascending: false });
    expect(computed.error).toBeNull();
    expect(computed.data).toEqual([{ id: 2, shout: 'BOB', latest_post: { title: 'Bob writes' } }, { id: 1, shout: 'ADA', latest_post: { title: 'Second post' } }]);
    const unknown = await anon.from('authors').select('id, whisper');
    expect([unknown.status, unknown.error?.code]).toEqual([400, 'unknown_column']);
  });

  it('filters with every operator of the specification and not/or', async () => {
    const q = () => anon.from('posts').select('id').order('id');
    expect(ids((await q().eq('id', 2)).data)).toEqual([2]);
    expect(ids((await q().neq('id', 2)).data)).toEqual([1, 3, 4]);
    expect(ids((await q().gt('score', 5)).data)).toEqual([1, 4]);
    expect(ids((await q().gte('score', 5)).data)).toEqual([1, 3, 4]);
    expect(ids((await q().lt('score', 7)).data)).toEqual([3]);
    expect(ids((await q().lte('score', 7)).data)).toEqual([3, 4]);
    expect(ids((await q().like('title', '%post%')).data)).toEqual([2]);
    expect(ids((await q().ilike('title', 'HELLO%')).data)).toEqual([1]);
    expect(ids((await q().is('score', null)).data)).toEqual([2]);
    expect(ids((await q().is('published', false)).data)).toEqual([2]);
    expect(ids((await q().in('title', ['Orphan, with comma', 'Bob writes'])).data)).toEqual([3, 4]);
    expect(ids((await q().not('score', 'is', null)).data)).toEqual([1, 3, 4]);
    expect(ids((await q().or('id.eq.1,score.lt.6')).data)).toEqual([1, 3]);
    expect(ids((await q().contains('tags', ['hello'])).data)).toEqual([1, 3]);
    expect(ids((await q().containedBy('tags', ['hello', 'intro', 'misc'])).data)).toEqual([1, 2, 3, 4]);
    expect(ids((await q().overlaps('tags', ['misc', 'intro'])).data)).toEqual([1, 2]);
    expect(ids((await q().contains('meta', { lang: 'fr' })).data)).toEqual([3]);
    expect(ids((await q().textSearch('title', 'bob writes', { type: 'plain', config: 'english' })).data)).toEqual([3]);
    expect(ids((await q().match({ published: true, author_id: 1 })).data)).toEqual([1]);
    expect(ids((await q().filter('id', 'in', '(2,4)')).data)).toEqual([2, 4]);
    expect(ids((await q().or('and(published.is.true,score.gte.10),id.eq.4')).data)).toEqual([1, 4]);
    expect(ids((await q().not('id', 'in', '(1,2)')).data)).toEqual([3, 4]);
    expect(ids((await q().textSearch('title', 'hello', { type: 'websearch' })).data)).toEqual([1]);
    expect(ids((await q().isDistinct('score', 10)).data)).toEqual([2, 3, 4]);
    expect(ids((await q().likeAnyOf('title', ['Hello%', 'Bob%'])).data)).toEqual([1, 3]);
    const json = await anon.from('posts').select('id, lang:meta->>lang').eq('meta->>lang', 'fr');
    expect(json.data).toEqual([{ id: 3, lang: 'fr' }]);
  });

  it('compares ranges with rangeGt, rangeGte, rangeLt, rangeLte and rangeAdjacent', async () => {
    await rangesTable(p, 'slots');
    const q = () => anon.from('slots').select('id').order('id');
    await expect.poll(async () => (await q().rangeLt('during', '[5,6)')).error, { timeout: 1000, interval: 20 }).toBeNull();
    expect(ids((await q().rangeLt('during', '[5,6)')).data)).toEqual([1]);
    expect(ids((await q().rangeGt('during', '[5,6)')).data)).toEqual([3]);
    expect(ids((await q().rangeLte('during', '[5,6)')).data)).toEqual([2, 3]);
    expect(ids((await q().rangeGte('during', '[0,9)')).data)).toEqual([1, 2]);
    expect(ids((await q().rangeAdjacent('during', '[3,5)')).data)).toEqual([1, 2]);
    expect(ids((await q().not('during', 'adj', '[3,5)')).data)).toEqual([3]);
  });

  it('orders with nulls placement, ranges and counts', async () => {
    const ordered = await anon.from('posts').select('id').order('score', { ascending: false, nullsFirst: false });
    expect(ids(ordered.data)).toEqual([1, 4, 3, 2]);
    const ranged = await anon.from('posts').select('id', { count: 'exact' }).order('id').range(1, 2);
    expect(ids(ranged.data)).toEqual([2, 3]);
    expect(ranged.count).toBe(4);
    const limited = await anon.from('authors').select('name, posts(id)').order('id').order('id', { referencedTable: 'posts', ascending: false }).limit(1, { referencedTable: 'posts' }).limit(1);
    expect(limited.data).toEqual([{ name: 'Ada', posts: [{ id: 2 }] }]);
    const head = await anon.from('posts').select('*', { count: 'exact', head: true });
    expect(head.count).toBe(4);
    expect(head.data).toBeNull();
  });

  it('answers single, maybeSingle and csv', async () => {
    const single = await anon.from('posts').select('id, title').eq('id', 3).single();
    expect(single.data).toEqual({ id: 3, title: 'Bob writes' });
    const notSingle = await anon.from('posts').select('id').single();
    expect(notSingle.status).toBe(406);
    expect(notSingle.error).not.toBeNull();
    const maybe = await anon.from('posts').select('id').eq('id', 999).maybeSingle();
    expect(maybe.error).toBeNull();
    expect(maybe.data).toBeNull();
    const csv = await anon.from('authors').select('id, name').order('id').limit(2).csv();
    expect(csv.data).toBe('"id","name"\n"1","Ada"\n"2","Bob"');
  });

  it('leaves null-valued keys out with stripNulls(), at every depth, for rows, one row, a write and an rpc', async () => {
    const rows = await anon.from('posts').select('id, score, meta, author:authors(name, email)').in('id', [2, 4]).order('id').stripNulls();
    expect(rows.error).toBeNull();
    // Post 2 has no score nor meta; post 4 no author at all (null, so left out); an author without an email loses the key inside.
    expect(rows.data).toEqual([{ id: 2, author: { name: 'Ada', email: 'ada@example.com' } }, { id: 4, score: 7 }]);
    const embedded = await anon.from('authors').select('name, email').eq('id', 3).stripNulls();
    expect(embedded.data).toEqual([{ name: 'Cy' }]);
    const one = await anon.from('posts').select('id, score, meta').eq('id', 2).single().stripNulls();
    expect([one.error, one.data]).toEqual([null, { id: 2 }]);
    const written = await service.from('comments').insert({ post_id: 4, body: null }).select('post_id, body').stripNulls();
    expect([written.status, written.data]).toEqual([201, [{ post_id: 4 }]]);
    const called = await anon.rpc('posts_by_author', { author: 1 }).select('id, score').stripNulls();
    expect(called.data).toEqual([{ id: 1, score: 10 }, { id: 2 }]);
    // Without it, the nulls stay.
    expect((await anon.from('authors').select('name, email').eq('id', 3)).data).toEqual([{ name: 'Cy', email: null }]);
  });

  it('answers the stripped media types PostgREST names, and a vnd.pgrst.array without the parameter as plain JSON', async () => {
    const url = `${inject('baseUrl')}/rest/v1/authors?select=name,email&id=eq.3`;
    const stripped = await fetch(url, { headers: { apikey: p.project.anonKey, accept: 'application/vnd.pgrst.array+json;nulls=stripped' } });
    expect(stripped.headers.get('content-type')).toBe('application/vnd.pgrst.array+json; nulls=stripped; charset=utf-8');
    expect(await stripped.json()).toEqual([{ name: 'Cy' }]);
    const plain = await fetch(url, { headers: { apikey: p.project.anonKey, accept: 'application/vnd.pgrst.array+json' } });
    expect([plain.status, await plain.json()]).toEqual([200, [{ name: 'Cy', email: null }]]);
  });

  it('returns errors as {code, message, details, hint}', async () => {
    const { data, error, status } = await anon.from('nope').select();
    expect(data).toBeNull();
    expect(status).toBe(404);
    expect(error).toMatchObject({ code: '42P01', message: expect.any(String) });
    const badColumn = await anon.from('posts').select('nope');
    expect(badColumn.status).toBe(400);
    expect(badColumn.error?.code).toBe('unknown_column');
  });
});

describe('writes', () => {
  it('inserts one object and an array, returning the rows with select()', async () => {
    const one = await service.from('authors').insert({ name: 'Kim' }).select('name').single();
    expect(one.error).toBeNull();
    expect(one.status).toBe(201);
    expect(one.data).toEqual({ name: 'Kim' });
    const many = await service.from('authors').insert([{ name: 'Lee', email: 'lee@example.com' }, { name: 'Max' }]).select('name, email');
    expect(many.data).toEqual([{ name: 'Lee', email: 'lee@example.com' }, { name: 'Max', email: null }]);
    const defaulted = await service.from('posts').insert([{ title: 'a', published: true }, { title: 'b' }], { defaultToNull: false }).select('title, published');
    expect(defaulted.data).toEqual([{ title: 'a', published: true }, { title: 'b', published: false }]);
    const minimal = await service.from('authors').insert({ name: 'Ned' });
    expect(minimal).toMatchObject({ error: null, data: null, status: 201 });
  });

  it('upserts on the primary key and on another unique column, or ignores duplicates', async () => {
    const merged = await service.from('authors').upsert({ id: 2, name: 'Bob B.' }).select('id, name');
    expect(merged.data).toEqual([{ id: 2, name: 'Bob B.' }]);
    const byEmail = await service.from('authors').upsert({ name: 'Lee Two', email: 'lee@example.com' }, { onConflict: 'email' }).select('name');
    expect(byEmail.data).toEqual([{ name: 'Lee Two' }]);
    const ignored = await service.from('authors').upsert({ id: 2, name: 'ignored' }, { ignoreDuplicates: true }).select();
    expect(ignored.data).toEqual([]);
  });

  it('updates and deletes with filters; refuses them without', async () => {
    const updated = await service.from('posts').update({ score: 99 }).eq('id', 4).select('id, score');
    expect(updated.data).toEqual([{ id: 4, score: 99 }]);
    const deleted = await service.from('comments').delete().eq('id', 3).select('id');
    expect(deleted.data).toEqual([{ id: 3 }]);
    const unfiltered = await service.from('comments').delete();
    expect(unfiltered.status).toBe(400);
    expect(unfiltered.error?.code).toBe('filter_required');
    const counted = await service.from('posts').update({ published: true }, { count: 'exact' }).eq('author_id', 1);
    expect(counted.count).toBe(2);
  });

  it('refuses writes with the anon key on a public-read table', async () => {
    const { error, status } = await anon.from('posts').insert({ title: 'nope' });
    expect(status).toBe(401);
    expect(error?.code).toBe('42501');
  });
});

describe('rpc', () => {
  it('calls functions by POST, GET and HEAD', async () => {
    expect((await anon.rpc('add_numbers', { a: 1, b: 2 })).data).toBe(3);
    expect((await anon.rpc('add_numbers', { a: 5 }, { get: true })).data).toBe(6);
    const rows = await anon.rpc('posts_by_author', { author: 1 }).select('id').order('id', { ascending: false });
    expect(rows.data).toEqual([{ id: 2 }, { id: 1 }]);
    const filtered = await anon.rpc('posts_by_author', { author: 1 }, { get: true }).eq('id', 1);
    expect(ids(filtered.data as Array<{ id: number }>)).toEqual([1]);
    expect((await anon.rpc('touch_nothing')).status).toBe(204);
    expect((await anon.rpc('nope')).status).toBe(404);
  });

  it('embeds from the rows of a function returning a table’s rows, as from the table', async () => {
    const embedded = await anon.rpc('posts_by_author', { author: 1 }).select('title, author:authors(name), comments!inner(body)').eq('comments.body', 'nice');
    expect(embedded.error).toBeNull();
    expect(embedded.data).toEqual([{ title: 'Hello world', author: { name: 'Ada' }, comments: [{ body: 'nice' }] }]);
    const byGet = await anon.rpc('posts_by_author', { author: 1 }, { get: true }).select('id, authors(name)').order('id');
    expect(byGet.data).toEqual([{ id: 1, authors: { name: 'Ada' } }, { id: 2, authors: { name: 'Ada' } }]);
  });
});

describe('RLS as users', () => {
  it('keeps each user to their own rows with the owner preset, and anon to none', async () => {
    const [ada, bob] = await Promise.all([signUpUser(p), signUpUser(p)]);
    const asAda = client(p.project.anonKey, ada.token);
    const asBob = client(p.project.anonKey, bob.token);
    const inserted = await asAda.from('notes').insert({ body: 'mine' }).select('id, owner_id').single();
    expect(inserted.error).toBeNull();
    expect((inserted.data as { owner_id: string }).owner_id).toBe(ada.id);
    await asBob.from('notes').insert({ body: 'bob' });
    expect((await asAda.from('notes').select('body')).data).toEqual([{ body: 'mine' }]);
    expect((await asBob.from('notes').select('body')).data).toEqual([{ body: 'bob' }]);
    expect((await anon.from('notes').select()).data).toEqual([]);
    const id = (inserted.data as { id: number }).id;
    expect((await asBob.from('notes').update({ body: 'stolen' }).eq('id', id).select()).data).toEqual([]);
    expect((await asBob.from('notes').delete().eq('id', id).select()).data).toEqual([]);
    expect((await asAda.from('notes').select('body').eq('id', id).single()).data).toEqual({ body: 'mine' });
    const expired = client(p.project.anonKey, `${ada.token.slice(0, -3)}abc`);
    expect((await expired.from('posts').select('id')).status).toBe(401);
  });
});
