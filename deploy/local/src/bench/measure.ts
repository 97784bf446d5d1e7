/**
 * What the benchmarks share: a fresh stack for the run, an operator, JSON
 * calls, and percentile lines printed the same way.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stopWhenParentGoes } from '../follow-parent';
import { startStack, type Stack } from '../stack';

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

export function printLine(label: string, samples: number[]): void {
  console.log(`${label.padEnd(48)} p50 ${ms(percentile(samples, 50)).padStart(9)}   p95 ${ms(percentile(samples, 95)).padStart(9)}   (n=${samples.length})`);
}

export function printRatio(label: string, value: number, baseline: number): void {
  console.log(`${label.padEnd(54)} ${(value / baseline).toFixed(2)}x`);
}

export interface BenchContext {
  stack: Stack;
  token: string;
  call(method: string, url: string, body?: unknown): Promise<{ status: number; json: any }>;
}

/** Set once a signal has asked the bench to stop: what fails after it is the stack going away, not news. */
let interrupted = false;

/**
 * Runs `bench` against a fresh local stack (configured from `env`, default
 * process.env) in a temporary directory, then removes it; a signal stops the
 * stack and ends the process.
 */
export async function withBenchStack(bench: (context: BenchContext) => Promise<void>, env: Record<string, string | undefined> = process.env): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-bench-'));
  const removeDataDir = () => rm(dataDir, { recursive: true, force: true });
  // Interrupted (Ctrl-C, a closed terminal, a kill): stop the stack before leaving. Its services run in their own
  // process groups, and no later start sweeps this temporary directory, so nothing else would stop them.
  const cancelStart = new AbortController();
  let started: Stack | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    console.log(`\n${signal} received; stopping the bench's stack…`);
    // A start under way stops what it had started and throws below.
    cancelStart.abort();
    if (started) void started.stop().finally(removeDataDir).finally(() => process.exit(130));
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const signal of signals) process.on(signal, onSignal);
  stopWhenParentGoes();
  console.log('starting a fresh local stack…');
  let stack: Stack;
  try {
    stack = await startStack({ dataDir, port: 0, quiet: true, env, signal: cancelStart.signal });
  } catch (error) {
    await removeDataDir();
    if (interrupted) process.exit(130);
    throw error;
  }
  started = stack;
  if (interrupted) {
    // The signal came after the start's last cancellation point.
    await stack.stop();
    await removeDataDir();
    process.exit(130);
  }
  try {
    let token = '';
    const call = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(new URL(url, stack.baseUrl), {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, json: text ? JSON.parse(text) : null };
    };
    const signup = await call('POST', '/api/auth/signup', { email: `bench-${Date.now()}@example.com`, password: 'benchmark password' });
    token = signup.json.accessToken;
    console.log('');
    console.log(`${os.cpus().length} cores, PostgreSQL embedded, Temporal dev server`);
    await bench({ stack, token, call });
  } finally {
    if (!interrupted) {
      for (const signal of signals) process.off(signal, onSignal);
      await stack.stop();
      await removeDataDir();
    }
  }
}

/**
 * The environment of a bench that loads the data plane: one replica per core
 * unless DATA_PLANE_REPLICAS says otherwise (a replica is one event loop, so
 * one core at most).
 */
export function onePerCoreEnv(): Record<string, string | undefined> {
  return { ...process.env, DATA_PLANE_REPLICAS: process.env.DATA_PLANE_REPLICAS ?? String(Math.max(1, os.cpus().length)) };
}

/** Fails the run loudly when a call did not answer as expected. */
export function expectStatus(answer: { status: number; json: unknown }, status: number, what: string): void {
  if (answer.status !== status) throw new Error(`${what}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.json)}`);
}

export function run(main: () => Promise<void>): void {
  main().catch((error) => {
    // After a signal the stack is being stopped and the process exits when it is gone.
    if (interrupted) return;
    console.error(error);
    process.exit(1);
  });
}

/** What a load run measured (latencies in ms). */
export interface LoadFigures {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/**
 * Closed-loop load: `clients` loops, each sending its next request as soon as
 * the last one answered, for `seconds`. `send(client)` performs one request
 * and throws when the answer is not the expected one (the run then fails).
 */
export async function closedLoop(clients: number, seconds: number, send: (client: number) => Promise<void>): Promise<LoadFigures> {
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        await send(client);
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { requests: latencies.length, perSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

export function printLoad(label: string, result: LoadFigures): void {
  console.log(
    `${label.padEnd(54)} ${result.perSecond.toFixed(0).padStart(6)} /s   p50 ${ms(result.p50).padStart(9)}   p99 ${ms(result.p99).padStart(9)}   (n=${result.requests})`,
  );
}
