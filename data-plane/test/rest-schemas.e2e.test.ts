/**
 * Schemas other than `public` on the data API, as PostgREST's `db-schemas`:
 * the operator exposes them (`PATCH /api/projects/:id/rest/settings`), every
 * replica follows, and a request picks one with `Accept-Profile` (reads) or
 * `Content-Profile` (writes). Each schema's tables, embeddings and functions
 * are its own; the roles' grants and RLS decide the rest.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, call } from '../../deploy/test/http';
import { restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
const settingsUrl = () => `/api/projects/${p.project.id}/rest/settings`;
const api = { 'accept-profile': 'api' };
const intoApi = { 'content-profile': 'api' };

/** Rows of `table` read as the project owner through the console. */
async function ownerRows(table: string): Promise<unknown[]> {
  return (await sql(p, `select * from ${table} order by id`)).rows;
}

beforeAll(async () => {
  p = await restProject('schemas');
  // The same table name in both schemas, with other rows, so an answer tells which one it read.
  await sql(p, `
    create table things (id int primary key, name text);
    create policy "read" on things for select using (true);
    insert into things values (1, 'public thing');

    create schema api;
    grant usage on schema api to anon, authenticated, service_role;
    create table api.things (id int primary key, name text);
    create table api.parts (id int primary key, thing_id int references api.things (id), label text);
    create table api.notes (id int primary key, owner uuid not null default auth.uid(), body text);
    -- RLS is on by itself in api as in public (the console's tables get it): these policies let rows through.
    create policy "read" on api.things for select using (true);
    create policy "read" on api.parts for select using (true);
    create policy "own notes" on api.notes for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
    grant select, insert, update, delete on all tables in schema api to anon, authenticated, service_role;
    insert into api.things values (1, 'api one'), (2, 'api two'), (3, 'api three');
    insert into api.parts values (10, 1, 'bolt'), (11, 1, 'nut'), (12, 2, 'gear');
    create function api.hello(name text) returns text language sql as $$ select 'hello ' || name $$;
    -- Unqualified: the request's search path (the schema, then public) decides which things it counts.
    create function api.count_things() returns bigint language plpgsql as $$ begin return (select count(*) from things); end $$;
    grant execute on all functions in schema api to anon, authenticated, service_role;

    create schema hidden;
    create table hidden.secrets (id int primary key, secret text);
    insert into hidden.secrets values (1, 'kept');
  `);
});

describe('before the schema is exposed', () => {
  it('serves public only: another profile is 406 invalid_schema naming what is exposed, and no Content-Profile is sent', async () => {
    const refused = await call('GET', '/rest/v1/things', { headers: { ...p.anon, ...api } });
    expect([refused.status, refused.body.code, refused.body.message]).toEqual([406, 'invalid_schema', 'the schema must be one of the following: public']);
    const write = await call('POST', '/rest/v1/things', { headers: { ...p.service, ...intoApi }, body: { id: 9, name: 'x' } });
    expect([write.status, write.body.code]).toEqual([406, 'invalid_schema']);
    const read = await call('GET', '/rest/v1/things', { headers: p.anon });
    expect(read.body).toEqual([{ id: 1, name: 'public thing' }]);
    expect(read.headers.get('content-profile')).toBeNull();
    expect(await ownerRows('api.things')).toHaveLength(3);
  });
});

describe('exposed', () => {
  beforeAll(async () => {
    const answer = await call('PATCH', settingsUrl(), { headers: bearer(p.operator.token), body: { exposedSchemas: ['public', 'api', 'hidden', 'missing'] } });
    expect(answer.status, answer.text).toBe(200);
  });

  it('is followed by the data plane within a second or so of being recorded', async () => {
    await expect.poll(async () => (await call('GET', '/rest/v1/things', { headers: { ...p.anon, ...api } })).status, { timeout: 10_000, interval: 100 }).toBe(200);
  });

  it('reads the schema Accept-Profile names, public without one, and says which in Content-Profile', async () => {
    const fromApi = await call('GET', '/rest/v1/things?select=name&order=id', { headers: { ...p.anon, ...api } });
    expect(fromApi.body).toEqual([{ name: 'api one' }, { name: 'api two' }, { name: 'api three' }]);
    expect(fromApi.headers.get('content-profile')).toBe('api');
    const fromPublic = await call('GET', '/rest/v1/things?select=name', { headers: p.anon });
    expect(fromPublic.body).toEqual([{ name: 'public thing' }]);
    expect(fromPublic.headers.get('content-profile')).toBe('public');
    // A read names its schema with Accept-Profile only.
    expect((await call('GET', '/rest/v1/things?select=name', { headers: { ...p.anon, ...intoApi } })).body).toEqual([{ name: 'public thing' }]);
    const refused = await call('GET', '/rest/v1/things', { headers: { ...p.anon, 'accept-profile': 'auth' } });
    expect([refused.status, refused.body.message]).toEqual([406, 'the schema must be one of the following: public, api, hidden, missing']);
  });

  it('embeds along the schema’s own foreign keys, filters and counts there', async () => {
    const answer = await call('GET', '/rest/v1/parts?select=label,things(name)&things.name=neq.none&order=id&label=neq.gear', { headers: { ...p.anon, ...api, prefer: 'count=exact' } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ label: 'bolt', things: { name: 'api one' } }, { label: 'nut', things: { name: 'api one' } }]);
    expect(answer.headers.get('content-range')).toBe('0-1/2');
    const counted = await call('GET', '/rest/v1/things?select=name,parts(count)&id=eq.1', { headers: { ...p.anon, ...api } });
    expect(counted.body).toEqual([{ name: 'api one', parts: [{ count: 2 }] }]);
    // public has no parts: the name is unknown there, and the message says which schema was read.
    const unknown = await call('GET', '/rest/v1/parts', { headers: p.anon });
    expect([unknown.status, unknown.body.message]).toEqual([404, 'relation "public.parts" does not exist']);
    const nope = await call('GET', '/rest/v1/nope', { headers: { ...p.anon, ...api } });
    expect([nope.status, nope.body.message]).toEqual([404, 'relation "api.nope" does not exist']);
  });

  it('writes into the schema Content-Profile names, and into public without one', async () => {
    const inserted = await call('POST', '/rest/v1/things', { headers: { ...p.service, ...intoApi, prefer: 'return=representation' }, body: { id: 4, name: 'api four' } });
    expect([inserted.status, inserted.body]).toEqual([201, [{ id: 4, name: 'api four' }]]);
    expect(inserted.headers.get('content-profile')).toBe('api');
    const patched = await call('PATCH', '/rest/v1/things?id=eq.4', { headers: { ...p.service, ...intoApi, prefer: 'return=representation' }, body: { name: 'api 4' } });
    expect(patched.body).toEqual([{ id: 4, name: 'api 4' }]);
    const put = await call('PUT', '/rest/v1/things?id=eq.5', { headers: { ...p.service, ...intoApi }, body: { id: 5, name: 'api five' } });
    expect(put.status, put.text).toBe(204);
    // Accept-Profile does not choose a write's schema: this one lands in public.
    const intoPublic = await call('POST', '/rest/v1/things', { headers: { ...p.service, ...api }, body: { id: 4, name: 'public four' } });
    expect(intoPublic.status, intoPublic.text).toBe(201);
    expect(await ownerRows('api.things')).toEqual([
      { id: 1, name: 'api one' }, { id: 2, name: 'api two' }, { id: 3, name: 'api three' }, { id: 4, name: 'api 4' }, { id: 5, name: 'api five' },
    ]);
    expect(await ownerRows('public.things')).toEqual([{ id: 1, name: 'public thing' }, { id: 4, name: 'public four' }]);
    const deleted = await call('DELETE', '/rest/v1/things?id=gte.4', { headers: { ...p.service, ...intoApi } });
    expect(deleted.status).toBe(204);
    expect(await ownerRows('api.things')).toHaveLength(3);
    expect(await ownerRows('public.things')).toHaveLength(2);
  });

  it('calls the schema’s functions, with the schema first on the search path as PostgREST sets it', async () => {
    const hello = await call('GET', '/rest/v1/rpc/hello?name=ada', { headers: { ...p.anon, ...api } });
    expect([hello.status, hello.body]).toEqual([200, 'hello ada']);
    // Unqualified `things` in the function's body is api.things (3 rows), not public.things (2).
    const counted = await call('POST', '/rest/v1/rpc/count_things', { headers: { ...p.anon, ...intoApi }, body: {} });
    expect([counted.status, counted.body]).toEqual([200, 3]);
    const notInPublic = await call('GET', '/rest/v1/rpc/hello?name=ada', { headers: p.anon });
    expect([notInPublic.status, notInPublic.body.message]).toEqual([404, 'function public.hello with these arguments not found']);
  });

  it('keeps RLS, which the console turned on for each table it created in the schema, as in public', async () => {
    const { rows } = await sql(p, `select c.relname, c.relrowsecurity from pg_class c where c.relnamespace = 'api'::regnamespace and c.relkind = 'r' order by 1`);
    expect(rows).toEqual([{ relname: 'notes', relrowsecurity: true }, { relname: 'parts', relrowsecurity: true }, { relname: 'things', relrowsecurity: true }]);
  });

  it('keeps RLS: a user sees and writes only their own notes in the schema, anon none', async () => {
    const [ada, bob] = await Promise.all([signUpUser(p), signUpUser(p)]);
    const written = await call('POST', '/rest/v1/notes', { headers: { ...p.anon, ...bearer(ada.token), ...intoApi }, body: { id: 1, body: 'ada’s' } });
    expect(written.status, written.text).toBe(201);
    const forged = await call('POST', '/rest/v1/notes', { headers: { ...p.anon, ...bearer(bob.token), ...intoApi }, body: { id: 2, owner: ada.id, body: 'as ada' } });
    expect(forged.status).toBe(403);
    expect((await call('GET', '/rest/v1/notes?select=body', { headers: { ...p.anon, ...bearer(ada.token), ...api } })).body).toEqual([{ body: 'ada’s' }]);
    expect((await call('GET', '/rest/v1/notes', { headers: { ...p.anon, ...bearer(bob.token), ...api } })).body).toEqual([]);
    expect((await call('GET', '/rest/v1/notes', { headers: { ...p.anon, ...api } })).body).toEqual([]);
  });

  it('answers as PostgreSQL decides for a schema the roles were given nothing on, and an exposed schema that does not exist has no tables', async () => {
    const denied = await call('GET', '/rest/v1/secrets', { headers: { ...p.anon, 'accept-profile': 'hidden' } });
    expect([denied.status, denied.body.code]).toEqual([401, '42501']);
    expect(denied.text).not.toContain('kept');
    const missing = await call('GET', '/rest/v1/things', { headers: { ...p.anon, 'accept-profile': 'missing' } });
    expect([missing.status, missing.body.message]).toEqual([404, 'relation "missing.things" does not exist']);
  });

  it('describes the schema Accept-Profile names at the root', async () => {
    const root = await call('GET', '/rest/v1/', { headers: { ...p.anon, ...api } });
    expect(root.status, root.text).toBe(200);
    expect(Object.keys(root.body.paths)).toEqual(expect.arrayContaining(['/things', '/parts', '/notes', '/rpc/hello', '/rpc/count_things']));
    expect(root.headers.get('content-profile')).toBe('api');
    const publicRoot = await call('GET', '/rest/v1/', { headers: p.anon });
    expect(Object.keys(publicRoot.body.paths)).not.toContain('/parts');
  });

  it('follows the schema’s changes made through the SQL console', async () => {
    await sql(p, `create table api.later (id int primary key); create policy "read" on api.later for select using (true); grant select on api.later to anon; insert into api.later values (7);`);
    await expect.poll(async () => (await call('GET', '/rest/v1/later', { headers: { ...p.anon, ...api } })).body, { timeout: 10_000, interval: 100 }).toEqual([{ id: 7 }]);
  });

  it('stops serving a schema taken out of the settings', async () => {
    const answer = await call('PATCH', settingsUrl(), { headers: bearer(p.operator.token), body: { exposedSchemas: ['api'] } });
    expect(answer.status, answer.text).toBe(200);
    // api is now the default schema, and public is no longer served.
    await expect.poll(async () => (await call('GET', '/rest/v1/things?select=name&id=eq.1', { headers: p.anon })).body, { timeout: 10_000, interval: 100 }).toEqual([{ name: 'api one' }]);
    const refused = await call('GET', '/rest/v1/things', { headers: { ...p.anon, 'accept-profile': 'public' } });
    expect([refused.status, refused.body.code]).toEqual([406, 'invalid_schema']);
    // One schema: no Content-Profile, as PostgREST.
    expect((await call('GET', '/rest/v1/things', { headers: p.anon })).headers.get('content-profile')).toBeNull();
  });
});
