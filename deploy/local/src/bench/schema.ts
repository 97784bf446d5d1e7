/**
 * `npm run bench:schema`: 100 add-column commands end to end (request →
 * decided → recorded → applied by the workflow → answered), one after
 * another, on a fresh stack. Baseline in the same run: PostgreSQL running the
 * same ALTER TABLE directly as the owner.
 */
import pg from 'pg';
import { tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { expectStatus, percentile, printLine, printRatio, run, withBenchStack } from './measure';

const COMMANDS = Number(process.env.BENCH_COMMANDS ?? 100);

run(() =>
  withBenchStack(async ({ stack, call }) => {
    const project = await call('POST', '/api/projects', { name: 'schema bench' });
    expectStatus(project, 201, 'project');
    const tables = `/api/projects/${project.json.id}/tables`;
    expectStatus(await call('POST', tables, { name: 'wide', columns: [] }), 201, 'table');
    expectStatus(await call('POST', tables, { name: 'raw', columns: [] }), 201, 'baseline table');
    expectStatus(await call('POST', `${tables}/wide/columns`, { name: 'warm_up', type: 'int4' }), 201, 'warm-up column');

    const addColumn: number[] = [];
    for (let i = 0; i < COMMANDS; i++) {
      const started = performance.now();
      expectStatus(await call('POST', `${tables}/wide/columns`, { name: `c${i}`, type: 'int4' }), 201, `column ${i}`);
      addColumn.push(performance.now() - started);
    }

    const url = new URL(stack.tenantDatabaseUrl);
    url.pathname = `/${tenantDatabaseName(project.json.id)}`;
    const tenant = new pg.Client({ connectionString: url.toString() });
    await tenant.connect();
    const raw: number[] = [];
    for (let i = 0; i < COMMANDS; i++) {
      const started = performance.now();
      await tenant.query('begin');
      await tenant.query(`set local role "${tenantOwnerRole(project.json.id)}"`);
      await tenant.query(`alter table public.raw add column c${i} int4`);
      await tenant.query('commit');
      raw.push(performance.now() - started);
    }
    await tenant.end();

    printLine('add column end to end (POST …/columns)', addColumn);
    printLine('baseline: raw ALTER TABLE ADD COLUMN', raw);
    printRatio('ratio end to end / raw, p50', percentile(addColumn, 50), percentile(raw, 50));
    console.log(`goal: add column p50 ≤ 150 ms — ${percentile(addColumn, 50) <= 150 ? 'met' : 'NOT met'}`);
  }),
);
