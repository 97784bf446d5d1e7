/**
 * `client.from()` and `client.rpc()` against the real data API: the builder's
 * reads and writes, RLS as anon and as two signed-in users (the client sends
 * the user's token by itself), and every failure resolved as
 * `{ data: null, error: { code, message, details, hint, status } }`.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, type BaseplaneClient } from '../src/index';
import { bearer, call } from '../../deploy/test/http';
import { appClient, clientProject, createTable, deadBaseUrl, garbageServer, newEmail, PASSWORD, type ClientProject } from './client-fixtures';

let p: ClientProject;
let anon: BaseplaneClient;
let service: BaseplaneClient;
let alice: BaseplaneClient;
let bob: BaseplaneClient;
const titles = (rows: Array<{ title: string }> | null) => (rows ?? []).map((r) => r.title);

beforeAll(async () => {
  p = await clientProject('client data');
  await createTable(p, { name: 'posts', columns: [{ name: 'title', type: 'text', nullable: false }, { name: 'score', type: 'int4' }] });
  await createTable(p, { name: 'todos', access: 'owner', columns: [{ name: 'title', type: 'text', nullable: false }] });
  const fn = await call('POST', '/api/sql/execute', {
    headers: bearer(p.operator.token),
    body: { projectId: p.project.id, query: 'create function my_todo_count() returns int language sql stable as $$ select count(*)::int from todos $$' },
  });
  expect(fn.status, fn.text).toBe(200);
  anon = appClient(p);
  service = createClient(inject('baseUrl'), p.project.serviceKey);
  [alice, bob] = [appClient(p), appClient(p)];
  for (const user of [alice, bob]) expect((await user.auth.signUp({ email: newEmail(), password: PASSWORD })).error).toBeNull();
});

describe('writing and reading', () => {
  it('inserts with the service key and reads back with select()', async () => {
    const inserted = await service.from('posts').insert([{ title: 'alpha', score: 3 }, { title: 'beta', score: 7 }, { title: 'gamma', score: null }]).select('title, score');
    expect(inserted.error).toBeNull();
    expect(inserted.status).toBe(201);
    expect(inserted.data).toEqual([{ title: 'alpha', score: 3 }, { title: 'beta', score: 7 }, { title: 'gamma', score: null }]);
  });

  it('filters, orders, ranges and counts as anon', async () => {
    const q = () => anon.from('posts').select('title').order('title');
    expect(titles((await q().eq('title', 'beta')).data)).toEqual(['beta']);
    expect(titles((await q().neq('title', 'beta')).data)).toEqual(['alpha', 'gamma']);
    expect(titles((await q().gt('score', 3)).data)).toEqual(['beta']);
    expect(titles((await q().gte('score', 3)).data)).toEqual(['alpha', 'beta']);
    expect(titles((await q().lt('score', 7)).data)).toEqual(['alpha']);
    expect(titles((await q().lte('score', 7)).data)).toEqual(['alpha', 'beta']);
    expect(titles((await q().like('title', '%ta')).data)).toEqual(['beta']);
    expect(titles((await q().ilike('title', 'GAM%')).data)).toEqual(['gamma']);
    expect(titles((await q().is('score', null)).data)).toEqual(['gamma']);
    expect(titles((await q().in('title', ['alpha', 'gamma'])).data)).toEqual(['alpha', 'gamma']);
    expect(titles((await q().not('score', 'is', null)).data)).toEqual(['alpha', 'beta']);
    expect(titles((await q().or('score.gt.5,score.is.null')).data)).toEqual(['beta', 'gamma']);
    const paged = await anon.from('posts').select('title', { count: 'exact' }).order('score', { ascending: false, nullsFirst: false }).range(0, 1);
    expect(paged).toMatchObject({ error: null, status: 206, count: 3, data: [{ title: 'beta' }, { title: 'alpha' }] });
    expect(titles((await anon.from('posts').select('title').order('title').limit(1)).data)).toEqual(['alpha']);
  });

  it('answers single and maybeSingle, and a 406 as an error with its status', async () => {
    expect((await anon.from('posts').select('title').eq('title', 'alpha').single()).data).toEqual({ title: 'alpha' });
    const none = await anon.from('posts').select('title').eq('title', 'nope').maybeSingle();
    expect(none).toMatchObject({ data: null, error: null });
    const many = await anon.from('posts').select('title').single();
    expect(many.data).toBeNull();
    expect(many.error).toMatchObject({ code: 'not_single_object', message: expect.any(String), status: 406 });
    // maybeSingle() counts the rows itself (postgrest-js): the same refusal, under API.md's code.
    const several = await anon.from('posts').select('title').maybeSingle();
    expect(several).toMatchObject({ data: null, status: 406, error: { code: 'not_single_object', status: 406 } });
  });

  it('updates, upserts and deletes with the service key', async () => {
    const updated = await service.from('posts').update({ score: 8 }).eq('title', 'beta').select('title, score').single();
    expect(updated.data).toEqual({ title: 'beta', score: 8 });
    const { data: alpha } = await service.from('posts').select('id').eq('title', 'alpha').single();
    const upserted = await service.from('posts').upsert({ id: (alpha as { id: number }).id, title: 'alpha', score: 4 }).select('title, score');
    expect(upserted.data).toEqual([{ title: 'alpha', score: 4 }]);
    const deleted = await service.from('posts').delete().eq('title', 'gamma').select('title');
    expect(deleted.data).toEqual([{ title: 'gamma' }]);
    expect(titles((await anon.from('posts').select('title').order('title')).data)).toEqual(['alpha', 'beta']);
  });

  it('calls a SQL function with rpc()', async () => {
    const { data, error } = await service.rpc('my_todo_count');
    expect(error).toBeNull();
    expect(typeof data).toBe('number');
  });
});

describe('row-level security', () => {
  it('sends the signed-in user’s token: each user sees and changes only their own rows', async () => {
    expect((await alice.from('todos').insert({ title: 'alice’s' })).error).toBeNull();
    expect((await bob.from('todos').insert({ title: 'bob’s' })).error).toBeNull();
    expect(titles((await alice.from('todos').select('title')).data)).toEqual(['alice’s']);
    expect(titles((await bob.from('todos').select('title')).data)).toEqual(['bob’s']);
    const stolen = await bob.from('todos').update({ title: 'mine now' }).eq('title', 'alice’s').select();
    expect(stolen).toMatchObject({ error: null, data: [] });
    expect((await alice.rpc('my_todo_count')).data).toBe(1);
  });

  it('reads nothing as anon and refuses anon’s writes with the database’s code and a 401', async () => {
    expect((await anon.from('todos').select('title')).data).toEqual([]);
    const refused = await anon.from('todos').insert({ title: 'anonymous' });
    expect(refused.data).toBeNull();
    expect(refused.status).toBe(401);
    expect(refused.error).toMatchObject({ code: '42501', message: expect.any(String), status: 401 });
    expect(refused.error).toHaveProperty('details');
    expect(refused.error).toHaveProperty('hint');
  });
});

describe('failures', () => {
  it('keeps the server’s code and adds the status', async () => {
    const missing = await anon.from('nope').select();
    expect(missing).toMatchObject({ data: null, status: 404, error: { code: '42P01', status: 404 } });
    const badColumn = await anon.from('posts').select('nope');
    expect(badColumn.error).toMatchObject({ code: 'unknown_column', status: 400 });
    const unfiltered = await service.from('posts').delete();
    expect(unfiltered.error).toMatchObject({ code: 'filter_required', status: 400 });
    const wrongKey = await createClient(inject('baseUrl'), 'bp_anon_not-a-key').from('posts').select();
    expect(wrongKey.error).toEqual({ code: 'invalid_api_key', message: expect.any(String), details: null, hint: null, status: 401 });
  });

  it('resolves a success that is not JSON as invalid_response, and keeps an error page’s text', async () => {
    const garbage = await garbageServer((request) =>
      request.method === 'GET' ? { status: 200, body: '<html>captive portal</html>', type: 'text/html' } : { status: 502, body: '<html>bad gateway</html>', type: 'text/html' },
    );
    const broken = createClient(garbage.url, p.project.anonKey);
    const read = await broken.from('posts').select();
    expect(read).toMatchObject({ data: null, status: 200, error: { code: 'invalid_response', status: 200 } });
    const write = await broken.from('posts').insert({ title: 'x' });
    expect(write.error).toEqual({ code: 'http_502', message: '<html>bad gateway</html>', details: null, hint: null, status: 502 });
    await garbage.close();
  });

  it('resolves a request that gets no answer as network_error, status 0, at once (no retries)', async () => {
    const offline = createClient(await deadBaseUrl(), p.project.anonKey);
    const started = Date.now();
    const read = await offline.from('posts').select();
    expect(read.data).toBeNull();
    expect(read.error).toMatchObject({ code: 'network_error', status: 0, message: expect.stringContaining('no answer') });
    expect(Date.now() - started).toBeLessThan(900);
    expect((await offline.rpc('my_todo_count')).error?.code).toBe('network_error');
  });
});
