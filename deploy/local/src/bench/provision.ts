/**
 * `npm run bench:provision`: on a fresh local stack, creates 20 projects one
 * after another and times create→active; then times a no-op command's round
 * trip through event store, workflow and tenant. Baseline measured in the same
 * run: PostgreSQL creating a database directly.
 */
import pg from 'pg';
import { expectStatus, percentile, printLine, printRatio, run, withBenchStack } from './measure';

const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 20);
const PINGS = Number(process.env.BENCH_PINGS ?? 50);

run(() =>
  withBenchStack(async ({ stack, call }) => {
    // Warm-up: the first project also creates the cluster-wide API roles.
    expectStatus(await call('POST', '/api/projects', { name: 'warm-up' }), 201, 'warm-up project');

    const provision: number[] = [];
    let lastProject = '';
    for (let i = 0; i < PROJECTS; i++) {
      const started = performance.now();
      const answer = await call('POST', '/api/projects', { name: `bench ${i}` });
      expectStatus(answer, 201, `project ${i}`);
      provision.push(performance.now() - started);
      lastProject = answer.json.id;
    }

    const pings: number[] = [];
    for (let i = 0; i < PINGS; i++) {
      const started = performance.now();
      expectStatus(await call('POST', `/api/projects/${lastProject}/ping`), 200, 'ping');
      pings.push(performance.now() - started);
    }

    const admin = new pg.Client({ connectionString: stack.tenantDatabaseUrl });
    await admin.connect();
    const rawCreate: number[] = [];
    for (let i = 0; i < PROJECTS; i++) {
      const started = performance.now();
      await admin.query(`create database bench_raw_${i}`);
      rawCreate.push(performance.now() - started);
      await admin.query(`drop database bench_raw_${i}`);
    }
    await admin.end();

    printLine('create project → active (POST /api/projects)', provision);
    printLine('no-op command round trip (POST …/ping)', pings);
    printLine('baseline: raw CREATE DATABASE', rawCreate);
    printRatio('ratio create→active / raw CREATE DATABASE, p50', percentile(provision, 50), percentile(rawCreate, 50));
    console.log(`goal: provisioning p50 ≤ 1500 ms — ${percentile(provision, 50) <= 1500 ? 'met' : 'NOT met'}`);
  }),
);
