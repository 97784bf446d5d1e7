/**
 * `createManagementClient` against the real stack: each `/api` group of
 * API.md — platform auth, teams, projects, keys, tables, columns, foreign
 * keys, rows, buckets, SQL, users, auth settings, providers, data API
 * settings, history, the dev inbox — once succeeding and once refused, the refusal resolved as an
 * error with its status. Storage objects are in client-storage.e2e.test.ts.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createManagementClient, type ManagementClient, type OperationAnswer, type Project } from '../src/index';
import { deadBaseUrl, newEmail, PASSWORD } from './client-fixtures';

let m: ManagementClient;
let project: Project;
const base = () => inject('baseUrl');
/** The resource a change answered once applied; these tests expect no change to outlast the 30 s wait. */
const applied = <T extends object>(data: T | OperationAnswer | null): T => {
  if (!data || 'operation' in data) throw new Error(`expected the applied resource, got ${JSON.stringify(data)}`);
  return data;
};
const id = () => project.id;

beforeAll(async () => {
  m = createManagementClient(base());
  const { error } = await m.auth.signUp({ email: newEmail('operator'), password: PASSWORD, name: 'Operator' });
  expect(error).toBeNull();
  const created = await m.projects.create({ name: 'managed app' });
  expect(created.error).toBeNull();
  project = applied(created.data);
});

describe('platform accounts', () => {
  it('signs up, signs in, refreshes and answers me, switching the client to each new token', async () => {
    const email = newEmail('op');
    const client = createManagementClient(base());
    const signedUp = await client.auth.signUp({ email, password: PASSWORD, name: 'Op' });
    expect(signedUp.data).toMatchObject({ user: { email, name: 'Op' }, team: { id: expect.any(String) } });
    expect(client.auth.getAccessToken().data!.accessToken).toBe(signedUp.data!.accessToken);
    expect((await client.auth.signIn({ email, password: PASSWORD })).error).toBeNull();
    const refreshed = await client.auth.refresh();
    expect(refreshed.error).toBeNull();
    expect(client.auth.getAccessToken().data!.accessToken).toBe(refreshed.data!.accessToken);
    expect((await client.auth.me()).data).toMatchObject({ email, teams: [expect.objectContaining({ role: 'owner' })] });
  });

  it('refuses a taken email, a wrong password, a bad refresh token and a missing token', async () => {
    const client = createManagementClient(base());
    const email = newEmail('op');
    await client.auth.signUp({ email, password: PASSWORD });
    expect((await client.auth.signUp({ email, password: PASSWORD })).error).toMatchObject({ status: 409 });
    expect((await client.auth.signIn({ email, password: 'wrong password' })).error).toMatchObject({ code: 'invalid_credentials', status: 400 });
    expect((await client.auth.refresh('not-a-refresh-token')).error).toMatchObject({ status: 401 });
    expect((await createManagementClient(base()).auth.me()).error).toMatchObject({ status: 401 });
  });
});

describe('teams', () => {
  it('creates a team, lists it and adds a member; refuses an unknown account with 404', async () => {
    const team = await m.teams.create({ name: 'Crew' });
    expect(team.data).toMatchObject({ id: expect.any(String), name: 'Crew' });
    expect((await m.teams.list()).data?.map((t) => t.name)).toContain('Crew');
    const email = newEmail('member');
    await createManagementClient(base()).auth.signUp({ email, password: PASSWORD });
    expect((await m.teams.addMember(team.data!.id, { email, role: 'admin' })).data).toMatchObject({ email, role: 'admin' });
    expect((await m.teams.addMember(team.data!.id, { email: newEmail('nobody') })).error).toMatchObject({ code: 'not_found', status: 404 });
  });
});

describe('projects and keys', () => {
  it('lists and gets projects; refuses an unknown one with 404 and an empty name with 400', async () => {
    expect(project).toMatchObject({ name: 'managed app', status: 'active', anonKey: expect.stringMatching(/^bp_anon_/) });
    expect((await m.projects.list()).data?.map((p) => p.id)).toContain(id());
    expect((await m.projects.list({ teamId: project.teamId })).data?.map((p) => p.id)).toContain(id());
    expect((await m.projects.get(id())).data?.id).toBe(id());
    expect((await m.projects.get('00000000-0000-4000-8000-000000000000')).error).toMatchObject({ status: 404 });
    expect((await m.projects.create({ name: '' })).error).toMatchObject({ code: 'invalid_request', status: 400 });
  });

  it('deletes a project; a second delete is refused', async () => {
    const doomed = applied((await m.projects.create({ name: 'doomed' })).data);
    expect((await m.projects.delete(doomed.id)).data).toMatchObject({ id: doomed.id, status: 'deleted' });
    expect((await m.projects.delete(doomed.id)).error?.status).toBeGreaterThanOrEqual(400);
  });

  it('shows and rotates keys; refuses them to the service key with 403', async () => {
    const keys = await m.keys.get(id());
    expect(keys.data).toEqual({ anonKey: project.anonKey, serviceKey: project.serviceKey });
    const rotated = await m.keys.rotate(id(), 'anon');
    expect(rotated.data!.anonKey).not.toBe(project.anonKey);
    project = { ...project, anonKey: rotated.data!.anonKey };
    const service = createManagementClient(base(), { serviceKey: project.serviceKey! });
    expect((await service.keys.get(id())).error).toMatchObject({ code: 'forbidden', status: 403 });
    expect((await service.tables.list(id())).error).toBeNull();
  });
});

describe('schema and rows', () => {
  it('creates, lists and drops tables; refuses a taken name and an unknown table', async () => {
    const table = await m.tables.create(id(), { name: 'authors', columns: [{ name: 'name', type: 'text', nullable: false }] });
    expect(table.data).toMatchObject({ name: 'authors', primaryKey: ['id'], rlsEnabled: true });
    await m.tables.create(id(), { name: 'scratch', columns: [] });
    expect((await m.tables.list(id())).data?.map((t) => t.name)).toEqual(expect.arrayContaining(['authors', 'scratch']));
    expect((await m.tables.create(id(), { name: 'authors', columns: [] })).error).toMatchObject({ status: 409 });
    expect((await m.tables.drop(id(), 'scratch')).error).toBeNull();
    expect((await m.tables.drop(id(), 'scratch')).error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('adds, lists, updates and removes columns; refuses a column of an unknown table', async () => {
    expect((await m.columns.add(id(), 'authors', { name: 'bio', type: 'text' })).data).toMatchObject({ name: 'bio', type: 'text', nullable: true });
    expect((await m.columns.update(id(), 'authors', 'bio', { name: 'about' })).data).toMatchObject({ name: 'about' });
    expect((await m.columns.list(id(), 'authors')).data?.map((c) => c.name)).toEqual(['id', 'name', 'about']);
    expect((await m.columns.remove(id(), 'authors', 'about')).error).toBeNull();
    expect((await m.columns.add(id(), 'nope', { name: 'x', type: 'text' })).error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('adds, lists and removes foreign keys; refuses one to an unknown table', async () => {
    await m.tables.create(id(), { name: 'books', columns: [{ name: 'title', type: 'text' }, { name: 'author_id', type: 'int8' }] });
    const fk = await m.foreignKeys.add(id(), 'books', { name: 'books_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] } });
    expect(fk.data).toMatchObject({ name: 'books_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] } });
    expect((await m.foreignKeys.list(id(), 'books')).data?.map((f) => f.name)).toEqual(['books_author']);
    expect((await m.foreignKeys.remove(id(), 'books', 'books_author')).error).toBeNull();
    expect((await m.foreignKeys.add(id(), 'books', { columns: ['author_id'], references: { table: 'nope', columns: ['id'] } })).error?.status).toBeGreaterThanOrEqual(400);
  });

  it('inserts, lists, updates and removes rows; refuses an unknown column with 400', async () => {
    const ada = await m.rows.insert(id(), 'authors', { name: 'Ada' });
    expect(ada.data).toMatchObject({ name: 'Ada', id: expect.anything() });
    await m.rows.insert(id(), 'authors', { name: 'Bob' });
    const page = await m.rows.list(id(), 'authors', { order: 'name.desc', limit: 1, filters: { name: 'like.*' } });
    expect(page.data).toEqual({ rows: [expect.objectContaining({ name: 'Bob' })], total: 2 });
    expect((await m.rows.update(id(), 'authors', { id: ada.data!.id }, { name: 'Ada L.' })).data).toMatchObject({ name: 'Ada L.' });
    expect((await m.rows.remove(id(), 'authors', { id: ada.data!.id })).data).toMatchObject({ name: 'Ada L.' });
    expect((await m.rows.insert(id(), 'authors', { nope: 1 })).error).toMatchObject({ status: 400 });
  });

  it('executes SQL as the owner; a syntax error is 400 with its SQLSTATE', async () => {
    const result = await m.sql.execute(id(), 'select count(*)::int as n from authors');
    expect(result.data).toMatchObject({ columns: [{ name: 'n' }], rows: [{ n: 1 }], rowCount: 1, duration: expect.any(Number) });
    expect((await m.sql.execute(id(), 'selec 1')).error).toMatchObject({ code: '42601', status: 400 });
  });
});

describe('storage buckets', () => {
  it('creates, lists, toggles and removes buckets; refuses a taken name and an unknown bucket', async () => {
    expect((await m.storage.buckets.create(id(), { name: 'avatars', fileSizeLimit: 1024 })).data).toMatchObject({ name: 'avatars', public: false, fileSizeLimit: 1024 });
    expect((await m.storage.buckets.update(id(), 'avatars', { public: true })).data).toMatchObject({ public: true });
    expect((await m.storage.buckets.list(id())).data?.map((b) => b.name)).toContain('avatars');
    expect((await m.storage.buckets.create(id(), { name: 'avatars' })).error).toMatchObject({ status: 409 });
    expect((await m.storage.buckets.remove(id(), 'avatars', { force: true })).error).toBeNull();
    expect((await m.storage.buckets.remove(id(), 'avatars')).error).toMatchObject({ code: 'not_found', status: 404 });
  });
});

describe('end users and auth settings', () => {
  it('creates, lists, updates and removes users; refuses a taken email with 409', async () => {
    const email = newEmail('managed');
    const user = await m.users.create(id(), { email, password: PASSWORD, emailVerified: true });
    expect(user.data).toMatchObject({ email, emailVerified: true });
    expect((await m.users.list(id(), { search: email })).data).toMatchObject({ users: [{ email }], total: 1 });
    expect((await m.users.update(id(), user.data!.id, { firstName: 'Grace' })).data).toMatchObject({ firstName: 'Grace' });
    expect((await m.users.create(id(), { email })).error).toMatchObject({ code: 'user_already_exists', status: 409 });
    expect((await m.users.remove(id(), user.data!.id)).data?.id).toBe(user.data!.id);
    expect((await m.users.remove(id(), user.data!.id)).error).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('reads and changes auth settings; refuses a lifetime under a minute with 400', async () => {
    expect((await m.authSettings.get(id())).data).toMatchObject({ accessTokenTtl: 3600, allowSignups: true });
    expect((await m.authSettings.update(id(), { accessTokenTtl: 900 })).data).toMatchObject({ accessTokenTtl: 900 });
    expect((await m.authSettings.update(id(), { accessTokenTtl: 5 })).error).toMatchObject({ status: 400 });
  });

  it('calls the providers endpoints at their pinned paths (served once social login lands: 404 until then)', async () => {
    expect((await m.providers.list(id())).error).toMatchObject({ status: 404 });
    expect((await m.providers.update(id(), 'github', { enabled: true, clientId: 'id', clientSecret: 'secret' })).error).toMatchObject({ status: 404 });
  });
});

describe('data API settings', () => {
  it('reads and changes the exposed schemas and the row cap; refuses a platform schema with 400', async () => {
    const fresh = applied((await m.projects.create({ name: 'rest settings' })).data);
    expect(await m.restSettings.get(fresh.id)).toEqual({ data: { exposedSchemas: ['public'], maxRows: null }, error: null });
    expect((await m.restSettings.update(fresh.id, { exposedSchemas: ['public', 'api'] })).data).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    expect((await m.restSettings.get(fresh.id)).data).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    expect((await m.restSettings.update(fresh.id, { maxRows: 50 })).data).toEqual({ exposedSchemas: ['public', 'api'], maxRows: 50 });
    const refused = await m.restSettings.update(fresh.id, { exposedSchemas: ['public', 'auth'] });
    expect(refused).toMatchObject({ data: null, error: { code: 'invalid_request', status: 400, message: expect.stringContaining('"auth"') } });
    expect((await m.restSettings.get('00000000-0000-4000-8000-000000000000')).error).toMatchObject({ status: 404 });
  });
});

describe('history and the dev inbox', () => {
  it('reads events, operations and one operation; refuses an unknown operation with 404', async () => {
    const events = await m.history.events(id(), { limit: 2 });
    expect(events.data?.events.map((e) => e.type)[0]).toBe('ProjectCreated');
    expect(events.data?.events).toHaveLength(2);
    const operations = await m.history.operations(id());
    const first = operations.data!.at(-1)!;
    expect(first).toMatchObject({ status: 'succeeded' });
    expect((await m.history.operation(id(), first.id)).data?.id).toBe(first.id);
    expect((await m.history.operation(id(), '00000000-0000-4000-8000-000000000000')).error).toMatchObject({ status: 404 });
  });

  it('reads the dev inbox; refuses it without a token', async () => {
    expect((await m.devInbox.list(newEmail('nobody'))).data).toEqual([]);
    expect((await createManagementClient(base()).devInbox.list('a@example.com')).error).toMatchObject({ status: 401 });
  });
});

it('resolves a request that gets no answer as network_error, status 0', async () => {
  const offline = createManagementClient(await deadBaseUrl(), { accessToken: 'x' });
  expect(await offline.projects.list()).toMatchObject({ data: null, error: { code: 'network_error', status: 0 } });
});
