/**
 * `/api/projects` end to end: commands recorded as events, applied by the
 * Temporal workflow to a real tenant database, read back through the
 * projections; isolation between teams and key scopes.
 */
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { apikey, bearer, call, createProject, projectEventTypes, scenarios, signUpOperator, type Answer, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant } from '../../deploy/test/tenant';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
let bobsProject: ProjectAnswer;

async function tenantCluster<T>(work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  project = await createProject(ada, 'ada app');
  bobsProject = await createProject(bob, 'bob app');
});

describe('creating a project', () => {
  it('answers the active record with keys once the workflow has provisioned it', () => {
    expect(project).toMatchObject({ name: 'ada app', teamId: ada.teamId, status: 'active', statusDetail: null, restUrl: expect.stringMatching(/\/rest\/v1$/) });
    expect(project.anonKey).toMatch(/^bp_anon_/);
    expect(project.serviceKey).toMatch(/^bp_service_/);
  });

  it('records the command and its outcome as events, and one succeeded operation', async () => {
    expect(await projectEventTypes(project.id)).toEqual(['ProjectCreated', 'SigningKeyIssued', 'ProjectProvisioned']);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: bearer(ada.token) });
    expect(events.status).toBe(200);
    const [created, signingKey, provisioned] = events.body.events;
    expect(created).toMatchObject({ version: 1, type: 'ProjectCreated', metadata: { actor: `operator:${ada.accountId}` } });
    expect(signingKey.data.key).toMatchObject({ publicJwk: { kty: 'EC', crv: 'P-256', alg: 'ES256' }, privateJwkCipher: '[encrypted]' });
    expect(signingKey.data.key.publicJwk.d).toBeUndefined();
    expect(provisioned.metadata.correlationId).toBe(created.metadata.correlationId);
    expect(events.text).not.toContain(project.anonKey);
    expect(events.text).not.toContain('v1.');
    const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: bearer(ada.token) });
    expect(operations.body).toEqual([expect.objectContaining({ id: created.metadata.correlationId, command: 'CreateProject', status: 'succeeded', workflowId: `project-${project.id}` })]);
    const one = await call('GET', `/api/projects/${project.id}/operations/${created.metadata.correlationId}`, { headers: bearer(ada.token) });
    expect(one.body.status).toBe('succeeded');
  });

  it('pages the history with after and limit, for the service key in the query as well', async () => {
    const page = (query: string, headers: Record<string, string> = bearer(ada.token)) => call('GET', `/api/projects/${project.id}/events${query}`, { headers });
    const versions = (answer: { body: { events: { version: number }[] } }) => answer.body.events.map((e) => e.version);
    expect(versions(await page('?after=1&limit=1'))).toEqual([2]);
    expect(versions(await page('?limit=2'))).toEqual([1, 2]);
    expect((await page('?limit=0')).body).toEqual({ events: [] });
    const viaQuery = await page(`?apikey=${project.serviceKey}&after=2`, {});
    expect(viaQuery.status, viaQuery.text).toBe(200);
    expect(versions(viaQuery)).toEqual([3]);
    expect((await page('?limit=-1')).status).toBe(400);
    expect((await page('?kind=x')).status).toBe(400);
  });

  // `after` takes 12 digits; versions are int4 in the event store, and one past 2^31 - 1 failed there as a 500.
  it('answers no events after a version past any a stream can reach', async () => {
    for (const after of ['2147483647', '2147483648', '999999999999']) {
      const answer = await call('GET', `/api/projects/${project.id}/events?after=${after}&limit=1000`, { headers: bearer(ada.token) });
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toEqual({ events: [] });
    }
  });

  it('creates the tenant database, its owner role and the API roles, with CONNECT revoked from PUBLIC', async () => {
    await tenantCluster(async (db) => {
      const roles = await db.query<{ rolname: string; rolsuper: boolean; rolcreaterole: boolean; rolbypassrls: boolean; rolinherit: boolean }>(
        `select rolname, rolsuper, rolcreaterole, rolbypassrls, rolinherit from pg_roles where rolname = any($1) order by rolname`,
        [[tenantOwnerRole(project.id), 'anon', 'authenticated', 'service_role', tenantAuthenticatorRole(project.id)]],
      );
      const byName = Object.fromEntries(roles.rows.map((r) => [r.rolname, r]));
      expect(Object.keys(byName).sort()).toEqual(['anon', 'authenticated', tenantAuthenticatorRole(project.id), tenantOwnerRole(project.id), 'service_role'].sort());
      expect(byName[tenantOwnerRole(project.id)]).toMatchObject({ rolsuper: false, rolcreaterole: false });
      expect(byName.service_role!.rolbypassrls).toBe(true);
      expect(byName.anon!.rolbypassrls).toBe(false);
      expect(byName[tenantAuthenticatorRole(project.id)]!.rolinherit).toBe(false);
      const database = await db.query(
        `select has_database_privilege('anon', $1, 'connect') as anon_connect,
                has_database_privilege($2, $1, 'connect') as owner_connect,
                (select pg_get_userbyid(datdba) from pg_database where datname = $1) as owner`,
        [tenantDatabaseName(project.id), tenantOwnerRole(project.id)],
      );
      expect(database.rows[0]).toEqual({ anon_connect: false, owner_connect: true, owner: tenantOwnerRole(project.id) });
    });
    const url = new URL(inject('tenantDatabaseUrl'));
    url.pathname = `/${tenantDatabaseName(project.id)}`;
    const tenant = new pg.Client({ connectionString: url.toString() });
    await tenant.connect();
    try {
      const schemas = await tenant.query(`select nspname from pg_namespace where nspname in ('auth', 'storage') order by 1`);
      expect(schemas.rows.map((r) => r.nspname)).toEqual(['auth', 'storage']);
      await tenant.query('begin');
      await tenant.query(`select set_config('request.jwt.claims', $1, true)`, [JSON.stringify({ sub: '6f1c0d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f', role: 'authenticated' })]);
      const claims = await tenant.query('select auth.uid()::text as uid, auth.role() as role, auth.jwt() ->> $1 as sub', ['sub']);
      expect(claims.rows[0]).toEqual({ uid: '6f1c0d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f', role: 'authenticated', sub: '6f1c0d2e-8a4b-4c3d-9e2f-1a2b3c4d5e6f' });
      await tenant.query('rollback');
    } finally {
      await tenant.end();
    }
  });

  it('answers 202 with the operation under Prefer: respond-async, which then finishes', async () => {
    const accepted = await call('POST', '/api/projects', { headers: { ...bearer(ada.token), prefer: 'respond-async' }, body: { name: 'async app' } });
    expect(accepted.status).toBe(202);
    const operationId = accepted.body.operation.id;
    expect(operationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(accepted.body.operation).toMatchObject({ command: 'CreateProject', status: expect.stringMatching(/^(pending|running|succeeded)$/) });
    expect(accepted.headers.get('location')).toMatch(new RegExp(`/operations/${operationId}$`));
    const list = await call('GET', '/api/projects', { headers: bearer(ada.token) });
    const created = list.body.find((p: { name: string }) => p.name === 'async app');
    expect(created).toBeDefined();
    await expect.poll(async () => (await call('GET', `/api/projects/${created.id}/operations/${operationId}`, { headers: bearer(ada.token) })).body.status, { timeout: 30_000 }).toBe('succeeded');
    expect((await call('GET', `/api/projects/${created.id}`, { headers: bearer(ada.token) })).body.status).toBe('active');
  });
});

describe('reading projects', () => {
  it('lists the projects of the caller’s teams, filtered by teamId', async () => {
    const all = await call('GET', '/api/projects', { headers: bearer(ada.token) });
    expect(all.body.map((p: { id: string }) => p.id)).toContain(project.id);
    expect(all.body.map((p: { id: string }) => p.id)).not.toContain(bobsProject.id);
    const filtered = await call('GET', `/api/projects?teamId=${bob.teamId}`, { headers: bearer(ada.token) });
    expect(filtered.body).toEqual([]);
  });

  it('shows the project to its service key, without keys', async () => {
    const answer = await call('GET', `/api/projects/${project.id}`, { headers: apikey(project.serviceKey) });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: project.id, anonKey: null, serviceKey: null });
  });

  describe('isolation and key scope', () => {
    scenarios([
      { name: 'another team’s member gets 404', method: 'GET', url: () => `/api/projects/${project.id}`, headers: () => bearer(bob.token), expectedStatus: 404, expectedContent: ['not_found'] },
      { name: 'another team’s member cannot read its events', method: 'GET', url: () => `/api/projects/${project.id}/events`, headers: () => bearer(bob.token), expectedStatus: 404 },
      { name: 'another team’s member cannot delete it, and nothing is recorded', method: 'DELETE', url: () => `/api/projects/${project.id}`, headers: () => bearer(bob.token), expectedStatus: 404, expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'the anon key gets 403 service_key_required', method: 'GET', url: () => `/api/projects/${project.id}`, headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
      { name: 'the anon key cannot list projects', method: 'GET', url: '/api/projects', headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
      { name: 'the anon key cannot rotate keys', method: 'POST', url: () => `/api/projects/${project.id}/keys/rotate`, headers: () => apikey(project.anonKey), body: { kind: 'anon' }, expectedStatus: 403, expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a service key of another project is 401 invalid_api_key', method: 'GET', url: () => `/api/projects/${project.id}`, headers: () => apikey(bobsProject.serviceKey), expectedStatus: 401, expectedContent: ['invalid_api_key'] },
      { name: 'a service key of another project cannot delete it: 401 invalid_api_key, and nothing is recorded', method: 'DELETE', url: () => `/api/projects/${project.id}`, headers: () => apikey(bobsProject.serviceKey), expectedStatus: 401, expectedContent: ['invalid_api_key'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'its own service key cannot delete it either (a platform token is required), and nothing is recorded', method: 'DELETE', url: () => `/api/projects/${project.id}`, headers: () => apikey(project.serviceKey), expectedStatus: 403, expectedContent: ['forbidden'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a service key cannot create projects', method: 'POST', url: '/api/projects', headers: () => apikey(project.serviceKey), body: { name: 'x' }, expectedStatus: 403 },
      { name: 'a service key cannot rotate keys either (the answer holds both), and nothing is recorded', method: 'POST', url: () => `/api/projects/${project.id}/keys/rotate`, headers: () => apikey(project.serviceKey), body: { kind: 'service' }, expectedStatus: 403, expectedContent: ['forbidden'], expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a service key is not shown the keys endpoint', method: 'GET', url: () => `/api/projects/${project.id}/keys`, headers: () => apikey(project.serviceKey), expectedStatus: 403 },
      { name: 'an unknown key is 401', method: 'GET', url: () => `/api/projects/${project.id}`, headers: apikey('bp_service_nope'), expectedStatus: 401, expectedContent: ['invalid_api_key'] },
      { name: 'no credentials is 401', method: 'GET', url: '/api/projects', expectedStatus: 401 },
      { name: 'a malformed id is 400', method: 'GET', url: '/api/projects/not-a-uuid', headers: () => bearer(ada.token), expectedStatus: 400 },
      { name: 'an unknown project is 404', method: 'GET', url: '/api/projects/00000000-0000-4000-8000-000000000000', headers: () => bearer(ada.token), expectedStatus: 404 },
      { name: 'an empty name is refused', method: 'POST', url: '/api/projects', headers: () => bearer(ada.token), body: { name: '   ' }, expectedStatus: 400 },
      { name: 'a team the caller is not in is 404', method: 'POST', url: '/api/projects', headers: () => bearer(ada.token), body: { get teamId() { return bob.teamId; }, name: 'sneaky' }, expectedStatus: 404 },
      { name: 'an unknown key kind is 400', method: 'POST', url: () => `/api/projects/${project.id}/keys/rotate`, headers: () => bearer(ada.token), body: { kind: 'root' }, expectedStatus: 400, expectedEvents: { projectId: () => project.id, types: [] } },
      { name: 'a ping travels the whole apply path', method: 'POST', url: () => `/api/projects/${project.id}/ping`, headers: () => bearer(ada.token), expectedStatus: 200, expectedContent: ['"status":"succeeded"'], expectedEvents: { projectId: () => project.id, types: ['ProjectPinged', 'ProjectPingApplied'] } },
    ]);
  });
});

describe('request bodies', () => {
  it('takes a JSON content type over no body as no body, as fetch wrappers send it on a POST without one; a route that needs a body still refuses it', async () => {
    const json = { 'content-type': 'application/json' };
    const ping = await call('POST', `/api/projects/${project.id}/ping`, { headers: { ...bearer(ada.token), ...json }, raw: '' });
    expect(ping.status).toBe(200);
    expect(ping.body.operation).toMatchObject({ status: 'succeeded' });
    const create = await call('POST', '/api/projects', { headers: { ...bearer(ada.token), ...json }, raw: '' });
    expect([create.status, create.body.code]).toEqual([400, 'invalid_request']);
    const broken = await call('POST', '/api/projects', { headers: { ...bearer(ada.token), ...json }, raw: '{"name":' });
    expect([broken.status, broken.body.code]).toEqual([400, 'invalid_json']);
  });

  it('reads JSON only: a form body is 415 unsupported_media_type, and nothing is recorded', async () => {
    const before = await projectEventTypes(project.id);
    const form = await call('POST', `/api/projects/${project.id}/keys/rotate`, { headers: { ...bearer(ada.token), 'content-type': 'application/x-www-form-urlencoded' }, raw: 'kind=anon' });
    expect([form.status, form.body.code]).toEqual([415, 'unsupported_media_type']);
    expect(await projectEventTypes(project.id)).toEqual(before);
  });
});

describe('keys', () => {
  it('rotates a key as an event; the management API refuses the old one at once', async () => {
    const before = await call('GET', `/api/projects/${bobsProject.id}/keys`, { headers: bearer(bob.token) });
    expect(before.body).toEqual({ anonKey: bobsProject.anonKey, serviceKey: bobsProject.serviceKey });
    const rotated = await call('POST', `/api/projects/${bobsProject.id}/keys/rotate`, { headers: bearer(bob.token), body: { kind: 'service' } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.serviceKey).not.toBe(bobsProject.serviceKey);
    expect(rotated.body.anonKey).toBe(bobsProject.anonKey);
    expect((await projectEventTypes(bobsProject.id)).at(-1)).toBe('ApiKeyRotated');
    expect((await call('GET', `/api/projects/${bobsProject.id}`, { headers: apikey(bobsProject.serviceKey) })).status).toBe(401);
    expect((await call('GET', `/api/projects/${bobsProject.id}`, { headers: apikey(rotated.body.serviceKey) })).status).toBe(200);
    bobsProject.serviceKey = rotated.body.serviceKey;
  });
});

describe('deleting a project', () => {
  it('drops the tenant database through the workflow and keeps the history', async () => {
    const doomed = await createProject(ada, 'doomed');
    const answer = await call('DELETE', `/api/projects/${doomed.id}`, { headers: bearer(ada.token) });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ id: doomed.id, status: 'deleted', anonKey: null, serviceKey: null });
    await tenantCluster(async (db) => {
      expect((await db.query('select 1 from pg_database where datname = $1', [tenantDatabaseName(doomed.id)])).rowCount).toBe(0);
      expect((await db.query('select 1 from pg_roles where rolname = $1', [tenantOwnerRole(doomed.id)])).rowCount).toBe(0);
    });
    expect(await projectEventTypes(doomed.id)).toEqual(['ProjectCreated', 'SigningKeyIssued', 'ProjectProvisioned', 'ProjectDeletionRequested', 'ProjectDeleted']);
    const history = await call('GET', `/api/projects/${doomed.id}/events`, { headers: bearer(ada.token) });
    expect(history.body.events).toHaveLength(5);
    const list = await call('GET', '/api/projects', { headers: bearer(ada.token) });
    expect(list.body.map((p: { id: string }) => p.id)).not.toContain(doomed.id);
    const again = await call('DELETE', `/api/projects/${doomed.id}`, { headers: bearer(ada.token) });
    expect(again.status).toBe(404);
    expect((await call('GET', `/api/projects/${doomed.id}`, { headers: apikey(doomed.serviceKey) })).status).toBe(401);
  });

  it('answers commands on a project being deleted 503 project_unavailable; a second DELETE follows the deletion under way', async () => {
    const held = await createProject(ada, 'held deletion');
    const h = bearer(ada.token);
    const base = `/api/projects/${held.id}`;
    const table = await call('POST', `${base}/tables`, { headers: h, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
    expect(table.status, table.text).toBe(201);
    const tenant = await connectTenant(held.id);
    tenant.client.on('error', () => undefined);
    // A column change waiting for this lock holds the project's workflow, and the deletion queued behind it.
    await tenant.client.query('begin');
    await tenant.client.query('lock table public.notes in access share mode');
    let first: Answer;
    let waitingDelete: Promise<Answer>;
    try {
      const change = await call('POST', `${base}/tables/notes/columns`, { headers: { ...h, prefer: 'respond-async' }, body: { name: 'tag', type: 'text' } });
      expect(change.status, change.text).toBe(202);
      first = await call('DELETE', base, { headers: { ...h, prefer: 'respond-async' } });
      expect(first.status, first.text).toBe(202);
      expect((await call('GET', base, { headers: h })).body.status).toBe('deleting');

      // Project, schema and bucket commands alike (before: 409 already_exists for the first three).
      const commands: Array<[string, string, unknown]> = [
        ['POST', `${base}/keys/rotate`, { kind: 'anon' }],
        ['PATCH', `${base}/auth/settings`, { otpTtl: 300 }],
        ['PATCH', `${base}/rest/settings`, { exposedSchemas: ['public', 'api'] }],
        ['POST', `${base}/ping`, undefined],
        ['POST', `${base}/tables`, { name: 'more', columns: [{ name: 'body', type: 'text' }] }],
        ['POST', `${base}/tables/notes/columns`, { name: 'other', type: 'text' }],
        ['POST', `${base}/storage/buckets`, { name: 'files' }],
      ];
      for (const [method, url, body] of commands) {
        const refused = await call(method, url, { headers: h, body });
        expect([method, url, refused.status, refused.body]).toEqual([method, url, 503, { code: 'project_unavailable', message: 'project is being deleted', details: null, hint: null }]);
      }

      // DELETE again: the same operation to follow (202 asked async), nothing recorded again.
      const again = await call('DELETE', base, { headers: { ...h, prefer: 'respond-async' } });
      expect(again.status, again.text).toBe(202);
      expect(again.body.operation.id).toBe(first.body.operation.id);
      expect(again.headers.get('location')).toBe(`${base}/operations/${first.body.operation.id}`);
      waitingDelete = call('DELETE', base, { headers: h });
    } finally {
      await tenant.client.query('rollback');
      await tenant.end().catch(() => undefined);
    }
    // Once the deletion is through, the DELETE that waited for it is answered as the first would have been.
    const waited = await waitingDelete;
    expect(waited.status, waited.text).toBe(200);
    expect(waited.body).toMatchObject({ id: held.id, status: 'deleted', anonKey: null, serviceKey: null });
    const types = await projectEventTypes(held.id);
    expect(types.filter((t) => t === 'ProjectDeletionRequested')).toHaveLength(1);
    expect(types.at(-1)).toBe('ProjectDeleted');
  });
});
