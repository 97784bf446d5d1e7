/**
 * The embedded S3-compatible server of the local stack: Versity's S3 gateway
 * (versitygw) with its posix backend, keeping buckets as directories under
 * `<dataDir>/s3`. Started when STORAGE_BACKEND=s3 has no S3_ENDPOINT, and by
 * the test harness so that the storage tests run against a real S3 service.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { cachedBinary } from './binaries';
import { serverChild, spawnLogged, untilReady, type ServerChild } from './child-process';
import { answers200, findFreePort } from './net';
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

/** A running embedded S3 server (stopped with SIGTERM, SIGKILL after 10 s). */
export interface S3Server extends S3Coordinates, ServerChild {}

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
  return cachedBinary(env, 'BASEPLANE_VERSITYGW_BIN', 'versitygw', VERSITYGW_VERSION);
}

/** Where versitygw keeps the buckets of a stack on `dataDir` (orphans.ts recognises a leftover server by it). */
export const s3BucketsDir = (dataDir: string) => path.join(dataDir, 's3', 'buckets');

/** Starts versitygw on a free port of 127.0.0.1 and resolves once its health endpoint answers. */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  const { log } = options;
  const stateDir = path.join(options.dataDir, 's3');
  const bucketsDir = s3BucketsDir(options.dataDir);
  await fs.mkdir(bucketsDir, { recursive: true });
  // Kept with the data: objects record their owner's key, so a restart must come back with the same account.
  const secretAccessKey = await readOrCreateSecretFile(path.join(stateDir, 'root-secret'), 30);
  const port = await findFreePort();
  const endpoint = `http://127.0.0.1:${port}`;

  let server: ServerChild | undefined;
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
    toConsole: () => !server?.stopping && started,
  });
  server = serverChild('s3', child, log, STOP_GRACE_MS);
  await untilReady('s3', server, `S3 server (${options.bin})`, () => answers200(`${endpoint}${HEALTH_PATH}`, 1000), READY_TIMEOUT_MS);
  started = true;
  log.line('s3', `ready on ${endpoint} (versitygw, data in ${bucketsDir})`);
  return Object.assign(server, { endpoint, region: REGION, accessKeyId: ACCESS_KEY_ID, secretAccessKey });
}
