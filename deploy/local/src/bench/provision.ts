/**
 * `npm run bench:provision`: on a fresh local stack, creates 20 projects one
 * after another and times create→active; then times a no-op command's round
 * trip through event store, workflow and tenant. Baseline measured in the same
 * run: PostgreSQL creating and dropping a database directly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startStack } from '../stack';

const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 20);
const PINGS = Number(process.env.BENCH_PINGS ?? 50);

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
const line = (label: string, samples: number[]) =>
  console.log(`${label.padEnd(44)} p50 ${fmt(percentile(samples, 50)).padStart(8)}   p95 ${fmt(percentile(samples, 95)).padStart(8)}   (n=${samples.length})`);

async function post(baseUrl: string, url: string, token: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(new URL(url, baseUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-bench-'));
  console.log('starting a fresh local stack…');
  const stack = await startStack({ dataDir, port: 0, quiet: true });
  try {
    const baseUrl = stack.baseUrl;
    const signup = await fetch(new URL('/api/auth/signup', baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'benchmark password' }),
    });
    const { accessToken: token } = (await signup.json()) as { accessToken: string };

    // Warm-up: the first project also creates the cluster-wide API roles.
    await post(baseUrl, '/api/projects', token, { name: 'warm-up' });

    const provision: number[] = [];
    let lastProject = '';
    for (let i = 0; i < PROJECTS; i++) {
      const started = performance.now();
      const answer = await post(baseUrl, '/api/projects', token, { name: `bench ${i}` });
      if (answer.status !== 201 || answer.json.status !== 'active') throw new Error(`project ${i} not active: ${JSON.stringify(answer.json)}`);
      provision.push(performance.now() - started);
      lastProject = answer.json.id;
    }

    const pings: number[] = [];
    for (let i = 0; i < PINGS; i++) {
      const started = performance.now();
      const answer = await post(baseUrl, `/api/projects/${lastProject}/ping`, token);
      if (answer.status !== 200) throw new Error(`ping failed: ${JSON.stringify(answer.json)}`);
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

    console.log('');
    console.log(`bench:provision — ${os.cpus().length} cores, PostgreSQL embedded, Temporal dev server`);
    line('create project → active (POST /api/projects)', provision);
    line('no-op command round trip (POST …/ping)', pings);
    line('baseline: raw CREATE DATABASE', rawCreate);
    console.log(`${'ratio create→active / raw CREATE DATABASE'.padEnd(44)} p50 ${(percentile(provision, 50) / percentile(rawCreate, 50)).toFixed(2)}x`);
    console.log(`goal: provisioning p50 ≤ 1500 ms — ${percentile(provision, 50) <= 1500 ? 'met' : 'NOT met'}`);
  } finally {
    await stack.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
