/**
 * Kills the worker process in the middle of provisioning: the supervisor
 * starts a new one, Temporal retries the interrupted activity on it, and the
 * project still ends active with every side effect performed once.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { bearer, call, signUpOperator, type Operator } from '../../deploy/test/http';
import { servicePid } from '../../deploy/local/src/services';

let db: pg.Client;
let operator: Operator;

const workerPid = () => servicePid(inject('servicePorts').worker);

beforeAll(async () => {
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  operator = await signUpOperator('Crash');
});
afterAll(async () => {
  await db.end();
});

it('provisions exactly once across a worker crash', async () => {
  const pid = await workerPid();
  const accepted = await call('POST', '/api/projects', { headers: { ...bearer(operator.token), prefer: 'respond-async' }, body: { name: 'crash test' } });
  expect(accepted.status).toBe(202);
  const operationId: string = accepted.body.operation.id;

  // Kill the worker the moment the first side effect has been logged.
  let statusAtKill: string | undefined;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { rows } = await db.query<{ status: string }>(
      `select p.status from activity_ledger l join operations o on o.project_id = l.project_id
       join projects p on p.id = o.project_id where o.id = $1 limit 1`,
      [operationId],
    );
    if (rows[0]) {
      process.kill(pid, 'SIGKILL');
      statusAtKill = rows[0].status;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  expect(statusAtKill, 'the worker was killed while the project was provisioning').toBe('provisioning');

  const { rows: [op] } = await db.query<{ project_id: string }>('select project_id from operations where id = $1', [operationId]);
  const projectId = op!.project_id;
  await expect
    .poll(async () => (await call('GET', `/api/projects/${projectId}`, { headers: bearer(operator.token) })).body.status, { timeout: 90_000, interval: 250 })
    .toBe('active');

  expect(await workerPid()).not.toBe(pid);
  const ledger = await db.query<{ step: string; n: number }>(
    'select step, count(*)::int as n from activity_ledger where project_id = $1 group by step order by step',
    [projectId],
  );
  expect(ledger.rows).toEqual([
    { step: 'createDatabase', n: 1 },
    { step: 'createOwnerRole', n: 1 },
    { step: 'installTenantSchema', n: 1 },
  ]);
  const operation = await call('GET', `/api/projects/${projectId}/operations/${operationId}`, { headers: bearer(operator.token) });
  expect(operation.body.status).toBe('succeeded');
  const events = await call('GET', `/api/projects/${projectId}/events`, { headers: bearer(operator.token) });
  expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(['ProjectCreated', 'SigningKeyIssued', 'ProjectProvisioned']);
});
