/**
 * The operators' side of the data API's settings:
 * `/api/projects/:id/rest/settings` (which schemas `/rest/v1` serves), a
 * command recorded as an event and done once projected, over HTTP against
 * the real stack, with who may call.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apikey, bearer, call, createProject, projectEventTypes, scenarios, signUpOperator, type Operator, type ProjectAnswer, type Scenario } from '../../deploy/test/http';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
const settingsUrl = () => `/api/projects/${project.id}/rest/settings`;
const asAda = () => bearer(ada.token);
const nothingRecorded = { projectId: () => project.id, types: [] };

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  project = await createProject(ada, 'rest settings app');
});

describe('rest settings', () => {
  it('starts at the documented defaults', async () => {
    const answer = await call('GET', settingsUrl(), { headers: asAda() });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: ['public'], maxRows: null });
  });

  it('records a change as one RestSettingsUpdated event, done once projected, and answers the new settings', async () => {
    const before = (await projectEventTypes(project.id)).length;
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { exposedSchemas: ['public', 'api'] } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    expect(await projectEventTypes(project.id, before)).toEqual(['RestSettingsUpdated']);
    const events = await call('GET', `/api/projects/${project.id}/events?after=${before}`, { headers: asAda() });
    expect(events.body.events[0].data).toEqual({ projectId: project.id, changes: { exposedSchemas: ['public', 'api'] } });
    expect((await call('GET', settingsUrl(), { headers: asAda() })).body).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    // Nothing in the tenant changes: no workflow takes it, and its operation succeeded when the projector recorded it.
    const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: asAda() });
    expect(operations.body.at(-1)).toMatchObject({ command: 'UpdateRestSettings', status: 'succeeded', workflowId: null });
  });

  it('records nothing when the value is already in force', async () => {
    const before = (await projectEventTypes(project.id)).length;
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { exposedSchemas: ['public', 'api'] } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: ['public', 'api'], maxRows: null });
    expect(await projectEventTypes(project.id, before)).toEqual([]);
  });

  it('takes the order as sent: the first schema is the default', async () => {
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { exposedSchemas: ['api', 'public'] } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: ['api', 'public'], maxRows: null });
  });

  it('takes up to 16 schemas and names of 63 characters, as PostgreSQL does', async () => {
    const many = [...Array.from({ length: 15 }, (_, i) => `s${i}`), 'x'.repeat(63)];
    const answer = await call('PATCH', settingsUrl(), { headers: asAda(), body: { exposedSchemas: many } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: many, maxRows: null });
  });

  it('sets a row cap of the project’s own, and takes it back to the platform’s with null', async () => {
    const capped = await call('PATCH', settingsUrl(), { headers: asAda(), body: { maxRows: 25 } });
    expect(capped.status, capped.text).toBe(200);
    expect(capped.body.maxRows).toBe(25);
    const both = await call('PATCH', settingsUrl(), { headers: asAda(), body: { exposedSchemas: ['public'], maxRows: 1_000_000 } });
    expect(both.body).toEqual({ exposedSchemas: ['public'], maxRows: 1_000_000 });
    const back = await call('PATCH', settingsUrl(), { headers: asAda(), body: { maxRows: null } });
    expect(back.body).toEqual({ exposedSchemas: ['public'], maxRows: null });
  });

  it('lets the project’s service key read and change them', async () => {
    const answer = await call('PATCH', settingsUrl(), { headers: apikey(project.serviceKey), body: { exposedSchemas: ['public'] } });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ exposedSchemas: ['public'], maxRows: null });
    expect((await call('GET', settingsUrl(), { headers: apikey(project.serviceKey) })).body).toEqual({ exposedSchemas: ['public'], maxRows: null });
  });

  describe('refusals', () => {
    const invalid = (name: string, body: unknown, content: string[] = []): Scenario => ({
      name: `${name} is 400`, method: 'PATCH', url: settingsUrl, headers: asAda, body, expectedStatus: 400, expectedContent: ['invalid_request', ...content], expectedEvents: nothingRecorded,
    });
    scenarios([
      invalid('an empty list', { exposedSchemas: [] }),
      invalid('a schema twice', { exposedSchemas: ['public', 'api', 'public'] }),
      invalid('17 schemas', { exposedSchemas: Array.from({ length: 17 }, (_, i) => `s${i}`) }),
      invalid('a name with a dash', { exposedSchemas: ['my-api'] }),
      invalid('a name with a space', { exposedSchemas: ['my api'] }),
      invalid('a name with a quote', { exposedSchemas: ['api"; drop schema public; --'] }),
      invalid('an empty name', { exposedSchemas: [''] }),
      invalid('a name of 64 characters', { exposedSchemas: ['x'.repeat(64)] }),
      invalid('auth', { exposedSchemas: ['public', 'auth'] }, ['the schema \\"auth\\" is the platform']),
      invalid('storage', { exposedSchemas: ['storage'] }, ['storage']),
      invalid('baseplane_meta', { exposedSchemas: ['baseplane_meta'] }, ['baseplane_meta']),
      invalid('information_schema', { exposedSchemas: ['information_schema'] }, ['information_schema']),
      invalid('pg_temp', { exposedSchemas: ['pg_temp'] }, ['pg_temp']),
      invalid('pg_catalog in capitals', { exposedSchemas: ['PG_CATALOG'] }, ['PG_CATALOG']),
      invalid('an unknown setting', { exposedSchemas: ['public'], theme: 'dark' }),
      invalid('an empty change', {}),
      invalid('a string for the list', { exposedSchemas: 'public' }),
      invalid('null for the list', { exposedSchemas: null }),
      invalid('a number in the list', { exposedSchemas: [1] }),
      invalid('a list for the body', [{ exposedSchemas: ['public'] }]),
      invalid('a row cap of 0', { maxRows: 0 }),
      invalid('a negative row cap', { maxRows: -1 }),
      invalid('a fractional row cap', { maxRows: 1.5 }),
      invalid('a row cap past a million', { maxRows: 1_000_001 }),
      invalid('a row cap as text', { maxRows: '10' }),
      { name: 'the anon key is 403 service_key_required', method: 'GET', url: settingsUrl, headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
      { name: 'the anon key may not change them either', method: 'PATCH', url: settingsUrl, headers: () => apikey(project.anonKey), body: { exposedSchemas: ['api'] }, expectedStatus: 403, expectedContent: ['service_key_required'], expectedEvents: nothingRecorded },
      { name: 'a member of another team reading is told 404', method: 'GET', url: settingsUrl, headers: () => bearer(bob.token), expectedStatus: 404 },
      { name: 'a member of another team changing is told 404', method: 'PATCH', url: settingsUrl, headers: () => bearer(bob.token), body: { exposedSchemas: ['api'] }, expectedStatus: 404, expectedEvents: nothingRecorded },
      { name: 'no credentials is 401', method: 'GET', url: settingsUrl, expectedStatus: 401 },
    ]);

    it('left the settings as they were', async () => {
      expect((await call('GET', settingsUrl(), { headers: asAda() })).body).toEqual({ exposedSchemas: ['public'], maxRows: null });
    });
  });

  it('refuses a change to a deleted project with 404, as the auth settings do, recording nothing', async () => {
    const gone = await createProject(ada, 'deleted rest settings');
    const deleted = await call('DELETE', `/api/projects/${gone.id}`, { headers: asAda() });
    expect(deleted.status, deleted.text).toBe(200);
    const before = (await projectEventTypes(gone.id)).length;
    const rest = await call('PATCH', `/api/projects/${gone.id}/rest/settings`, { headers: asAda(), body: { exposedSchemas: ['api'] } });
    const auth = await call('PATCH', `/api/projects/${gone.id}/auth/settings`, { headers: asAda(), body: { otpTtl: 300 } });
    expect([rest.status, rest.body.code]).toEqual([404, 'not_found']);
    expect([auth.status, auth.body.code]).toEqual([404, 'not_found']);
    // Its team may still read what was in force, as with the auth settings.
    expect((await call('GET', `/api/projects/${gone.id}/rest/settings`, { headers: asAda() })).status).toBe((await call('GET', `/api/projects/${gone.id}/auth/settings`, { headers: asAda() })).status);
    expect(await projectEventTypes(gone.id, before)).toEqual([]);
  });
});
