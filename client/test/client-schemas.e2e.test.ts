/**
 * Schemas other than `public` through the client, as in supabase-js: the
 * operator exposes them with `restSettings.update`, then `client.schema(name)`
 * or `createClient(…, { db: { schema } })` reads, writes and calls functions
 * there (postgrest-js sends `Accept-Profile`/`Content-Profile`), with the
 * same `{ data, error }` rule as `client.from`.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, createManagementClient, type BaseplaneClient, type ManagementClient, type Project } from '../src/index';
import { newEmail, PASSWORD, recordingFetch } from './client-fixtures';

let m: ManagementClient;
let project: Project;
let anon: BaseplaneClient;
let service: BaseplaneClient;
const names = (rows: Array<{ name: string }> | null) => (rows ?? []).map((r) => r.name);

beforeAll(async () => {
  m = createManagementClient(inject('baseUrl'));
  expect((await m.auth.signUp({ email: newEmail('operator'), password: PASSWORD })).error).toBeNull();
  const created = await m.projects.create({ name: 'client schemas' });
  if (!created.data || 'operation' in created.data) throw new Error(`project not created: ${JSON.stringify(created)}`);
  project = created.data;
  // The same table name in both schemas, with other rows, so an answer tells which one it read.
  const setUp = await m.sql.execute(project.id, `
    create table things (id int primary key, name text);
    create policy "read" on things for select using (true);
    insert into things values (1, 'public thing');

    create schema api;
    grant usage on schema api to anon, authenticated, service_role;
    create table api.things (id int primary key, name text);
    -- The console turns RLS on for api's tables as for public's: this policy lets anyone read.
    create policy "read" on api.things for select using (true);
    grant select, insert, update, delete on all tables in schema api to anon, authenticated, service_role;
    insert into api.things values (1, 'api one'), (2, 'api two');
    create function api.hello(name text) returns text language sql as $$ select 'hello ' || name $$;
    grant execute on all functions in schema api to anon, authenticated, service_role;
  `);
  expect(setUp.error).toBeNull();
  expect((await m.restSettings.update(project.id, { exposedSchemas: ['public', 'api'] })).data).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
  anon = createClient(inject('baseUrl'), project.anonKey!);
  service = createClient(inject('baseUrl'), project.serviceKey!);
});

describe('client.schema(name)', () => {
  it('reads the exposed schema once the data plane follows the settings (within a second or so)', async () => {
    await expect.poll(async () => (await anon.schema('api').from('things').select('name')).error, { timeout: 10_000, interval: 100 }).toBeNull();
    const fromApi = await anon.schema('api').from('things').select('name').order('id');
    expect(fromApi).toMatchObject({ error: null, status: 200, data: [{ name: 'api one' }, { name: 'api two' }] });
  });

  it('leaves client.from() on public', async () => {
    expect(names((await anon.from('things').select('name')).data)).toEqual(['public thing']);
  });

  it('sends the schema as Accept-Profile on reads and Content-Profile on writes', async () => {
    const recorded = recordingFetch();
    const client = createClient(inject('baseUrl'), project.serviceKey!, { fetch: recorded.fetch });
    await client.schema('api').from('things').select('name');
    await client.schema('api').from('things').delete().eq('id', 99);
    expect(recorded.requests.map((r) => [r.method, r.headers.get('accept-profile'), r.headers.get('content-profile')])).toEqual([
      ['GET', 'api', null],
      ['DELETE', null, 'api'],
    ]);
  });

  it('inserts into the schema named, not into public', async () => {
    const inserted = await service.schema('api').from('things').insert({ id: 3, name: 'api three' }).select('name');
    expect(inserted).toMatchObject({ error: null, status: 201, data: [{ name: 'api three' }] });
    expect(names((await anon.schema('api').from('things').select('name').order('id')).data)).toEqual(['api one', 'api two', 'api three']);
    expect(names((await anon.from('things').select('name')).data)).toEqual(['public thing']);
    const owner = await m.sql.execute(project.id, 'select (select count(*)::int from api.things) as api, (select count(*)::int from public.things) as public');
    expect(owner.data?.rows).toEqual([{ api: 3, public: 1 }]);
  });

  it('calls the schema’s functions with rpc()', async () => {
    expect(await anon.schema('api').rpc('hello', { name: 'x' })).toMatchObject({ error: null, data: 'hello x' });
    // public has no hello: the function is the schema's own.
    expect((await anon.rpc('hello', { name: 'x' })).error).toMatchObject({ status: 404 });
  });

  it('resolves a schema the project does not expose as 406 invalid_schema', async () => {
    const refused = await anon.schema('nope').from('things').select();
    expect(refused).toMatchObject({ data: null, status: 406, error: { code: 'invalid_schema', message: expect.stringContaining('public, api'), status: 406 } });
    expect(refused.error).toHaveProperty('details');
    expect(refused.error).toHaveProperty('hint');
    const write = await service.schema('nope').from('things').insert({ id: 9, name: 'x' });
    expect(write.error).toMatchObject({ code: 'invalid_schema', status: 406 });
    expect((await anon.schema('nope').rpc('hello', { name: 'x' })).error).toMatchObject({ code: 'invalid_schema', status: 406 });
  });
});

describe('createClient(…, { db: { schema } })', () => {
  it('reads, writes and calls functions in that schema by default; schema() still reaches the others', async () => {
    const api = createClient(inject('baseUrl'), project.serviceKey!, { db: { schema: 'api' } });
    expect(names((await api.from('things').select('name').order('id')).data)).toEqual(['api one', 'api two', 'api three']);
    expect((await api.from('things').delete().eq('id', 3).select('name')).data).toEqual([{ name: 'api three' }]);
    expect((await api.rpc('hello', { name: 'y' })).data).toBe('hello y');
    expect(names((await api.schema('public').from('things').select('name')).data)).toEqual(['public thing']);
  });

  it('resolves a default schema the project does not expose as 406 invalid_schema', async () => {
    const nope = createClient(inject('baseUrl'), project.anonKey!, { db: { schema: 'nope' } });
    expect(await nope.from('things').select()).toMatchObject({ data: null, error: { code: 'invalid_schema', status: 406 } });
  });
});
