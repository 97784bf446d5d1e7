/**
 * Who may call which management route (API.md → Credentials), as one matrix:
 * every project-scoped route refuses callers without a right to the project
 * (nobody, an end user's token, the anon key, another team's operator,
 * another project's service key, a deleted project's service key) with the
 * same status and code, and records nothing; the operator-only routes refuse
 * every project key and end-user token; a teammate of any role is let in;
 * an operation id is looked up in the project of the path only; an operator
 * taken out of the team is refused at once, on both planes.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { apikey, bearer, call, createProject, scenarios, signUpOperator, type Operator, type ProjectAnswer, type Scenario } from '../../deploy/test/http';

let ada: Operator;
let bob: Operator;
let teammate: Operator;
let project: ProjectAnswer;
let bobsProject: ProjectAnswer;
let deleted: ProjectAnswer;
let userToken: string;
let ownOperation: string;
let bobsOperation: string;

beforeAll(async () => {
  [ada, bob, teammate] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob'), signUpOperator('Teammate')]);
  [project, bobsProject, deleted] = await Promise.all([createProject(ada, 'authz'), createProject(bob, 'bob authz'), createProject(ada, 'authz deleted')]);
  const removed = await call('DELETE', `/api/projects/${deleted.id}`, { headers: bearer(ada.token) });
  expect(removed.status, removed.text).toBe(200);
  const joined = await call('POST', `/api/teams/${ada.teamId}/members`, { headers: bearer(ada.token), body: { email: teammate.email, role: 'member' } });
  expect(joined.status, joined.text).toBe(201);
  const table = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(ada.token), body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(table.status, table.text).toBe(201);
  const bucket = await call('POST', `/api/projects/${project.id}/storage/buckets`, { headers: bearer(ada.token), body: { name: 'files' } });
  expect(bucket.status, bucket.text).toBe(201);
  const user = await call('POST', '/rest/v1/auth/signup', { headers: apikey(project.anonKey), body: { email: `user-${randomUUID()}@example.com`, password: 'correct horse battery' } });
  expect(user.status, user.text).toBe(201);
  userToken = user.body.accessToken;
  ownOperation = (await call('GET', `/api/projects/${project.id}/operations`, { headers: bearer(ada.token) })).body[0].id;
  bobsOperation = (await call('GET', `/api/projects/${bobsProject.id}/operations`, { headers: bearer(bob.token) })).body[0].id;
});

const base = () => `/api/projects/${project.id}`;

type ProjectRoute = { method: string; label: string; path: () => string; body?: unknown; write?: boolean };
/** Project-scoped routes; `write` ones must record nothing when refused. */
const PROJECT_ROUTES: ProjectRoute[] = [
  { method: 'GET', label: '/api/projects/:id', path: base },
  { method: 'DELETE', label: '/api/projects/:id', path: base, write: true },
  { method: 'GET', label: '/api/projects/:id/keys', path: () => `${base()}/keys` },
  { method: 'POST', label: '/api/projects/:id/keys/rotate', path: () => `${base()}/keys/rotate`, body: { kind: 'service' }, write: true },
  { method: 'GET', label: '/api/projects/:id/events', path: () => `${base()}/events` },
  { method: 'GET', label: '/api/projects/:id/operations', path: () => `${base()}/operations` },
  { method: 'GET', label: '/api/projects/:id/operations/:opId', path: () => `${base()}/operations/${ownOperation}` },
  { method: 'POST', label: '/api/projects/:id/ping', path: () => `${base()}/ping`, write: true },
  { method: 'GET', label: '/api/projects/:id/tables', path: () => `${base()}/tables` },
  { method: 'POST', label: '/api/projects/:id/tables', path: () => `${base()}/tables`, body: { name: 'intruder', columns: [{ name: 'x', type: 'text' }] }, write: true },
  { method: 'DELETE', label: '/api/projects/:id/tables/notes', path: () => `${base()}/tables/notes`, write: true },
  { method: 'GET', label: '/api/projects/:id/tables/notes/columns', path: () => `${base()}/tables/notes/columns` },
  { method: 'POST', label: '/api/projects/:id/tables/notes/columns', path: () => `${base()}/tables/notes/columns`, body: { name: 'x', type: 'text' }, write: true },
  { method: 'GET', label: '/api/projects/:id/tables/notes/foreign-keys', path: () => `${base()}/tables/notes/foreign-keys` },
  { method: 'GET', label: '/api/projects/:id/tables/notes/rows', path: () => `${base()}/tables/notes/rows` },
  { method: 'POST', label: '/api/projects/:id/tables/notes/rows', path: () => `${base()}/tables/notes/rows`, body: { data: { body: 'intruder' } } },
  { method: 'GET', label: '/api/projects/:id/auth/settings', path: () => `${base()}/auth/settings` },
  { method: 'PATCH', label: '/api/projects/:id/auth/settings', path: () => `${base()}/auth/settings`, body: { allowSignups: false }, write: true },
  { method: 'GET', label: '/api/projects/:id/rest/settings', path: () => `${base()}/rest/settings` },
  { method: 'PATCH', label: '/api/projects/:id/rest/settings', path: () => `${base()}/rest/settings`, body: { exposedSchemas: ['public', 'api'] }, write: true },
  { method: 'GET', label: '/api/projects/:id/auth/users', path: () => `${base()}/auth/users` },
  { method: 'POST', label: '/api/projects/:id/auth/users', path: () => `${base()}/auth/users`, body: { email: 'intruder@example.com' } },
  { method: 'GET', label: '/api/projects/:id/storage/buckets', path: () => `${base()}/storage/buckets` },
  { method: 'POST', label: '/api/projects/:id/storage/buckets', path: () => `${base()}/storage/buckets`, body: { name: 'intruder' }, write: true },
  { method: 'DELETE', label: '/api/projects/:id/storage/buckets/files?force=true', path: () => `${base()}/storage/buckets/files?force=true`, write: true },
  { method: 'POST', label: '/api/sql/execute', path: () => '/api/sql/execute', body: { get projectId() { return project.id; }, query: 'create table intruder (id int)' }, write: true },
];

type Stranger = { who: string; headers: () => Record<string, string>; status: number; code: string; anonKey?: true };
/** Callers with no right to the project, and how each is refused. */
const STRANGERS: Stranger[] = [
  { who: 'nobody', headers: () => ({}), status: 401, code: 'invalid_token' },
  { who: 'an end user’s token', headers: () => bearer(userToken), status: 401, code: 'invalid_token' },
  { who: 'an end user’s token with the anon key', headers: () => ({ ...bearer(userToken), ...apikey(project.anonKey) }), status: 401, code: 'invalid_token', anonKey: true },
  { who: 'the anon key', headers: () => apikey(project.anonKey), status: 403, code: 'service_key_required', anonKey: true },
  { who: 'another team’s operator', headers: () => bearer(bob.token), status: 404, code: 'not_found' },
  { who: 'another project’s service key', headers: () => apikey(bobsProject.serviceKey), status: 401, code: 'invalid_api_key' },
  { who: 'a deleted project’s service key', headers: () => apikey(deleted.serviceKey), status: 401, code: 'invalid_api_key' },
];

/** `route` called by `stranger`: refused with the stranger's status and code, and, for a write, nothing recorded. */
function refusal(route: ProjectRoute, stranger: Stranger): Scenario {
  return {
    name: `${route.method} ${route.label} by ${stranger.who}`,
    method: route.method,
    url: route.path,
    headers: stranger.headers,
    body: route.body,
    expectedStatus: stranger.status,
    expectedContent: [stranger.code],
    expectedEvents: route.write ? { projectId: () => project.id, types: [] } : undefined,
  };
}

describe('project-scoped routes refuse whoever has no right to the project', () => {
  scenarios(PROJECT_ROUTES.flatMap((route) => STRANGERS.map((stranger) => refusal(route, stranger))));

  // The object routes (served by the data plane) let the anon key in, with or without a user's token: RLS decides there.
  const objects = '/api/projects/:id/storage/buckets/files/objects';
  scenarios(
    [
      { method: 'GET', label: objects, path: () => `${base()}/storage/buckets/files/objects` },
      { method: 'GET', label: `${objects}/download`, path: () => `${base()}/storage/buckets/files/objects/download?path=a.txt` },
      { method: 'DELETE', label: objects, path: () => `${base()}/storage/buckets/files/objects`, body: { paths: ['a.txt'] } },
    ].flatMap((route) => STRANGERS.filter((stranger) => !stranger.anonKey).map((stranger) => refusal(route, stranger))),
  );

  it('leaves the project as it was', async () => {
    const tables = await call('GET', `${base()}/tables`, { headers: bearer(ada.token) });
    expect(tables.body.map((t: { name: string }) => t.name)).toEqual(['notes']);
    const rows = await call('GET', `${base()}/tables/notes/rows`, { headers: bearer(ada.token) });
    expect(rows.body).toEqual({ rows: [], total: 0 });
    const users = await call('GET', `${base()}/auth/users?search=intruder`, { headers: bearer(ada.token) });
    expect(users.body.total).toBe(0);
    const keys = await call('GET', `${base()}/keys`, { headers: bearer(ada.token) });
    expect(keys.body).toEqual({ anonKey: project.anonKey, serviceKey: project.serviceKey });
  });
});

describe('operator-only routes refuse project keys and end-user tokens', () => {
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/api/auth/me'],
    ['GET', '/api/teams'],
    ['POST', '/api/teams', { name: 'by a key' }],
    ['GET', '/api/projects'],
    ['POST', '/api/projects', { name: 'by a key' }],
    ['GET', '/api/dev/inbox'],
  ];
  const callers: Array<[string, () => Record<string, string>, number, string]> = [
    ['an end user’s token', () => bearer(userToken), 401, 'invalid_token'],
    ['the anon key', () => apikey(project.anonKey), 403, 'service_key_required'],
    ['the service key', () => apikey(project.serviceKey), 403, 'forbidden'],
  ];
  scenarios(
    routes.flatMap(([method, url, body]) =>
      callers.map(([who, headers, status, code]): Scenario => ({ name: `${method} ${url} by ${who}`, method, url, headers, body, expectedStatus: status, expectedContent: [code] })),
    ),
  );
});

describe('a teammate of any role', () => {
  it('reads every part of the team’s project', async () => {
    for (const suffix of ['', '/keys', '/events', '/operations', '/tables', '/tables/notes/rows', '/auth/settings', '/auth/users', '/rest/settings', '/storage/buckets', '/storage/buckets/files/objects']) {
      const answer = await call('GET', `${base()}${suffix}`, { headers: bearer(teammate.token) });
      expect(answer.status, `${suffix}: ${answer.text}`).toBe(200);
    }
  });
});

describe('operations', () => {
  it('are looked up in the project of the path only', async () => {
    expect((await call('GET', `${base()}/operations/${ownOperation}`, { headers: bearer(ada.token) })).status).toBe(200);
    const foreign = await call('GET', `${base()}/operations/${bobsOperation}`, { headers: bearer(ada.token) });
    expect(foreign.status, foreign.text).toBe(404);
    expect(foreign.text).not.toContain(bobsProject.id);
  });
});

describe('an operator taken out of the team', () => {
  it('is refused at once on the control plane and on the object routes, with the token issued before', async () => {
    const leaver = await signUpOperator('Leaver');
    const joined = await call('POST', `/api/teams/${ada.teamId}/members`, { headers: bearer(ada.token), body: { email: leaver.email, role: 'admin' } });
    expect(joined.status, joined.text).toBe(201);
    const urls = [base(), `${base()}/keys`, `${base()}/storage/buckets/files/objects`];
    for (const url of urls) expect((await call('GET', url, { headers: bearer(leaver.token) })).status, url).toBe(200);
    // No route removes a member yet (API.md lists none): taken out as an administrator of the platform database would.
    const db = new pg.Client({ connectionString: inject('databaseUrl') });
    await db.connect();
    try {
      await db.query('delete from team_members where team_id = $1 and account_id = $2', [ada.teamId, leaver.accountId]);
    } finally {
      await db.end();
    }
    for (const url of urls) {
      const answer = await call('GET', url, { headers: bearer(leaver.token) });
      expect(answer.status, `${url}: ${answer.text}`).toBe(404);
    }
    const listed = await call('GET', '/api/projects', { headers: bearer(leaver.token) });
    expect(listed.body.map((p: { id: string }) => p.id)).not.toContain(project.id);
  });
});

describe('a deleted account', () => {
  it('is refused with the token issued before, and makes no team', async () => {
    const gone = await signUpOperator('Gone');
    // No route deletes an account (API.md lists none): deleted as an administrator of the platform database would.
    const db = new pg.Client({ connectionString: inject('databaseUrl') });
    await db.connect();
    try {
      await db.query('delete from accounts where id = $1', [gone.accountId]);
      const created = await call('POST', '/api/teams', { headers: bearer(gone.token), body: { name: 'ghost team' } });
      expect(created.status, created.text).toBe(401);
      expect(created.body.code).toBe('invalid_token');
      const { rows } = await db.query(`select count(*)::int as n from teams where name = 'ghost team'`);
      expect(rows[0].n).toBe(0);
    } finally {
      await db.end();
    }
    expect((await call('GET', '/api/auth/me', { headers: bearer(gone.token) })).status).toBe(401);
    expect((await call('GET', `${base()}`, { headers: bearer(gone.token) })).status).toBe(404);
  });
});
