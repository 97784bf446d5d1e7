/**
 * API.md → Credentials: the service key may come as `?apikey=` as well as in
 * the header. Every project-scoped GET of the management API takes it there,
 * and none reads it as a parameter of its own (a filter, an unknown field).
 * (`/keys` is for team members only, whatever the key.)
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';

let project: ProjectAnswer;

const GETS = [
  '',
  '/events',
  '/operations',
  '/tables',
  '/tables/notes/columns',
  '/tables/notes/foreign-keys',
  '/tables/notes/rows',
  '/auth/settings',
  '/auth/users',
  '/rest/settings',
  '/storage/buckets',
];

beforeAll(async () => {
  const operator = await signUpOperator('Key in query');
  project = await createProject(operator, 'key in query');
  const table = await call('POST', `/api/projects/${project.id}/tables`, { headers: bearer(operator.token), body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
  expect(table.status, table.text).toBe(201);
});

describe('the service key as ?apikey=', () => {
  it.each(GETS)('GET /api/projects/:id%s answers 200', async (suffix) => {
    const answer = await call('GET', `/api/projects/${project.id}${suffix}?apikey=${encodeURIComponent(project.serviceKey)}`);
    expect(answer.status, answer.text).toBe(200);
  });

  it.each(['/tables/notes/rows', '/auth/users', '/events'])('GET /api/projects/:id%s with the anon key there answers 403 service_key_required', async (suffix) => {
    const answer = await call('GET', `/api/projects/${project.id}${suffix}?apikey=${encodeURIComponent(project.anonKey)}`);
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body.code).toBe('service_key_required');
  });
});
