/**
 * The SQL console's watchdog cancels a query that lifted its own statement
 * timeout, over a login of its own as the owner. A query that changes the
 * owner's password and commits before lifting the timeout and sleeping would
 * have that login refused (28P01) and run on for as long as it liked: the
 * canceller's login heals like the pool's.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { tenantDatabaseName } from '@baseplane/contracts';
import { createProject, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';
import { EventStore } from '../src/event-store/event-store';
import { SqlConsole } from '../src/sql/sql-console';
import { TenantConnections } from '../src/tenants/tenant-connections';

let project: ProjectAnswer;
let tenants: TenantConnections;
let platform: pg.Pool;
let tenant: pg.Client;

beforeAll(async () => {
  project = await createProject(await signUpOperator('Watchdog'), 'watchdog app');
  tenants = new TenantConnections(inject('tenantDatabaseUrl'), inject('platformSecret'));
  platform = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(project.id)}`;
  tenant = new pg.Client({ connectionString: url.toString() });
  await tenant.connect();
});
afterAll(async () => {
  await tenants?.closeAll();
  await platform?.end();
  await tenant?.end();
});

it('stops a query that changed the owner’s password and committed, then lifted its timeout, soon after the limit', async () => {
  // The stack's console allows 60 s; a console of its own with 300 ms keeps the test short.
  const console_ = new SqlConsole(tenants, new EventStore(platform), { statementTimeoutMs: 300, rowCap: 10, resultBytes: 1_000_000 });
  const started = Date.now();
  const query = `alter role current_user password 'x'; commit; set statement_timeout = 0; select pg_sleep(8)`;
  const error = await console_.execute(project.id, query, 'operator:test').then(() => null, (e: unknown) => e);
  expect(error).toMatchObject({ status: 400, code: '57014', message: 'canceling statement due to statement timeout' });
  expect(Date.now() - started).toBeLessThan(5_000);
  const sleepers = await tenant.query(`select count(*)::int as n from pg_stat_activity where query like '%pg_sleep(8)%' and state = 'active' and pid <> pg_backend_pid()`);
  expect(sleepers.rows[0].n).toBe(0);
  // And the console goes on answering.
  expect(await console_.execute(project.id, 'select 1 as fine', 'operator:test')).toMatchObject({ rows: [{ fine: 1 }] });
});
