/**
 * The data plane's first step: the apikey picks the project through the
 * directory cache that follows the event stream.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, createProject, scenarios, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

let operator: Operator;
let project: ProjectAnswer;

beforeAll(async () => {
  operator = await signUpOperator('Data');
  project = await createProject(operator, 'rest app');
});

describe('GET /rest/v1/', () => {
  it('answers the project’s OpenAPI description for its anon key, on both prefixes', async () => {
    for (const path of ['/rest/v1/', '/api/rest/v1/']) {
      const answer = await call('GET', path, { headers: { apikey: project.anonKey } });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ swagger: '2.0', info: { title: 'rest app' }, basePath: '/rest/v1', paths: {}, definitions: {} });
    }
    const byQuery = await call('GET', `/rest/v1/?apikey=${encodeURIComponent(project.serviceKey)}`);
    expect(byQuery.status).toBe(200);
  });

  scenarios([
    { name: 'no key is 401 missing_api_key', method: 'GET', url: '/rest/v1/', expectedStatus: 401, expectedContent: ['missing_api_key'] },
    { name: 'an unknown key is 401 invalid_api_key', method: 'GET', url: '/rest/v1/', headers: { apikey: 'bp_anon_unknown' }, expectedStatus: 401, expectedContent: ['invalid_api_key'] },
    { name: 'an unknown key by query is 401 invalid_api_key', method: 'GET', url: '/api/rest/v1/?apikey=bp_anon_unknown', expectedStatus: 401, expectedContent: ['invalid_api_key'] },
    { name: 'an unknown data-plane route is 404', method: 'GET', url: '/rest/v1/../../nothing', expectedStatus: 404 },
  ]);

  it('takes no writes: the root names no table (405, as PostgREST)', async () => {
    for (const method of ['POST', 'PATCH', 'PUT', 'DELETE']) {
      const answer = await call(method, '/rest/v1/', { headers: { apikey: project.serviceKey }, body: { id: 1 } });
      expect(answer.status, `${method} ${answer.text}`).toBe(405);
      expect(answer.body).toMatchObject({ code: 'method_not_allowed', message: `${method} is not allowed here` });
    }
  });

  it('stops accepting a rotated key within a second', async () => {
    const rotated = await call('POST', `/api/projects/${project.id}/keys/rotate`, { headers: bearer(operator.token), body: { kind: 'anon' } });
    expect(rotated.status).toBe(200);
    const rotatedAt = Date.now();
    await expect.poll(async () => (await call('GET', '/rest/v1/', { headers: { apikey: project.anonKey } })).status, { timeout: 1000, interval: 20 }).toBe(401);
    expect(Date.now() - rotatedAt).toBeLessThan(1000);
    const fresh = await call('GET', '/rest/v1/', { headers: { apikey: rotated.body.anonKey } });
    expect(fresh.status).toBe(200);
  });

  it('refuses the keys of a deleted project', async () => {
    const gone = await createProject(operator, 'gone');
    expect((await call('DELETE', `/api/projects/${gone.id}`, { headers: bearer(operator.token) })).status).toBe(200);
    await expect.poll(async () => (await call('GET', '/rest/v1/', { headers: { apikey: gone.anonKey } })).body.code, { timeout: 1000, interval: 20 }).toBe('invalid_api_key');
  });
});
