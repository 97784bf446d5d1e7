/**
 * A provisioning step that PostgreSQL refuses ends the project `failed` with
 * the reason, the operation failed, and the request answered 422. The failure
 * is real: template1 gets a `baseplane_meta.applied` table of the wrong shape,
 * which every new database copies, so the tenant-schema step cannot insert.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bearer, call, projectEventTypes, signUpOperator, type Operator } from '../../deploy/test/http';

let operator: Operator;

/** Runs SQL in template1 and disconnects: CREATE DATABASE refuses to copy a template someone is connected to. */
async function inTemplate(sql: string): Promise<void> {
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = '/template1';
  const template = new pg.Client({ connectionString: url.toString() });
  await template.connect();
  try {
    await template.query(sql);
  } finally {
    await template.end();
  }
}

beforeAll(async () => {
  operator = await signUpOperator('Failure');
  await inTemplate('create schema baseplane_meta; create table baseplane_meta.applied (id boolean primary key)');
});
afterAll(async () => {
  await inTemplate('drop schema if exists baseplane_meta cascade');
});

it('ends failed with the database error when a step is refused', async () => {
  const answer = await call('POST', '/api/projects', { headers: bearer(operator.token), body: { name: 'doomed to fail' } });
  expect(answer.status, answer.text).toBe(422);
  expect(answer.body.code).toBe('apply_failed');
  expect(answer.body.details.message).toMatch(/column "version"/);

  const list = await call('GET', '/api/projects', { headers: bearer(operator.token) });
  const project = list.body.find((p: { name: string }) => p.name === 'doomed to fail');
  expect(project).toMatchObject({ status: 'failed', statusDetail: expect.stringMatching(/column "version"/) });
  expect(await projectEventTypes(project.id)).toEqual(['ProjectCreated', 'SigningKeyIssued', 'ProjectProvisioningFailed']);
  const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: bearer(operator.token) });
  expect(operations.body).toEqual([expect.objectContaining({ command: 'CreateProject', status: 'failed', error: { message: expect.stringMatching(/column "version"/) } })]);
  // A failed project serves nothing.
  expect((await call('GET', '/rest/v1/', { headers: { apikey: project.anonKey } })).body.code).toBe('project_unavailable');
});
