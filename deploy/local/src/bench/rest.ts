/**
 * `npm run bench:rest`: the data API under load on a fresh stack, measured
 * in one run on one database at one concurrency: a single-row GET by primary
 * key with RLS on (anon key, then a user token), a 20-row list, a single-row
 * insert, and PostgreSQL answering the same prepared query directly (the same
 * closed client loop, over pg), whose ratio to the API's GET is printed.
 * The HTTP load runs in a worker thread, apart from the gateway's event loop (http-load.ts).
 * It prints figures; it never fails for a slow machine.
 */
import pg from 'pg';
import { tenantDatabaseName } from '@baseplane/contracts';
import { httpLoad, type LoadResult, type RequestSpec } from './http-load';
import { expectStatus, percentile, run, withBenchStack } from './measure';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const WARM_UP_SECONDS = 2;
const ROWS = 1000;

const load = (base: string, spec: RequestSpec) => httpLoad(base, spec, { concurrency: CONCURRENCY, seconds: SECONDS, warmUpSeconds: WARM_UP_SECONDS, rows: ROWS });

/** The same closed loop straight to PostgreSQL: one prepared statement per connection. */
async function pgLoad(url: string, text: string): Promise<LoadResult> {
  const clients = await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return client;
  }));
  const latencies: number[] = [];
  const start = performance.now();
  const measureFrom = start + WARM_UP_SECONDS * 1000;
  const end = measureFrom + SECONDS * 1000;
  await Promise.all(clients.map(async (client) => {
    while (performance.now() < end) {
      const sent = performance.now();
      await client.query({ name: 'bench_by_pk', text, values: [1 + Math.floor(Math.random() * ROWS)] });
      if (sent >= measureFrom) latencies.push(performance.now() - sent);
    }
  }));
  await Promise.all(clients.map((client) => client.end()));
  return { perSecond: latencies.length / SECONDS, latencies, errors: 0 };
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 2 : 1)} ms`;

function print(label: string, result: LoadResult): void {
  console.log(
    `${label.padEnd(52)} ${result.perSecond.toFixed(0).padStart(6)} req/s   p50 ${ms(percentile(result.latencies, 50)).padStart(9)}   p99 ${ms(percentile(result.latencies, 99)).padStart(9)}` +
      (result.errors ? `   ${result.errors} errors (first: ${result.firstError})` : ''),
  );
}

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

    const replicas = stack.servicePorts.dataPlanes.length;
    console.log(`data plane replicas: ${replicas} (DATA_PLANE_REPLICAS), concurrency ${CONCURRENCY}, ${SECONDS} s per line after ${WARM_UP_SECONDS} s warm-up, through the gateway`);
    console.log('');
    const anon = { apikey: anonKey };
    const user = { apikey: anonKey, authorization: `Bearer ${session.accessToken}` };
    const base = stack.baseUrl;
    const getAnon = await load(base, { method: 'GET', path: '/rest/v1/items?id=eq.{n}', headers: anon, status: 200 });
    print('GET one row by primary key, RLS on, anon key', getAnon);
    const getUser = await load(base, { method: 'GET', path: '/rest/v1/notes?id=eq.{n}', headers: user, status: 200 });
    print('GET one row by primary key, RLS on, user token', getUser);
    const list = await load(base, { method: 'GET', path: '/rest/v1/items?order=id&limit=20&offset={n}', headers: anon, status: 200 });
    print('GET 20 rows, ordered', list);
    const insert = await load(base, { method: 'POST', path: '/rest/v1/inserts', headers: { apikey: serviceKey }, body: '{"label":"row {n}"}', status: 201 });
    print('POST one row (service key)', insert);

    const tenantUrl = new URL(stack.tenantDatabaseUrl);
    tenantUrl.pathname = `/${tenantDatabaseName(id)}`;
    const raw = await pgLoad(tenantUrl.toString(), 'select coalesce(json_agg(t), \'[]\')::text from (select * from public.items where id = $1) t');
    print('baseline: PostgreSQL, same query prepared, direct', raw);
    const direct = stack.servicePorts.dataPlanes.length > 0 ? await load(`http://127.0.0.1:${stack.servicePorts.dataPlanes[0]}`, { method: 'GET', path: '/rest/v1/items?id=eq.{n}', headers: anon, status: 200 }) : undefined;
    if (direct) print('GET one row, anon, one replica without the gateway', direct);

    // The goals are read on both paths: the gateway here is the local stack's Node proxy, which a deployment
    // replaces with its ingress, so the replica's own figure is the data plane's.
    console.log('');
    for (const [path, result] of [['through the gateway', getAnon], ['straight to one replica', direct]] as const) {
      if (!result) continue;
      const ratio = result.perSecond / raw.perSecond;
      const p99 = percentile(result.latencies, 99);
      console.log(`single-row GET ${path}: ratio to raw PostgreSQL ${ratio.toFixed(2)}`);
      console.log(`  goal ≥ 5000 req/s — ${result.perSecond >= 5000 ? 'met' : 'NOT met'} (${result.perSecond.toFixed(0)})`);
      console.log(`  goal ratio ≥ 0.5 — ${ratio >= 0.5 ? 'met' : 'NOT met'} (${ratio.toFixed(2)})`);
      console.log(`  goal p99 ≤ 20 ms at ${CONCURRENCY} connections — ${p99 <= 20 ? 'met' : 'NOT met'} (${ms(p99)})`);
    }
  }),
);
