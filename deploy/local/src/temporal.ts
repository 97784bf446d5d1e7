/**
 * The embedded Temporal of the local stack: `temporal server start-dev` with its
 * SQLite file in `<dataDir>/temporal`, every port chosen free so that several
 * stacks can run side by side.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { cachedBinary } from './binaries';
import { serverChild, spawnLogged, untilReady, type ServerChild } from './child-process';
import { answers200, canConnect, findFreePorts } from './net';
import type { StackLog } from './stack-log';

/** A running Temporal dev server (stopped with SIGTERM, SIGKILL after 10 s). */
export interface TemporalDevServer extends ServerChild {
  /** Frontend gRPC `host:port`, the value of TEMPORAL_ADDRESS. */
  address: string;
  uiUrl: string;
}

/** What {@link startTemporalDevServer} needs. */
export interface TemporalDevServerOptions {
  /** Path of the Temporal CLI binary (baseplane.mjs resolves it into BASEPLANE_TEMPORAL_BIN). */
  bin: string;
  dataDir: string;
  namespace: string;
  log: StackLog;
}

/** The Temporal CLI version baseplane.mjs installs into the cache. */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/**
 * The Temporal CLI to run: BASEPLANE_TEMPORAL_BIN (set by baseplane.mjs), else
 * the copy baseplane.mjs caches, else `temporal` on PATH. The cache fallback is
 * for runs that skip baseplane.mjs, such as `npx vitest`.
 */
export function resolveTemporalBin(env: Record<string, string | undefined>): string {
  return cachedBinary(env, 'BASEPLANE_TEMPORAL_BIN', 'temporal', TEMPORAL_CLI_VERSION);
}

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;

/** Starts the dev server and resolves once its frontend and UI answer. */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  await fs.mkdir(path.join(options.dataDir, 'temporal'), { recursive: true });
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      // Its ports are chosen free, then bound by it a moment later; another
      // process can come between. Another set of ports, then.
      if (!(error instanceof PortTakenError) || attempt === START_ATTEMPTS) throw error;
      options.log.line('temporal', 'a port it was given was taken meanwhile; starting it again on other ports');
    }
  }
}

const START_ATTEMPTS = 3;

/** The dev server exited during start because a port it was given was taken. */
class PortTakenError extends Error {}

async function startOnce(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const { log } = options;
  const { port, uiPort, httpPort, metricsPort } = await findFreePorts(['port', 'uiPort', 'httpPort', 'metricsPort']);
  const address = `127.0.0.1:${port}`;
  const uiUrl = `http://127.0.0.1:${uiPort}`;

  let server: ServerChild | undefined;
  let bannerSeen = false;
  let portTaken = false;
  const child = spawnLogged({
    part: 'temporal',
    command: options.bin,
    // prettier-ignore
    args: [
      'server', 'start-dev',
      '--ip', '127.0.0.1',
      '--port', String(port),
      '--ui-port', String(uiPort),
      '--http-port', String(httpPort),
      '--metrics-port', String(metricsPort),
      '--db-filename', path.join(options.dataDir, 'temporal', 'temporal.db'),
      '--namespace', options.namespace,
      '--log-level', 'warn',
      '--color', 'never',
    ],
    env: process.env,
    log,
    // Its shutdown is chatty (poller warnings); after Ctrl-C only the log file wants that.
    toConsole: () => !server?.stopping,
  });
  // The banner ("Server: …") is printed once the server has finished starting;
  // the ports open earlier, before the namespaces exist.
  child.stdout!.on('data', (chunk: Buffer) => {
    if (/^Server:/m.test(chunk.toString('utf8'))) bannerSeen = true;
  });
  const watchForTakenPort = (chunk: Buffer) => {
    if (/address already in use/.test(chunk.toString('utf8'))) portTaken = true;
  };
  child.stdout!.on('data', watchForTakenPort);
  child.stderr!.on('data', watchForTakenPort);
  // Its output is read to its end before the cause of a failed start is judged.
  const outputRead = new Promise<void>((resolve) => child.once('close', () => resolve()));
  server = serverChild('temporal', child, log, STOP_GRACE_MS);
  const ready = async () => bannerSeen && (await canConnect('127.0.0.1', port, 1000)) && (await answers200(uiUrl, 1000));
  try {
    await untilReady('temporal', server, 'Temporal dev server', ready, READY_TIMEOUT_MS);
  } catch (error) {
    await outputRead;
    if (portTaken) throw new PortTakenError((error as Error).message);
    throw error;
  }
  log.line('temporal', `ready on ${address}, UI ${uiUrl}`);
  return Object.assign(server, { address, uiUrl });
}
