/**
 * The embedded S3-compatible server of the local stack: Versity's S3 gateway
 * (versitygw) with its posix backend, keeping buckets as directories under
 * `<dataDir>/s3`. Started when STORAGE_BACKEND=s3 has no S3_ENDPOINT, and by
 * the test harness so that the storage tests run against a real S3 service.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeExit, hasExited, spawnLogged, terminate } from './child-process';
import { answers200, findFreePort, waitUntil } from './net';
import { readOrCreateSecretFile } from './secrets';
import type { StackLog } from './stack-log';

/** Where a running S3 server answers and with which credentials: what S3_* of the services say. */
export interface S3Coordinates {
  /** `http://127.0.0.1:<port>`; buckets are addressed path-style. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** A running embedded S3 server. */
export interface S3Server extends S3Coordinates {
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL after 10 s; resolves when the process is gone. */
  stop(): Promise<void>;
  /** Sends SIGTERM without waiting: for when this process is exiting. */
  stopNow(): void;
}

/** What {@link startS3Server} needs. */
export interface S3ServerOptions {
  /** Path of the versitygw binary (baseplane.mjs resolves it into BASEPLANE_VERSITYGW_BIN). */
  bin: string;
  dataDir: string;
  log: StackLog;
}

/** The versitygw version baseplane.mjs builds into the cache. */
export const VERSITYGW_VERSION = '1.8.0';

const REGION = 'us-east-1';
/** The root account's key id; its secret is generated once into the data directory. */
const ACCESS_KEY_ID = 'baseplane';
const HEALTH_PATH = '/healthz';
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;

/**
 * The versitygw binary to run: BASEPLANE_VERSITYGW_BIN (set by baseplane.mjs),
 * else the copy baseplane.mjs caches, else `versitygw` on PATH. The cache
 * fallback is for runs that skip baseplane.mjs, such as `npx vitest`.
 */
export function resolveS3ServerBin(env: Record<string, string | undefined>): string {
  const explicit = env.BASEPLANE_VERSITYGW_BIN?.trim();
  if (explicit) return explicit;
  const cacheRoot = env.XDG_CACHE_HOME?.trim() || path.join(os.homedir(), '.cache');
  const cached = path.join(cacheRoot, 'baseplane', `versitygw-${VERSITYGW_VERSION}`, 'versitygw');
  return existsSync(cached) ? cached : 'versitygw';
}

/** Starts versitygw on a free port of 127.0.0.1 and resolves once its health endpoint answers. */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  const { log } = options;
  const stateDir = path.join(options.dataDir, 's3');
  const bucketsDir = path.join(stateDir, 'buckets');
  await fs.mkdir(bucketsDir, { recursive: true });
  await stopLeftoverServer(bucketsDir, log);
  // Kept with the data: objects record their owner's key, so a restart must come back with the same account.
  const secretAccessKey = await readOrCreateSecretFile(path.join(stateDir, 'root-secret'), 30);
  const port = await findFreePort();
  const endpoint = `http://127.0.0.1:${port}`;

  let stopping = false;
  let started = false;
  const child = spawnLogged({
    part: 's3',
    command: options.bin,
    // prettier-ignore
    args: [
      '--port', `127.0.0.1:${port}`,
      '--region', REGION,
      '--health', HEALTH_PATH,
      '--quiet',
      'posix', bucketsDir,
    ],
    // Credentials through the environment, so that they stay out of `ps`.
    env: { ...process.env, ROOT_ACCESS_KEY_ID: ACCESS_KEY_ID, ROOT_SECRET_ACCESS_KEY: secretAccessKey },
    log,
    // Its start banner is a box drawing; the log file keeps it, the console gets our one "ready" line.
    toConsole: () => !stopping && started,
  });
  child.once('exit', (code, signal) => {
    if (!stopping) log.line('s3', `exited unexpectedly (${describeExit(code, signal)})`);
  });

  const server: S3Server = {
    endpoint,
    region: REGION,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey,
    isRunning: () => !hasExited(child),
    stopNow() {
      stopping = true;
      if (!hasExited(child)) child.kill('SIGTERM');
    },
    async stop() {
      stopping = true;
      await terminate(child, STOP_GRACE_MS, () => log.line('s3', 'did not stop within 10 s; killing it'));
    },
  };

  try {
    await waitUntil(() => answers200(`${endpoint}${HEALTH_PATH}`, 1000), {
      what: `S3 server (${options.bin})`,
      timeoutMs: READY_TIMEOUT_MS,
      abort: () => (hasExited(child) ? 'exited during start (see the [s3] lines)' : undefined),
    });
  } catch (error) {
    await server.stop();
    throw error;
  }
  started = true;
  log.line('s3', `ready on ${endpoint} (versitygw, data in ${bucketsDir})`);
  return server;
}

/**
 * Ends a versitygw that an earlier stack on the same data left running when its
 * supervisor was killed outright (it runs in its own process group, so it
 * outlives a kill -9): nothing locks the buckets directory, so without this
 * every such restart would leave one more server behind. Linux /proc only.
 */
async function stopLeftoverServer(bucketsDir: string, log: StackLog): Promise<void> {
  if (!existsSync('/proc')) return;
  const marker = `\0posix\0${bucketsDir}\0`;
  const leftovers = readdirSync('/proc')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid !== process.pid)
    .filter((pid) => {
      try {
        return `\0${readFileSync(`/proc/${pid}/cmdline`, 'utf8')}`.includes(marker);
      } catch {
        return false; // gone while we looked, or not ours to read
      }
    });
  for (const pid of leftovers) {
    log.line('s3', `stopping pid ${pid} left over from an earlier run on this data`);
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + STOP_GRACE_MS;
  while (leftovers.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  for (const pid of leftovers.filter(alive)) process.kill(pid, 'SIGKILL');
}
