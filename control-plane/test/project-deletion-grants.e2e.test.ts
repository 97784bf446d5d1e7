/**
 * Deleting a project while another project's owner has granted its roles
 * something in that other project's database: PostgreSQL will not drop a role
 * that holds privileges anywhere in the cluster, and the owner may grant its
 * own objects to any role it can name. The deletion must still finish, and no
 * role of the deleted project may still log in (one holding such a grant is
 * kept, without login: only a session in the granting database could revoke it).
 */
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantApplyRole, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { bearer, call, createProject, projectEventTypes, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

let ada: Operator;
let mallory: Operator;
let doomed: ProjectAnswer;
let meddler: ProjectAnswer;

const consoleSql = (operator: Operator, projectId: string, query: string) => call('POST', '/api/sql/execute', { headers: bearer(operator.token), body: { projectId, query } });

beforeAll(async () => {
  [ada, mallory] = await Promise.all([signUpOperator('Ada'), signUpOperator('Mallory')]);
  [doomed, meddler] = await Promise.all([createProject(ada, 'to be deleted'), createProject(mallory, 'meddler')]);
});

describe('deleting a project', () => {
  it('finishes, and leaves no role of it that can log in, even when another project granted them privileges', async () => {
    const roles = [tenantOwnerRole(doomed.id), tenantApplyRole(doomed.id), tenantAuthenticatorRole(doomed.id)];
    // The apply role is made at a project's first change.
    expect((await call('POST', `/api/projects/${doomed.id}/storage/buckets`, { headers: bearer(ada.token), body: { name: 'bin' } })).status).toBe(201);
    const grants = roles.map((role) => `grant select on bait to "${role}"; alter default privileges grant select on tables to "${role}"; grant connect on database "${tenantDatabaseName(meddler.id)}" to "${role}";`).join('\n');
    const granted = await consoleSql(mallory, meddler.id, `create table bait (n int); ${grants}`);
    expect(granted.status, granted.text).toBe(200);

    const answer = await call('DELETE', `/api/projects/${doomed.id}`, { headers: bearer(ada.token) });
    expect(answer.status, answer.text).toBe(200);
    expect(await projectEventTypes(doomed.id)).toContain('ProjectDeleted');
    const cluster = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
    await cluster.connect();
    try {
      expect((await cluster.query('select rolname from pg_roles where rolname = any($1) and rolcanlogin', [roles])).rows).toEqual([]);
    } finally {
      await cluster.end();
    }
    // The meddler's own project is untouched.
    const still = await consoleSql(mallory, meddler.id, 'select count(*)::int as n from bait');
    expect(still.status, still.text).toBe(200);
  });
});
