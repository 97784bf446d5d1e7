/**
 * `npm run bench:rest`: the data API under load on a fresh stack, measured
 * in one run on one database at one concurrency: a single-row GET by primary
 * key with RLS on (anon key, then a user token), a 20-row list, a single-row
 * insert, and PostgreSQL answering the same query prepared, whose ratio to
 * the API's GET is printed.
 *
 * The stack runs the fleet at one data-plane replica per core
 * (DATA_PLANE_REPLICAS, default here 2: a replica is one Node event loop, so
 * one core at most). The load comes from C clients, as PostgREST's published
 * figures do: wrk spreads its connections over the replicas as a load
 * balancer would (wrk.ts), and pgbench drives the baseline (pgbench.ts). The
 * single-row GET is also measured on one replica, and through the local
 * stack's gateway with a Node client (http-load.ts).
 * It prints figures; it never fails for a slow machine.
 */
import os from 'node:os';
import { tenantDatabaseName } from '@baseplane/contracts';
import { counted, httpLoad, type LoadOptions } from './http-load';
import { pgbenchLoad } from './pgbench';
import { wrkLoad } from './wrk';
import { expectStatus, onePerCoreEnv, printLoad, run, withBenchStack } from './measure';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const WARM_UP_SECONDS = 2;
const ROWS = 1000;
const OPTIONS: LoadOptions = { concurrency: CONCURRENCY, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS, rows: ROWS };


run(() =>
  withBenchStack(async ({ stack, call }) => {
    const project = await call('POST', '/api/projects', { name: 'rest bench' });
    expectStatus(project, 201, 'project');
    const { id, anonKey, serviceKey } = project.json as { id: string; anonKey: string; serviceKey: string };
    const tables = `/api/projects/${id}/tables`;
    expectStatus(await call('POST', tables, { name: 'items', access: 'public-read', columns: [{ name: 'label', type: 'text', nullable: false }, { name: 'price', type: 'int4' }, { name: 'created_at', type: 'timestamptz', default: 'now()' }] }), 201, 'items table');
    expectStatus(await call('POST', tables, { name: 'notes', access: 'owner', columns: [{ name: 'body', type: 'text' }] }), 201, 'notes table');
    expectStatus(await call('POST', tables, { name: 'inserts', access: 'public-read', columns: [{ name: 'label', type: 'text' }] }), 201, 'inserts table');
    const signup = await fetch(new URL('/rest/v1/auth/signup', stack.baseUrl), { method: 'POST', headers: { apikey: anonKey, 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench-user-${Date.now()}@example.com`, password: 'benchmark password' }) });
    const session = (await signup.json()) as { accessToken: string; user: { id: string } };
    expectStatus(await call('POST', '/api/sql/execute', {
      projectId: id,
      query: `insert into items (label, price) select 'item ' || g, g from generate_series(1, ${ROWS}) g;
              insert into notes (body, owner_id) select 'note ' || g, '${session.user.id}' from generate_series(1, ${ROWS}) g;
              analyze items; analyze notes;`,
    }), 200, 'rows');

    const replicas = stack.servicePorts.dataPlanes.map((port) => `http://127.0.0.1:${port}`);
    console.log(`data-plane replicas: ${replicas.length} (DATA_PLANE_REPLICAS) on ${os.cpus().length} cores; ${CONCURRENCY} connections; ${SECONDS} s per line after ${WARM_UP_SECONDS} s warm-up`);
    console.log('load from wrk spread over the replicas, baseline from pgbench, unless the line says otherwise');
    console.log('');
    const anon = { apikey: anonKey };
    const user = { apikey: anonKey, authorization: `Bearer ${session.accessToken}` };
    const fleet = async (label: string, spec: Parameters<typeof wrkLoad>[1]) => {
      const result = counted(await wrkLoad(replicas, spec, OPTIONS));
      printLoad(label, result);
      return result;
    };
    const getAnon = await fleet('GET one row by primary key, RLS on, anon key', { method: 'GET', path: '/rest/v1/items?id=eq.{n}', headers: anon, status: 200 });
    await fleet('GET one row by primary key, RLS on, user token', { method: 'GET', path: '/rest/v1/notes?id=eq.{n}', headers: user, status: 200 });
    await fleet('GET 20 rows, ordered', { method: 'GET', path: '/rest/v1/items?order=id&limit=20&offset={n}', headers: anon, status: 200 });
    await fleet('POST one row (service key)', { method: 'POST', path: '/rest/v1/inserts', headers: { apikey: serviceKey }, body: '{"label":"row {n}"}', status: 201 });

    const tenantUrl = new URL(stack.tenantDatabaseUrl);
    tenantUrl.pathname = `/${tenantDatabaseName(id)}`;
    const raw = await pgbenchLoad(tenantUrl.toString(), "select coalesce(json_agg(t), '[]')::text from (select * from public.items where id = :n) t", OPTIONS);
    printLoad('baseline: PostgreSQL, same query prepared (pgbench)', raw);
    const getSpec = { method: 'GET', path: '/rest/v1/items?id=eq.{n}', headers: anon, status: 200 };
    printLoad('GET one row, anon, one replica', counted(await wrkLoad(replicas.slice(0, 1), getSpec, OPTIONS)));
    // The local stack's gateway is a Node proxy, which a deployment replaces with its ingress.
    printLoad('GET one row, anon, through the gateway (Node client)', counted(await httpLoad(stack.baseUrl, getSpec, OPTIONS)));

    const ratio = getAnon.perSecond / raw.perSecond;
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    console.log('');
    console.log(`single-row GET on the fleet: ratio to raw PostgreSQL ${ratio.toFixed(2)}`);
    console.log(`  goal ≥ 5000 req/s — ${verdict(getAnon.perSecond >= 5000)} (${getAnon.perSecond.toFixed(0)})`);
    console.log(`  goal ratio ≥ 0.5 — ${verdict(ratio >= 0.5)} (${ratio.toFixed(2)})`);
    console.log(`  goal p99 ≤ 20 ms at ${CONCURRENCY} connections — ${verdict(getAnon.p99 <= 20)} (${getAnon.p99.toFixed(1)} ms)`);
  }, onePerCoreEnv()),
);
