/**
 * Writing through `/rest/v1/:table` over plain HTTP with the service key:
 * insert of one object or an array, `Prefer: return=…`, upsert with
 * on_conflict, PATCH and DELETE with filters (refused without), rpc, the
 * database errors' statuses, and the schema cache following schema changes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, scenarios } from '../../deploy/test/http';
import { blogSchema, createTable, restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
const rest = (method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; raw?: string } = {}) =>
  call(method, `/rest/v1/${path}`, { ...options, headers: { ...p.service, ...options.headers } });
const representation = { prefer: 'return=representation' };

/** The JSON body as written: numbers beyond 2^53 and long decimals, which a JavaScript number would round. */
const json = (raw: string) => ({ headers: { 'content-type': 'application/json' }, raw });

beforeAll(async () => {
  p = await restProject('rest write');
  await blogSchema(p);
  await sql(p, `
    create table ledger (id int8 primary key, label text default 'dflt', n int8, amount numeric);
    create function echo_exact(x bigint, y numeric default 0) returns text language sql stable as $$ select x::text || '|' || y::text $$;
  `);
});

describe('insert', () => {
  it('inserts one object: 201 with an empty body by default', async () => {
    const answer = await rest('POST', 'authors', { body: { name: 'Dee' } });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.text).toBe('');
    const row = await rest('GET', 'authors?name=eq.Dee&select=name,email');
    expect(row.body).toEqual([{ name: 'Dee', email: null }]);
  });

  it('inserts an array and returns the rows with return=representation, shaped by select', async () => {
    const answer = await rest('POST', 'authors?select=id,name', { headers: representation, body: [{ name: 'Eve', email: 'eve@example.com' }, { name: 'Fay' }] });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.body).toEqual([{ id: expect.any(Number), name: 'Eve' }, { id: expect.any(Number), name: 'Fay' }]);
    expect(answer.headers.get('preference-applied')).toContain('return=representation');
  });

  it('fills keys an object lacks with null, or with the column default under Prefer: missing=default', async () => {
    const body = [{ title: 'first', published: true }, { title: 'second' }];
    const nulls = await rest('POST', 'posts?select=title,published', { headers: representation, body });
    expect(nulls.body).toEqual([{ title: 'first', published: true }, { title: 'second', published: null }]);
    const defaults = await rest('POST', 'posts?select=title,published', { headers: { prefer: 'return=representation, missing=default' }, body });
    expect(defaults.status, defaults.text).toBe(201);
    expect(defaults.body).toEqual([{ title: 'first', published: true }, { title: 'second', published: false }]);
  });

  it('keeps bigints and numerics exact in a bulk insert under Prefer: missing=default', async () => {
    const raw = '[{"id": 9007199254740993, "n": 9007199254740995, "amount": 12345678901234567890.123456789}, {"id": 9007199254740997, "label": "x", "n": 1}]';
    const answer = await rest('POST', 'ledger', { headers: { 'content-type': 'application/json', prefer: 'missing=default' }, raw });
    expect(answer.status, answer.text).toBe(201);
    const back = await rest('GET', 'ledger?select=id::text,label,n::text,amount::text&id=in.(9007199254740993,9007199254740997)&order=id');
    expect(back.body).toEqual([
      { id: '9007199254740993', label: 'dflt', n: '9007199254740995', amount: '12345678901234567890.123456789' },
      { id: '9007199254740997', label: 'x', n: '1', amount: null },
    ]);
  });

  it('answers headers-only with a Location', async () => {
    const answer = await rest('POST', 'authors', { headers: { prefer: 'return=headers-only' }, body: { name: 'Gus' } });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('location')).toMatch(/^\/authors\?id=eq\.\d+$/);
  });

  it('inserts only the columns= listed', async () => {
    const answer = await rest('POST', 'authors?columns=name', { headers: representation, body: { name: 'Hal', email: 'ignored@example.com' } });
    expect(answer.body[0]).toMatchObject({ name: 'Hal', email: null });
  });

  it('returns one object with the single-object media type, and rolls back when it would not be one', async () => {
    const one = await rest('POST', 'authors', { headers: { ...representation, accept: 'application/vnd.pgrst.object+json' }, body: { name: 'Ivy' } });
    expect(one.status, one.text).toBe(201);
    expect(one.body).toMatchObject({ name: 'Ivy' });
    const two = await rest('POST', 'authors', { headers: { ...representation, accept: 'application/vnd.pgrst.object+json' }, body: [{ name: 'Jo1' }, { name: 'Jo2' }] });
    expect(two.status).toBe(406);
    expect((await rest('GET', 'authors?name=like.Jo*')).body).toEqual([]);
  });

  it('upserts with merge-duplicates and ignore-duplicates, on the primary key or on_conflict', async () => {
    const merged = await rest('POST', 'authors', { headers: { prefer: 'return=representation,resolution=merge-duplicates' }, body: [{ id: 3, name: 'Cy Young' }, { id: 50, name: 'New' }] });
    expect(merged.status, merged.text).toBe(201);
    expect(merged.body.map((r: { name: string }) => r.name)).toEqual(['Cy Young', 'New']);
    const ignored = await rest('POST', 'authors', { headers: { prefer: 'return=representation,resolution=ignore-duplicates' }, body: { id: 3, name: 'Not applied' } });
    expect(ignored.body).toEqual([]);
    // Only updated, no row inserted: 200, as PostgREST answers.
    const byEmail = await rest('POST', 'authors?on_conflict=email', { headers: { prefer: 'return=representation,resolution=merge-duplicates' }, body: { name: 'Ada Lovelace', email: 'ada@example.com' } });
    expect(byEmail.status, byEmail.text).toBe(200);
    expect(byEmail.body[0]).toMatchObject({ id: 1, name: 'Ada Lovelace' });
  });

  it('answers a merge-duplicates upsert 201 when it inserted a row and 200 when it only updated, whatever it returns', async () => {
    const upsert = (table: string, prefer: string, body: unknown) => rest('POST', table, { headers: { prefer: `${prefer},resolution=merge-duplicates` }, body });
    expect((await upsert('ledger', 'return=minimal', [{ id: 300, n: 1 }, { id: 301, n: 1 }])).status).toBe(201);
    const updated = await upsert('ledger', 'return=minimal', [{ id: 300, n: 2 }, { id: 301, n: 2 }]);
    expect([updated.status, updated.text]).toEqual([200, '']);
    expect((await upsert('ledger', 'return=headers-only', { id: 300, n: 3 })).status).toBe(200);
    expect((await upsert('ledger', 'return=minimal', [{ id: 300, n: 4 }, { id: 302, n: 4 }])).status).toBe(201);
    // ignore-duplicates inserting nothing stays 201, as in PostgREST.
    expect((await rest('POST', 'ledger', { headers: { prefer: 'resolution=ignore-duplicates' }, body: { id: 300 } })).status).toBe(201);
    expect((await rest('GET', 'ledger?select=id,n&id=in.(300,301,302)&order=id')).body).toEqual([{ id: 300, n: 4 }, { id: 301, n: 2 }, { id: 302, n: 4 }]);
  });

  it('upserts into a partitioned table, whose RETURNING cannot read xmax: 201 whether it inserted or updated', async () => {
    await sql(p, `
      create table readings (id int8, at date, v int, primary key (id, at)) partition by range (at);
      create table readings_2026 partition of readings for values from ('2026-01-01') to ('2027-01-01');
    `);
    const upsert = (v: number) => rest('POST', 'readings', { headers: { prefer: 'return=representation,resolution=merge-duplicates' }, body: { id: 1, at: '2026-03-01', v } });
    await expect.poll(async () => (await upsert(1)).status, { timeout: 1000, interval: 20 }).toBe(201);
    const again = await upsert(2);
    expect([again.status, again.body]).toEqual([201, [{ id: 1, at: '2026-03-01', v: 2 }]]);
  });

  it('returns computed fields and computed relationships of the rows written, an upsert’s too, and filters a PATCH by a computed field', async () => {
    await sql(p, `
      insert into authors (id, name) overriding system value values (70, 'Member author');
      create table members (id int8 primary key, first_name text, last_name text, author_id int8 references authors (id));
      create function full_name(members) returns text language sql stable as $$ select $1.first_name || ' ' || $1.last_name $$;
      create function member_author(members) returns setof authors rows 1 language sql stable as $$ select * from authors where id = $1.author_id $$;
    `);
    const select = 'select=id,full_name,member_author(name)';
    const inserted = await rest('POST', `members?${select}`, { headers: representation, body: { id: 1, first_name: 'Ada', last_name: 'Lovelace', author_id: 70 } });
    expect([inserted.status, inserted.body], inserted.text).toEqual([201, [{ id: 1, full_name: 'Ada Lovelace', member_author: { name: 'Member author' } }]]);
    // An upsert's returned rows carry its own column telling inserted from updated rows; the functions take them without it.
    const upserted = await rest('POST', `members?${select}`, { headers: { prefer: 'return=representation,resolution=merge-duplicates' }, body: [{ id: 1, first_name: 'Augusta', last_name: 'King', author_id: 70 }, { id: 2, first_name: 'Alan', last_name: 'Turing', author_id: null }] });
    expect([upserted.status, upserted.body], upserted.text).toEqual([201, [{ id: 1, full_name: 'Augusta King', member_author: { name: 'Member author' } }, { id: 2, full_name: 'Alan Turing', member_author: null }]]);
    const patched = await rest('PATCH', `members?full_name=eq.Alan%20Turing&select=id,full_name`, { headers: representation, body: { first_name: 'A. M.' } });
    expect([patched.status, patched.body], patched.text).toEqual([200, [{ id: 2, full_name: 'A. M. Turing' }]]);
    const deleted = await rest('DELETE', 'members?full_name=like.Augusta*&select=full_name', { headers: representation });
    expect(deleted.body).toEqual([{ full_name: 'Augusta King' }]);
    // A computed field is not a column to write.
    const written = await rest('POST', 'members', { body: { id: 3, full_name: 'x' } });
    expect([written.status, written.body.code]).toEqual([400, 'unknown_column']);
  });
});

describe('PUT', () => {
  it('puts one row in place by its primary key: inserted, then replaced', async () => {
    const inserted = await rest('PUT', 'authors?id=eq.77', { body: { id: 77, name: 'Put', email: 'put@example.com' } });
    expect(inserted.status, inserted.text).toBe(204);
    const replaced = await rest('PUT', 'authors?id=eq.77&select=id,name,email', { headers: representation, body: { id: 77, name: 'Put again', email: null } });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toEqual([{ id: 77, name: 'Put again', email: null }]);
  });

  it('answers 201 for a PUT with return=representation that inserted its row, as PostgREST', async () => {
    const created = await rest('PUT', 'authors?id=eq.78&select=id,name', { headers: representation, body: { id: 78, name: 'Put new' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toEqual([{ id: 78, name: 'Put new' }]);
    expect((await rest('PUT', 'authors?id=eq.78', { headers: representation, body: { id: 78, name: 'Put newer' } })).status).toBe(200);
  });

  it('compares the body’s key with the filter’s in PostgreSQL, in the key’s type: bigints beyond 2^53 put, a near miss refused', async () => {
    const put = await rest('PUT', 'ledger?id=eq.9007199254740999', json('{"id": 9007199254740999, "n": 1}'));
    expect(put.status, put.text).toBe(204);
    expect((await rest('GET', 'ledger?select=id::text,n&id=eq.9007199254740999')).body).toEqual([{ id: '9007199254740999', n: 1 }]);
    // 9007199254741001 and 9007199254741000 are one JavaScript number.
    const nearMiss = await rest('PUT', 'ledger?id=eq.9007199254741000', json('{"id": 9007199254741001, "n": 2}'));
    expect(nearMiss.status, nearMiss.text).toBe(400);
    expect(nearMiss.body.message).toMatch(/primary key/);
    expect((await rest('GET', 'ledger?select=id&id=in.(9007199254741000,9007199254741001)')).body).toEqual([]);
  });

  it('refuses limit= and offset= with 400, as PostgREST, and writes nothing', async () => {
    for (const query of ['limit=1', 'offset=0']) {
      const refused = await rest('PUT', `authors?id=eq.79&${query}`, { body: { id: 79, name: 'Paged' } });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body).toMatchObject({ code: 'invalid_request', message: 'limit/offset querystring parameters are not allowed for PUT' });
    }
    expect((await rest('GET', 'authors?id=eq.79')).body).toEqual([]);
  });
});

describe('writing through a view by the key it shows', () => {
  beforeAll(async () => {
    await sql(p, `
      create table gadgets (id int8 primary key, name text, price int);
      insert into gadgets values (1, 'one', 10);
      create view gadget_names as select id as gadget_id, name from gadgets;
      create view gadget_names_over as select name, gadget_id as gid from gadget_names;
      create view gadget_prices as select name, price from gadgets;
      create view gadgets_triggered as select id, name from gadgets;
      create function gadgets_triggered_insert() returns trigger language plpgsql as $$
        begin insert into gadgets (id, name) values (new.id, new.name); return new; end $$;
      create trigger gadgets_triggered_insert instead of insert on gadgets_triggered for each row execute function gadgets_triggered_insert();
    `);
  });

  it('puts one row through a view, and a view over it, by the key it shows under its own name', async () => {
    const put = () => rest('PUT', 'gadget_names?gadget_id=eq.2', { body: { gadget_id: 2, name: 'two' } });
    await expect.poll(async () => (await put()).status, { timeout: 1000, interval: 20 }).toBe(204);
    // A view's RETURNING has no xmax to tell an inserted row from a replaced one: 200 either way.
    const replaced = await rest('PUT', 'gadget_names?gadget_id=eq.2', { headers: representation, body: { gadget_id: 2, name: 'deux' } });
    expect([replaced.status, replaced.body], replaced.text).toEqual([200, [{ gadget_id: 2, name: 'deux' }]]);
    const over = await rest('PUT', 'gadget_names_over?gid=eq.3', { headers: representation, body: { gid: 3, name: 'three' } });
    expect([over.status, over.body], over.text).toEqual([200, [{ name: 'three', gid: 3 }]]);
    expect((await rest('GET', 'gadgets?select=id,name,price&order=id')).body).toEqual([
      { id: 1, name: 'one', price: 10 }, { id: 2, name: 'deux', price: null }, { id: 3, name: 'three', price: null },
    ]);
    // The body's key must meet the filter's; the filters must be the key, by the view's name for it.
    const mismatch = await rest('PUT', 'gadget_names?gadget_id=eq.4', { body: { gadget_id: 5, name: 'five' } });
    expect([mismatch.status, mismatch.body.code, mismatch.body.details], mismatch.text).toEqual([400, 'invalid_request', { primaryKey: ['gadget_id'] }]);
    const byTableName = await rest('PUT', 'gadget_names?id=eq.4', { body: { gadget_id: 4, name: 'four' } });
    expect([byTableName.status, byTableName.body.code], byTableName.text).toEqual([400, 'unknown_column']);
    const notKey = await rest('PUT', 'gadget_names?name=eq.x', { body: { gadget_id: 4, name: 'x' } });
    expect([notKey.status, notKey.body.code, notKey.body.details], notKey.text).toEqual([400, 'invalid_request', { primaryKey: ['gadget_id'] }]);
    // A view not showing the key has none.
    const keyless = await rest('PUT', 'gadget_prices?name=eq.one', { body: { name: 'one', price: 11 } });
    expect([keyless.status, keyless.body.code, keyless.body.details], keyless.text).toEqual([400, 'invalid_request', { primaryKey: [] }]);
    expect((await rest('GET', 'gadgets?select=id&id=in.(4,5)')).body).toEqual([]);
  });

  it('upserts through a view on the key it shows by default, and answers headers-only with its Location', async () => {
    const upsert = (prefer: string, body: unknown) => rest('POST', 'gadget_names', { headers: { prefer }, body });
    await expect.poll(async () => (await upsert('resolution=merge-duplicates', { gadget_id: 1, name: 'uno' })).status, { timeout: 1000, interval: 20 }).toBe(201);
    const merged = await upsert('return=representation,resolution=merge-duplicates', [{ gadget_id: 1, name: 'eins' }, { gadget_id: 6, name: 'six' }]);
    expect([merged.status, merged.body], merged.text).toEqual([201, [{ gadget_id: 1, name: 'eins' }, { gadget_id: 6, name: 'six' }]]);
    const ignored = await upsert('return=representation,resolution=ignore-duplicates', { gadget_id: 1, name: 'not applied' });
    expect([ignored.status, ignored.body], ignored.text).toEqual([201, []]);
    expect((await rest('GET', 'gadgets?select=id,name,price&id=in.(1,6)&order=id')).body).toEqual([{ id: 1, name: 'eins', price: 10 }, { id: 6, name: 'six', price: null }]);
    const located = await rest('POST', 'gadget_names_over', { headers: { prefer: 'return=headers-only' }, body: { gid: 7, name: 'seven' } });
    expect([located.status, located.headers.get('location')], located.text).toEqual([201, '/gadget_names_over?gid=eq.7']);
    // The OpenAPI description notes the view's key.
    const openapi = await rest('GET', '');
    expect(openapi.body.definitions.gadget_names.properties.gadget_id.description).toContain('Primary Key');
    expect(openapi.body.definitions.gadget_names.properties.name.description).toBeUndefined();
  });

  it('passes ON CONFLICT to a view with an INSTEAD OF trigger, which PostgreSQL refuses (400 42P10), as PostgREST does: no upsert made up', async () => {
    const plain = await rest('POST', 'gadgets_triggered', { body: { id: 8, name: 'eight' } });
    expect(plain.status, plain.text).toBe(201);
    for (const answer of [
      await rest('PUT', 'gadgets_triggered?id=eq.8', { body: { id: 8, name: 'huit' } }),
      await rest('POST', 'gadgets_triggered', { headers: { prefer: 'resolution=merge-duplicates' }, body: { id: 8, name: 'huit' } }),
    ]) {
      expect([answer.status, answer.body.code], answer.text).toEqual([400, '42P10']);
      expect(answer.body.message).toBe('there is no unique or exclusion constraint matching the ON CONFLICT specification');
    }
    expect((await rest('GET', 'gadgets?select=name&id=eq.8')).body).toEqual([{ name: 'eight' }]);
  });

  it('refuses a write into a view PostgreSQL cannot update with 400 and its reason, a PUT by the key of a join included', async () => {
    await sql(p, `create view gadget_pairs as select a.id, a.name, b.id as other_id from gadgets a join gadgets b on b.id = a.id + 1;`);
    const put = () => rest('PUT', 'gadget_pairs?id=eq.1', { body: { id: 1, name: 'x', other_id: 2 } });
    await expect.poll(async () => (await put()).status, { timeout: 1000, interval: 20 }).toBe(400);
    for (const answer of [await put(), await rest('POST', 'gadget_pairs', { body: { id: 9, name: 'x', other_id: 10 } }), await rest('PATCH', 'gadget_pairs?id=eq.1', { body: { name: 'x' } })]) {
      expect([answer.status, answer.body.code], answer.text).toEqual([400, '55000']);
      expect(answer.body.message).toMatch(/^cannot (insert into|update) view "gadget_pairs"$/);
      expect(answer.body.details).toMatch(/not automatically updatable/);
    }
  });
});

describe('update and delete', () => {
  it('updates the filtered rows: 204 by default, 200 with the rows for representation', async () => {
    expect((await rest('PATCH', 'posts?id=eq.2', { body: { score: 1 } })).status).toBe(204);
    const answer = await rest('PATCH', 'posts?author_id=eq.1&select=id,score', { headers: { ...representation, prefer: 'return=representation,count=exact' }, body: { score: 42 } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.sort((a: { id: number }, b: { id: number }) => a.id - b.id)).toEqual([{ id: 1, score: 42 }, { id: 2, score: 42 }]);
    expect(answer.headers.get('content-range')).toBe('0-1/2');
  });

  it('answers Content-Range as PostgREST: a PATCH’s spans the rows it changed, a DELETE’s and a POST’s only count them, a PUT has none', async () => {
    await rest('POST', 'ledger', { body: [{ id: 400, n: 40 }, { id: 401, n: 40 }, { id: 402, n: 40 }] });
    const range = async (method: string, path: string, prefer: string, body?: unknown) => (await rest(method, path, { headers: { prefer }, ...(body ? { body } : {}) })).headers.get('content-range');
    expect(await range('PATCH', 'ledger?n=eq.40', 'return=minimal', { label: 'x' })).toBe('0-2/*');
    expect(await range('PATCH', 'ledger?n=eq.40', 'return=minimal,count=exact', { label: 'y' })).toBe('0-2/3');
    expect(await range('PATCH', 'ledger?n=eq.-1', 'return=representation,count=exact', { label: 'y' })).toBe('*/0');
    expect(await range('POST', 'ledger', 'return=minimal,count=exact', [{ id: 403 }, { id: 404 }])).toBe('*/2');
    expect(await range('PUT', 'ledger?id=eq.405', 'return=representation,count=exact', { id: 405 })).toBeNull();
    expect(await range('DELETE', 'ledger?id=gte.400&id=lte.405', 'return=representation,count=exact')).toBe('*/6');
  });

  it('limits an update or a delete to the first rows in order', async () => {
    const patched = await rest('PATCH', 'posts?id=lte.4&published=is.true&order=id.desc&limit=1&select=id', { headers: representation, body: { title: 'Latest published' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toEqual([{ id: 4 }]);
    await rest('POST', 'comments', { body: [{ post_id: 3, body: 'c1' }, { post_id: 3, body: 'c2' }, { post_id: 3, body: 'c3' }] });
    const removed = await rest('DELETE', 'comments?post_id=eq.3&body=like.c*&order=body.asc&limit=2&select=body', { headers: representation });
    expect(removed.body.map((r: { body: string }) => r.body).sort()).toEqual(['c1', 'c2']);
    expect((await rest('GET', 'comments?post_id=eq.3&body=like.c*&select=body')).body).toEqual([{ body: 'c3' }]);
  });

  it('ignores a Range header on PATCH and DELETE, as PostgREST does on anything but GET', async () => {
    await rest('POST', 'ledger', { body: [{ id: 100, n: 3 }, { id: 101, n: 3 }, { id: 102, n: 3 }] });
    const patched = await rest('PATCH', 'ledger?n=eq.3&select=id', { headers: { range: '0-0', prefer: 'return=representation' }, body: { label: 'patched' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toHaveLength(3);
    const deleted = await rest('DELETE', 'ledger?n=eq.3&select=id', { headers: { range: '0-0', prefer: 'return=representation' } });
    expect(deleted.body).toHaveLength(3);
  });

  it('refuses (406) and rolls back a PATCH, DELETE or POST of two rows under the single-object media type, whatever Prefer: return says', async () => {
    const single = { accept: 'application/vnd.pgrst.object+json' };
    await rest('POST', 'ledger', { body: [{ id: 200, n: 7 }, { id: 201, n: 7 }] });
    for (const prefer of ['return=minimal', 'return=headers-only']) {
      const patched = await rest('PATCH', 'ledger?n=eq.7', { headers: { ...single, prefer }, body: { label: 'clobbered' } });
      expect(patched.status, patched.text).toBe(406);
      expect(patched.body.code).toBe('not_single_object');
      expect((await rest('DELETE', 'ledger?n=eq.7', { headers: { ...single, prefer } })).status).toBe(406);
      expect((await rest('POST', 'ledger', { headers: { ...single, prefer }, body: [{ id: 202, n: 7 }, { id: 203, n: 7 }] })).status).toBe(406);
    }
    expect((await rest('GET', 'ledger?n=eq.7&select=id,label&order=id')).body).toEqual([{ id: 200, label: 'dflt' }, { id: 201, label: 'dflt' }]);
    const one = await rest('PATCH', 'ledger?id=eq.200', { headers: single, body: { label: 'one' } });
    expect(one.status, one.text).toBe(204);
  });

  it('deletes the filtered rows', async () => {
    await rest('POST', 'comments', { body: [{ post_id: 4, body: 'x' }, { post_id: 4, body: 'y' }] });
    const answer = await rest('DELETE', 'comments?post_id=eq.4&body=eq.x', { headers: representation });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([expect.objectContaining({ post_id: 4, body: 'x' })]);
    expect((await rest('GET', 'comments?post_id=eq.4&select=body')).body).toEqual([{ body: 'y' }]);
  });

  scenarios([
    { name: 'PATCH without a filter is 400 filter_required', method: 'PATCH', url: '/rest/v1/posts', headers: () => p.service, body: { score: 0 }, expectedStatus: 400, expectedContent: ['filter_required'] },
    { name: 'DELETE without a filter is 400 filter_required', method: 'DELETE', url: '/rest/v1/posts', headers: () => p.service, expectedStatus: 400, expectedContent: ['filter_required'] },
    { name: 'a duplicate key is 409 23505', method: 'POST', url: '/rest/v1/authors', headers: () => p.service, body: { id: 1, name: 'dup' }, expectedStatus: 409, expectedContent: ['23505', 'already exists'] },
    { name: 'a missing foreign row is 409 23503', method: 'POST', url: '/rest/v1/comments', headers: () => p.service, body: { post_id: 999, body: 'x' }, expectedStatus: 409, expectedContent: ['23503'] },
    { name: 'a null in a not-null column is 400 23502', method: 'POST', url: '/rest/v1/posts', headers: () => p.service, body: { title: null }, expectedStatus: 400, expectedContent: ['23502'] },
    { name: 'a value of the wrong type is 400 22P02', method: 'POST', url: '/rest/v1/posts', headers: () => p.service, body: { title: 't', score: 'many' }, expectedStatus: 400, expectedContent: ['22P02'] },
    { name: 'an unknown column in the body is 400', method: 'POST', url: '/rest/v1/posts', headers: () => p.service, body: { title: 't', nope: 1 }, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'invalid JSON is 400 invalid_json', method: 'POST', url: '/rest/v1/posts', headers: () => ({ ...p.service, 'content-type': 'application/json' }), raw: '{"title":', expectedStatus: 400, expectedContent: ['invalid_json'] },
    { name: 'a scalar body is 400', method: 'POST', url: '/rest/v1/posts', headers: () => p.service, body: 5, expectedStatus: 400, expectedContent: ['invalid_json'] },
    { name: 'a non-JSON body is 415', method: 'POST', url: '/rest/v1/posts', headers: () => ({ ...p.service, 'content-type': 'text/plain' }), raw: 'title=x', expectedStatus: 415 },
    { name: 'an unknown on_conflict column is 400', method: 'POST', url: '/rest/v1/authors?on_conflict=nope', headers: () => ({ ...p.service, prefer: 'resolution=merge-duplicates' }), body: { name: 'x' }, expectedStatus: 400, expectedContent: ['unknown_column'] },
    { name: 'PUT without a primary-key filter is 400', method: 'PUT', url: '/rest/v1/authors', headers: () => p.service, body: { id: 1, name: 'x' }, expectedStatus: 400 },
    { name: 'PUT whose body names another key is 400', method: 'PUT', url: '/rest/v1/authors?id=eq.1', headers: () => p.service, body: { id: 2, name: 'x' }, expectedStatus: 400 },
    { name: 'PUT with a filter beyond the key is 400', method: 'PUT', url: '/rest/v1/authors?id=eq.1&name=eq.x', headers: () => p.service, body: { id: 1, name: 'x' }, expectedStatus: 400 },
  ]);
});

describe('rpc', () => {
  it('calls a scalar function with named arguments by POST and GET, defaults applying', async () => {
    const post = await rest('POST', 'rpc/add_numbers', { body: { a: 2, b: 3 } });
    expect(post.status, post.text).toBe(200);
    expect(post.body).toBe(5);
    const get = await rest('GET', 'rpc/add_numbers?a=41');
    expect(get.body).toBe(42);
  });

  it('answers a scalar, or a set of exactly one scalar, as the value itself under the single-object media type, else 406; refuses text/csv for scalars with 406', async () => {
    await sql(p, `create function numbers_upto(n int) returns setof int language sql immutable as $$ select generate_series(1, n) $$;`);
    const object = { accept: 'application/vnd.pgrst.object+json' };
    await expect.poll(async () => (await rest('POST', 'rpc/numbers_upto', { body: { n: 1 } })).status, { timeout: 1000, interval: 20 }).toBe(200);
    const scalar = await rest('POST', 'rpc/add_numbers', { headers: object, body: { a: 3, b: 4 } });
    expect([scalar.status, scalar.text, scalar.headers.get('content-type')]).toEqual([200, '7', 'application/vnd.pgrst.object+json; charset=utf-8']);
    const one = await rest('POST', 'rpc/numbers_upto', { headers: object, body: { n: 1 } });
    expect([one.status, one.text]).toEqual([200, '1']);
    expect((await rest('GET', 'rpc/numbers_upto?n=5&offset=2&limit=1', { headers: object })).text).toBe('3');
    for (const n of [0, 2]) {
      const refused = await rest('POST', 'rpc/numbers_upto', { headers: object, body: { n } });
      expect(refused.status, refused.text).toBe(406);
      expect(refused.body.code).toBe('not_single_object');
    }
    for (const [fn, body] of [['add_numbers', { a: 1 }], ['numbers_upto', { n: 2 }]] as const) {
      const csv = await rest('POST', `rpc/${fn}`, { headers: { accept: 'text/csv' }, body });
      expect(csv.status, csv.text).toBe(406);
      expect(csv.body.code).toBe('not_acceptable');
    }
    const rows = await rest('POST', 'rpc/posts_by_author?select=id&order=id', { headers: { accept: 'text/csv' }, body: { author: 1 } });
    expect([rows.status, rows.text]).toEqual([200, '"id"\n"1"\n"2"']);
  });

  it('calls a set-returning function, with select, filters and order on its rows', async () => {
    const answer = await rest('POST', 'rpc/posts_by_author?select=id,title&order=id.desc', { body: { author: 1 } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 2, title: 'Second post' }, { id: 1, title: 'Hello world' }]);
    const filtered = await rest('GET', 'rpc/posts_by_author?author=1&id=eq.2&select=id');
    expect(filtered.body).toEqual([{ id: 2 }]);
  });

  it('counts a set-returning function’s rows under Prefer: count=exact: Content-Range with the total, 206 for part of them, the function called once', async () => {
    const counted = { prefer: 'count=exact' };
    const page = await rest('POST', 'rpc/posts_by_author?select=id&order=id&limit=1', { headers: counted, body: { author: 1 } });
    expect(page.status, page.text).toBe(206);
    expect(page.body).toEqual([{ id: 1 }]);
    expect(page.headers.get('content-range')).toBe('0-0/2');
    expect(page.headers.get('preference-applied')).toBe('count=exact');
    const filtered = await rest('GET', 'rpc/posts_by_author?author=1&id=eq.2&select=id', { headers: counted });
    expect([filtered.status, filtered.headers.get('content-range')]).toEqual([200, '0-0/1']);
    const offset = await rest('GET', 'rpc/posts_by_author?author=1&select=id&order=id&offset=1', { headers: counted });
    expect([offset.status, offset.headers.get('content-range'), offset.body]).toEqual([206, '1-1/2', [{ id: 2 }]]);
    await sql(p, `
      create table draws (n int);
      create function draw(k int) returns setof int language sql volatile as $$ insert into draws select g from generate_series(1, k) g returning n $$;
    `);
    const scalars = await rest('POST', 'rpc/draw?limit=2', { headers: counted, body: { k: 3 } });
    expect([scalars.status, scalars.headers.get('content-range'), scalars.body]).toEqual([206, '0-1/3', [1, 2]]);
    expect((await rest('GET', 'draws?select=n&order=n')).body).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const uncounted = await rest('POST', 'rpc/posts_by_author?select=id&limit=1', { body: { author: 1 } });
    expect([uncounted.status, uncounted.headers.get('content-range')]).toEqual([200, '0-0/*']);
  });

  it('passes bigint and numeric arguments of a POST to PostgreSQL with every digit', async () => {
    const answer = await rest('POST', 'rpc/echo_exact', json('{"x": 9007199254740993, "y": 12345678901234567890.123456789}'));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toBe('9007199254740993|12345678901234567890.123456789');
    expect((await rest('GET', 'rpc/echo_exact?x=9007199254740993')).body).toBe('9007199254740993|0');
  });

  it('ignores a Range header on a POST', async () => {
    const answer = await rest('POST', 'rpc/posts_by_author?select=id&order=id', { headers: { range: '0-0' }, body: { author: 1 } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('answers 204 for a void function and 404 for an unknown one or unknown arguments', async () => {
    expect((await rest('POST', 'rpc/touch_nothing', { body: {} })).status).toBe(204);
    expect((await rest('POST', 'rpc/nope', { body: {} })).status).toBe(404);
    expect((await rest('POST', 'rpc/add_numbers', { body: { x: 1 } })).status).toBe(404);
  });

  it('answers 300 for overloads the argument names cannot tell apart, by GET and POST, rather than call either', async () => {
    await sql(p, `
      create function overloaded(a int) returns text language sql stable as $$ select 'int' $$;
      create function overloaded(a text) returns text language sql stable as $$ select 'text' $$;
    `);
    for (const answer of [await rest('GET', 'rpc/overloaded?a=1'), await rest('POST', 'rpc/overloaded', { body: { a: 'x' } })]) {
      expect(answer.status, answer.text).toBe(300);
      expect(answer.body).toMatchObject({ code: 'ambiguous_function', details: expect.arrayContaining(['overloaded(a => integer)', 'overloaded(a => text)']) });
    }
  });

  it("answers raise sqlstate 'PTxyz' with status xyz and the raised message, detail and hint, as PostgREST does", async () => {
    await sql(p, `create function pay_first() returns int language plpgsql as $$ begin raise sqlstate 'PT402' using message = 'Payment Required', detail = 'the trial is over', hint = 'upgrade'; end $$`);
    const answer = await rest('POST', 'rpc/pay_first', { body: {} });
    expect(answer.status, answer.text).toBe(402);
    expect(answer.body).toEqual({ code: 'PT402', message: 'Payment Required', details: 'the trial is over', hint: 'upgrade' });
  });

  it("answers raise sqlstate 'PGRST' with the status, headers and body the function chose in JSON, as PostgREST does; JSON of another shape is 500", async () => {
    await sql(p, `
      create function quota_left() returns int language plpgsql as $$ begin
        raise sqlstate 'PGRST' using
          message = '{"code":"quota","message":"Payment Required","details":"the quota is spent","hint":"upgrade your plan"}',
          detail = '{"status":402,"headers":{"X-Powered-By":"Nerd Rage","Content-Type":"text/plain"}}';
      end $$;
      create function bad_raise(part text) returns int language plpgsql as $$ begin
        if part = 'message' then raise sqlstate 'PGRST' using message = 'not json', detail = '{"status":402,"headers":{}}'; end if;
        if part = 'header' then raise sqlstate 'PGRST' using message = '{"code":"x","message":"y"}', detail = '{"status":402,"headers":{"X-Price":"5 €"}}'; end if;
        raise sqlstate 'PGRST' using message = '{"code":"x","message":"y"}', detail = '{"status":402}';
      end $$;
    `);
    const answer = await rest('POST', 'rpc/quota_left', { body: {} });
    expect(answer.status, answer.text).toBe(402);
    expect(answer.body).toEqual({ code: 'quota', message: 'Payment Required', details: 'the quota is spent', hint: 'upgrade your plan' });
    expect(answer.headers.get('x-powered-by')).toBe('Nerd Rage');
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    // A header value HTTP cannot carry (past Latin-1) is a DETAIL of the wrong shape too.
    for (const [part, named] of [['message', 'MESSAGE'], ['detail', 'DETAIL'], ['header', 'DETAIL']] as const) {
      const bad = await rest('POST', 'rpc/bad_raise', { body: { part } });
      expect([bad.status, bad.body.code], bad.text).toEqual([500, 'invalid_raise']);
      expect(bad.body.details).toContain(named);
    }
  });

  it('answers the status and headers a function set in response.status and response.headers, as PostgREST does', async () => {
    await sql(p, `
      create function start_job() returns json language plpgsql as $$ begin
        perform set_config('response.status', '202', true);
        perform set_config('response.headers', '[{"X-Job":"7"},{"Set-Cookie":"a=1; Path=/"},{"Set-Cookie":"b=2"},{"Content-Length":"1"}]', true);
        return json_build_object('job', 7);
      end $$;
      create function cached_price() returns int language plpgsql stable as $$ begin
        perform set_config('response.headers', '[{"Cache-Control":"max-age=60"},{"Content-Type":"text/plain"}]', true);
        return 5;
      end $$;
      create function created_nothing() returns void language plpgsql as $$ begin perform set_config('response.status', '201', true); end $$;
    `);
    const job = await rest('POST', 'rpc/start_job', { body: {} });
    expect(job.status, job.text).toBe(202);
    expect(job.body).toEqual({ job: 7 });
    expect(job.headers.get('x-job')).toBe('7');
    expect(job.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2']);
    expect(job.headers.get('content-type')).toMatch(/^application\/json/);
    // A GET runs read-only: setting them is allowed there too; ours of the same name (Content-Type) is replaced.
    const price = await rest('GET', 'rpc/cached_price');
    expect([price.status, price.text, price.headers.get('cache-control'), price.headers.get('content-type')]).toEqual([200, '5', 'max-age=60', 'text/plain']);
    expect((await rest('POST', 'rpc/created_nothing', { body: {} })).status).toBe(201);
    // The next request on the connection answers as usual: the settings were the transaction's.
    expect((await rest('POST', 'rpc/touch_nothing', { body: {} })).status).toBe(204);
  });

  it('answers what a BEFORE trigger or a policy set in response.*, for a write and a read', async () => {
    await sql(p, `
      create table jobs (id int8 primary key, state text);
      create function jobs_accepted() returns trigger language plpgsql as $$ begin
        perform set_config('response.status', '202', true);
        perform set_config('response.headers', json_build_array(json_build_object('Location', '/jobs/' || new.id))::text, true);
        return new;
      end $$;
      create trigger jobs_accepted before insert on jobs for each row execute function jobs_accepted();
      grant select on jobs to anon;
      create function mark_read() returns boolean language plpgsql stable as $$ begin
        perform set_config('response.headers', '[{"X-Read-Checked":"yes"}]', true);
        return true;
      end $$;
      alter table jobs enable row level security;
      create policy "checked" on jobs for select using (mark_read());
      create policy "write" on jobs for insert with check (true);
    `);
    const posted = await rest('POST', 'jobs', { body: { id: 9, state: 'new' } });
    expect([posted.status, posted.headers.get('location')], posted.text).toEqual([202, '/jobs/9']);
    const read = await call('GET', '/rest/v1/jobs?select=id', { headers: p.anon });
    expect([read.status, read.text, read.headers.get('x-read-checked')]).toEqual([200, '[{"id":9}]', 'yes']);
  });

  it('answers 500 for response.status or response.headers of the wrong shape, as PostgREST (PGRST112, PGRST111)', async () => {
    await sql(p, `
      create function bad_response(part text) returns int language plpgsql as $$ begin
        if part = 'status' then perform set_config('response.status', 'soon', true); end if;
        if part = 'range' then perform set_config('response.status', '99', true); end if;
        if part = 'object' then perform set_config('response.headers', '{"X-A":"1"}', true); end if;
        if part = 'two' then perform set_config('response.headers', '[{"X-A":"1","X-B":"2"}]', true); end if;
        if part = 'number' then perform set_config('response.headers', '[{"X-A":1}]', true); end if;
        return 1;
      end $$;
    `);
    for (const [part, code] of [['status', 'invalid_response_status'], ['range', 'invalid_response_status'], ['object', 'invalid_response_headers'], ['two', 'invalid_response_headers'], ['number', 'invalid_response_headers']]) {
      const answer = await rest('POST', 'rpc/bad_response', { body: { part } });
      expect([answer.status, answer.body.code], answer.text).toEqual([500, code]);
    }
  });

  it('answers as usual after owner code set response.status for its whole session: each request empties it', async () => {
    await sql(p, `create function leave_status() returns int language sql as $$ select set_config('response.status', '418', false)::int $$;`);
    // Volatile calls by POST take pool connections, the most recently used first: the next ones land on those left with 418.
    for (let i = 0; i < 4; i++) expect((await rest('POST', 'rpc/leave_status', { body: {} })).status).toBe(418);
    for (let i = 0; i < 4; i++) expect((await rest('POST', 'rpc/touch_nothing', { body: {} })).status).toBe(204);
  });

  it('answers a SQLSTATE outside PostgREST’s table with 400 and its message, and keeps an internal error’s message to itself (500)', async () => {
    await sql(p, `
      create function custom_failure() returns int language plpgsql as $$ begin raise exception 'my custom failure' using errcode = 'U0001'; end $$;
      create function internal_failure() returns int language plpgsql as $$ begin raise exception 'block 7 of /data/base/1 is damaged' using errcode = 'XX001'; end $$;
    `);
    const custom = await rest('POST', 'rpc/custom_failure', { body: {} });
    expect(custom.status, custom.text).toBe(400);
    expect(custom.body).toMatchObject({ code: 'U0001', message: 'my custom failure' });
    const internal = await rest('POST', 'rpc/internal_failure', { body: {} });
    expect(internal.status, internal.text).toBe(500);
    expect(internal.body.code).toBe('XX001');
    expect(internal.text).not.toContain('/data/base');
  });

  it('runs a GET in a read-only transaction', async () => {
    await sql(p, `create function bump() returns int language sql volatile as $$ update posts set score = coalesce(score, 0) + 1 where id = 1 returning score $$`);
    const get = await rest('GET', 'rpc/bump');
    expect(get.status, get.text).toBe(405);
    expect((await rest('POST', 'rpc/bump', { body: {} })).status).toBe(200);
  });
});

describe('schema cache', () => {
  it('serves a column added through the management API as soon as that call answers', async () => {
    const added = await call('POST', `/api/projects/${p.project.id}/tables/authors/columns`, { headers: bearer(p.operator.token), body: { name: 'bio', type: 'text' } });
    expect(added.status, added.text).toBe(201);
    const answer = await rest('GET', 'authors?select=bio&id=eq.1');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ bio: null }]);
  });

  it('serves a table and a column made through the SQL console within a second', async () => {
    await rest('GET', 'authors?select=id&limit=1');
    await sql(p, 'create table tags (id int primary key, label text); alter table authors add column twitter text; create policy "read" on tags for select using (true)');
    const started = Date.now();
    await expect.poll(async () => (await rest('GET', 'authors?select=twitter&limit=1')).status, { timeout: 1000, interval: 20 }).toBe(200);
    await expect.poll(async () => (await rest('GET', 'tags')).status, { timeout: 1000, interval: 20 }).toBe(200);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('answers the same writes, with the new column, after a column is added (statements prepared before it keep working)', async () => {
    await createTable(p, { name: 'notes', columns: [{ name: 'body', type: 'text' }] });
    // Each shape once per connection it may land on (both replicas, their pools), so the change meets prepared statements.
    const writes = async (round: number) => Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const inserted = await rest('POST', 'notes', { headers: representation, body: { body: `note ${round}.${i}` } });
      const id = inserted.body?.[0]?.id;
      const updated = await rest('PATCH', `notes?id=eq.${id}`, { headers: representation, body: { body: 'edited' } });
      const deleted = await rest('DELETE', `notes?id=eq.${id}`, { headers: representation });
      return [inserted, updated, deleted];
    }));
    for (const answers of await writes(1)) expect(answers.map((a) => a.status)).toEqual([201, 200, 200]);
    const added = await call('POST', `/api/projects/${p.project.id}/tables/notes/columns`, { headers: bearer(p.operator.token), body: { name: 'mood', type: 'text' } });
    expect(added.status, added.text).toBe(201);
    for (const answers of await writes(2)) {
      expect(answers.map((a) => a.status), answers.map((a) => a.text).join(' ')).toEqual([201, 200, 200]);
      expect(answers[0]!.body[0]).toEqual({ id: expect.any(Number), body: expect.any(String), mood: null });
    }
  });

  it('calls a function replaced with another row type through the SQL console: the new columns within a second', async () => {
    await sql(p, `create function pairs() returns table (n int) language sql stable as $$ select g from generate_series(1, 2) g $$`);
    await expect.poll(async () => (await rest('GET', 'rpc/pairs')).status, { timeout: 1000, interval: 20 }).toBe(200);
    // The call's statement, prepared on the connections it lands on, before the function changes under it.
    for (const answer of await Promise.all(Array.from({ length: 12 }, () => rest('GET', 'rpc/pairs')))) expect(answer.body).toEqual([{ n: 1 }, { n: 2 }]);
    await sql(p, `drop function pairs(); create function pairs() returns table (n int, label text) language sql stable as $$ select g, 'no ' || g from generate_series(1, 2) g $$`);
    await expect.poll(async () => (await rest('GET', 'rpc/pairs')).body, { timeout: 1000, interval: 20 }).toEqual([{ n: 1, label: 'no 1' }, { n: 2, label: 'no 2' }]);
    for (const answer of await Promise.all(Array.from({ length: 12 }, () => rest('GET', 'rpc/pairs')))) {
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual([{ n: 1, label: 'no 1' }, { n: 2, label: 'no 2' }]);
    }
  });

  it('forgets a dropped column', async () => {
    await sql(p, 'alter table authors drop column twitter');
    await expect.poll(async () => (await rest('GET', 'authors?select=twitter')).status, { timeout: 1000, interval: 20 }).toBe(400);
  });
});

describe('CSV bodies', () => {
  const csv = (raw: string, prefer = 'return=representation') => ({ headers: { 'content-type': 'text/csv', prefer }, raw });

  it('inserts the rows of a CSV body, each value read in its column’s type: NULL unquoted is null, "NULL" quoted the word, an empty field the empty string', async () => {
    const raw = 'id,label,n,amount\n9100,"comma, and ""quotes""",7,1.50\n9101,NULL,NULL,NULL\n9102,"NULL",NULL,2\n9103,,1,3\n';
    const answer = await rest('POST', 'ledger?select=id,label,n,amount::text', csv(raw));
    expect(answer.status, answer.text).toBe(201);
    expect(answer.headers.get('preference-applied')).toBe('return=representation');
    expect(answer.body).toEqual([
      { id: 9100, label: 'comma, and "quotes"', n: 7, amount: '1.50' },
      { id: 9101, label: null, n: null, amount: null },
      { id: 9102, label: 'NULL', n: null, amount: '2' },
      { id: 9103, label: '', n: 1, amount: '3' },
    ]);
    // An empty field in a number column is the empty string, which PostgreSQL refuses there (22P02), as in PostgREST; nothing of the body stays.
    const refused = await rest('POST', 'ledger', csv('id,n\n9104,1\n9105,\n'));
    expect([refused.status, refused.body.code]).toEqual([400, '22P02']);
    expect((await rest('GET', 'ledger?id=in.(9104,9105)')).body).toEqual([]);
  });

  it('answers a CSV body it cannot take with 400 (fields unlike the header, a header naming a column twice) or 415 (not a POST), and keeps nothing', async () => {
    const uneven = await rest('POST', 'ledger', csv('id,label\n9110,a\n9111\n'));
    expect([uneven.status, uneven.body.code]).toEqual([400, 'invalid_request']);
    expect(uneven.body.details.reason).toMatch(/record length|columns/i);
    const twice = await rest('POST', 'ledger', csv('id,id\n9112,9113\n'));
    expect([twice.status, twice.body.code]).toEqual([400, 'invalid_request']);
    const unknown = await rest('POST', 'ledger', csv('id,nope\n9114,1\n'));
    expect([unknown.status, unknown.body.code]).toEqual([400, 'unknown_column']);
    const patch = await rest('PATCH', 'ledger?id=eq.9100', csv('label\nx\n'));
    expect([patch.status, patch.body.code]).toEqual([415, 'unsupported_media_type']);
    expect((await rest('GET', 'ledger?id=in.(9110,9111,9112,9113,9114)')).body).toEqual([]);
    expect((await rest('GET', 'ledger?id=eq.9100&select=label')).body).toEqual([{ label: 'comma, and "quotes"' }]);
  });
});

describe('form bodies', () => {
  const form = (raw: string, prefer = 'return=representation') => ({ headers: { 'content-type': 'application/x-www-form-urlencoded', prefer }, raw });

  it('inserts, updates and upserts the one row a form body gives, each field read in its column’s type', async () => {
    const inserted = await rest('POST', 'ledger?select=id,label,n,amount::text', form('id=9300&label=caf%C3%A9+au+lait&n=7&amount=1.50'));
    expect(inserted.status, inserted.text).toBe(201);
    expect(inserted.body).toEqual([{ id: 9300, label: 'café au lait', n: 7, amount: '1.50' }]);
    const updated = await rest('PATCH', 'ledger?id=eq.9300&select=id,label,n', form('label=a%26b%3Dc&n=8'));
    expect(updated.body).toEqual([{ id: 9300, label: 'a&b=c', n: 8 }]);
    const upserted = await rest('PUT', 'ledger?id=eq.9301&select=id,label', form('id=9301&label=put'));
    expect([upserted.status, upserted.body]).toEqual([201, [{ id: 9301, label: 'put' }]]);
  });

  it('calls a function with a form body’s fields as its arguments', async () => {
    const sum = await rest('POST', 'rpc/add_numbers', form('a=40&b=2'));
    expect([sum.status, sum.body]).toEqual([200, 42]);
    const defaulted = await rest('POST', 'rpc/add_numbers', form('a=41'));
    expect(defaulted.body).toBe(42);
  });

  it('refuses a form body naming a field twice or a value its column cannot read, and keeps nothing', async () => {
    const twice = await rest('POST', 'ledger', form('id=9310&id=9311'));
    expect([twice.status, twice.body.code]).toEqual([400, 'invalid_request']);
    expect(twice.body.message).toContain('"id" twice');
    const wrongType = await rest('POST', 'ledger', form('id=9312&n=seven'));
    expect([wrongType.status, wrongType.body.code]).toEqual([400, '22P02']);
    const unknown = await rest('POST', 'ledger', form('id=9313&nope=1'));
    expect([unknown.status, unknown.body.code]).toEqual([400, 'unknown_column']);
    expect((await rest('GET', 'ledger?id=in.(9310,9311,9312,9313)')).body).toEqual([]);
    const xml = await rest('POST', 'ledger', { headers: { 'content-type': 'application/xml' }, raw: '<id>9314</id>' });
    expect([xml.status, xml.body.code]).toEqual([415, 'unsupported_media_type']);
    // A body said to be compressed is not read as it is (no plane inflates one).
    const gzip = await rest('POST', 'ledger', { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, raw: '{"id":9315}' });
    expect([gzip.status, gzip.body.code]).toEqual([415, 'unsupported_media_type']);
    expect((await rest('GET', 'ledger?id=in.(9314,9315)')).body).toEqual([]);
  });
});

describe('Prefer: timezone and max-affected', () => {
  beforeAll(async () => {
    await sql(p, `
      create table moments (id int8 primary key, at timestamptz not null);
      insert into moments values (1, '2026-01-15 12:00:00+00'), (2, '2026-07-15 12:00:00+00'), (3, '2026-07-16 12:00:00+00');
      create function moments_after(t timestamptz) returns setof moments language sql stable as $$ select * from moments where at > t order by id $$;
    `);
  });

  it('answers timestamps in the time zone a request prefers, one PostgreSQL lists, and says so; another zone is not applied', async () => {
    const la = await rest('GET', 'moments?select=id,at&id=lte.2&order=id', { headers: { prefer: 'timezone=America/Los_Angeles' } });
    expect(la.status, la.text).toBe(200);
    expect(la.body).toEqual([{ id: 1, at: '2026-01-15T04:00:00-08:00' }, { id: 2, at: '2026-07-15T05:00:00-07:00' }]);
    expect(la.headers.get('preference-applied')).toBe('timezone=America/Los_Angeles');
    // Values the request sends are read in that zone too.
    const filtered = await rest('GET', 'moments?select=id&at=eq.2026-07-15 05:00:00', { headers: { prefer: 'timezone=America/Los_Angeles' } });
    expect(filtered.body).toEqual([{ id: 2 }]);
    const rpc = await rest('POST', 'rpc/moments_after?select=id,at', { headers: { prefer: 'timezone=Asia/Tokyo' }, body: { t: '2026-07-16 00:00:00' } });
    expect(rpc.body).toEqual([{ id: 3, at: '2026-07-16T21:00:00+09:00' }]);
    const unknown = await rest('GET', 'moments?select=at&id=eq.1', { headers: { prefer: 'timezone=Jupiter/Red_Spot' } });
    expect(unknown.status, unknown.text).toBe(200);
    expect(unknown.body).toEqual([{ at: '2026-01-15T12:00:00+00:00' }]);
    expect(unknown.headers.get('preference-applied')).toBeNull();
    const strict = await rest('GET', 'moments?select=at&id=eq.1', { headers: { prefer: 'handling=strict, timezone=Jupiter/Red_Spot' } });
    expect([strict.status, strict.body.code, strict.body.details]).toEqual([400, 'invalid_request', 'Invalid preferences: timezone=Jupiter/Red_Spot']);
    // The zone lasts for its request only: the connection's next request answers in the default zone.
    const after = await rest('GET', 'moments?select=at&id=eq.1');
    expect(after.body).toEqual([{ at: '2026-01-15T12:00:00+00:00' }]);
  });

  it('refuses, under handling=strict, a PATCH, DELETE or rpc past max-affected, and keeps nothing of it; lenient handling ignores it', async () => {
    await rest('POST', 'ledger', { body: [9200, 9201, 9202].map((id) => ({ id, label: 'batch' })) });
    const strict = { prefer: 'handling=strict, max-affected=2' };
    const deleted = await rest('DELETE', 'ledger?label=eq.batch', { headers: strict });
    expect([deleted.status, deleted.body.code, deleted.body.details]).toEqual([400, 'max_affected_exceeded', 'The query affects 3 rows']);
    const patched = await rest('PATCH', 'ledger?label=eq.batch', { headers: { prefer: 'handling=strict, max-affected=2, return=representation' }, body: { n: 1 } });
    expect([patched.status, patched.body.code]).toEqual([400, 'max_affected_exceeded']);
    expect((await rest('GET', 'ledger?label=eq.batch&select=id,n&order=id')).body).toEqual([9200, 9201, 9202].map((id) => ({ id, n: null })));
    const within = await rest('PATCH', 'ledger?label=eq.batch&id=lte.9201', { headers: { prefer: 'handling=strict, max-affected=2' }, body: { n: 2 } });
    expect(within.status, within.text).toBe(204);
    expect(within.headers.get('preference-applied')).toBe('return=minimal, handling=strict, max-affected=2');
    const rpc = await rest('POST', 'rpc/moments_after', { headers: { prefer: 'handling=strict, max-affected=1' }, body: { t: '2026-01-01 00:00:00' } });
    expect([rpc.status, rpc.body.code]).toEqual([400, 'max_affected_exceeded']);
    const lenient = await rest('DELETE', 'ledger?label=eq.batch', { headers: { prefer: 'max-affected=2' } });
    expect(lenient.status, lenient.text).toBe(204);
    expect(lenient.headers.get('preference-applied')).toBe('return=minimal');
    expect((await rest('GET', 'ledger?label=eq.batch')).body).toEqual([]);
  });
});
