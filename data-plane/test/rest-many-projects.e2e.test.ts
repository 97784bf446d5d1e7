/**
 * Many projects on one cluster: each replica keeps connections per project,
 * and PostgreSQL takes max_connections in all (200 in the local stack). A
 * burst over 30 projects on both replicas must still answer every request,
 * not 503 "the project database is not reachable" because the fleet's idle
 * connections of other projects hold the cluster's every slot (53300): a
 * replica refused a connection gives back its idle ones and tries again.
 */
import { describe, expect, inject, it } from 'vitest';
import { bearer, call, createProject, dataPlanesCaughtUp } from '../../deploy/test/http';
import { restProject } from './rest-fixtures';

const bases = () => [...inject('servicePorts').dataPlanes.map((port) => `http://127.0.0.1:${port}`), inject('baseUrl')];

describe('many projects on one cluster', () => {
  it('answers a burst over 30 projects on every replica', async () => {
    const p = await restProject('many projects');
    const keys: string[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const project = await createProject(p.operator, `many ${i}`);
      ids.push(project.id);
      keys.push(project.serviceKey);
      const made = await call('POST', '/api/sql/execute', { headers: bearer(p.operator.token), body: { projectId: project.id, query: 'create table items (id int primary key); insert into items values (1)' } });
      expect(made.status, made.text).toBe(200);
    }
    await dataPlanesCaughtUp(10_000);
    const failed: string[] = [];
    await Promise.all(keys.map(async (key) => {
      for (let round = 0; round < 10; round++) {
        await Promise.all(bases().map(async (base) => {
          const response = await fetch(`${base}/rest/v1/items`, { headers: { apikey: key } });
          const text = await response.text();
          if (response.status !== 200) failed.push(`${base}: ${response.status} ${text}`);
        }));
      }
    }));
    expect(failed).toEqual([]);
    // Their connections go with them, rather than holding the cluster for the tests after this one.
    for (const id of ids) expect((await call('DELETE', `/api/projects/${id}`, { headers: bearer(p.operator.token) })).status).toBe(200);
  }, 180_000);
});
