/**
 * The Baseplane service processes (control plane, worker, data plane) as the
 * local stack runs them: one `node --import tsx <part>/src/main.ts` each,
 * restarted when it dies unexpectedly.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describeExit, hasExited, spawnLogged, terminate } from './child-process';
import type { StackLog } from './stack-log';

/** Names of the supervised services, as used in log prefixes and log file names. */
export type ServiceName = 'control-plane' | 'worker' | 'data-plane';

/**
 * Where each service's entry lives, which variable tells it its internal
 * port, and the V8 flags it runs with.
 *
 * The data plane's young generation may grow to 128 MB semi-spaces (V8's
 * default is 16 MB on 64-bit): a request's garbage then dies in far fewer
 * scavenges. Measured with `bench:rest` on 2 cores: single-row GETs on the
 * fleet 5,900-6,500/s → 6,400-8,500/s, a user token's 4,900/s → 6,200-6,800/s,
 * and its resident memory under that load ~260 MB; the 1 GB upload's growth
 * is unchanged (its bytes live outside the V8 heap).
 *
 * With young generations that large, V8 starts marking the old generation
 * whenever its room left (live size × ~1.5, 10-25 MB here) is smaller than
 * the young generation, which it nearly always is: under 1 MB uploads a full
 * mark-compact came every 15 uploads. The old generation is therefore given
 * at least 128 MB before it is collected (`--initial-old-space-size`, which
 * V8 also keeps as the floor of the limit it sets after each collection).
 * Measured on one replica, four 1 MB uploads at a time, 500 after a warm-up:
 * mark-compacts 29-36 → 0, data-plane CPU per upload 10.5 → 6.9-7.1 ms,
 * 97 → 125 MB/s. The data API's CPU per GET is the same either way (~0.2 ms;
 * it seldom reached a mark-compact).
 */
export const SERVICE_LAYOUT: Record<ServiceName, { entry: string; portVariable: string; v8Flags?: string[] }> = {
  'control-plane': { entry: 'control-plane/src/main.ts', portVariable: 'CONTROL_PLANE_PORT' },
  worker: { entry: 'workers/src/main.ts', portVariable: 'WORKER_PORT' },
  'data-plane': { entry: 'data-plane/src/main.ts', portVariable: 'DATA_PLANE_PORT', v8Flags: ['--max-semi-space-size=128', '--initial-old-space-size=128'] },
};

/** Absolute path of the repository root (this file is deploy/local/src/services.ts). */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The tsx loader as a file URL, resolved from the repository root where tsx is installed. */
export function tsxLoaderUrl(): string {
  const requireFromRoot = createRequire(path.join(REPO_ROOT, 'package.json'));
  return pathToFileURL(requireFromRoot.resolve('tsx')).href;
}

/** The pid a service reports on its own `/healthz` (on its internal port): it changes when the supervisor restarts it. */
export async function servicePid(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`);
  return ((await response.json()) as { pid: number }).pid;
}

/** A service process under supervision. */
export interface SupervisedService {
  name: ServiceName;
  /** Internal port it listens on (kept across restarts). */
  port: number;
  /** Its own health endpoint, `http://127.0.0.1:<port>/healthz`. */
  healthUrl: string;
  /** How many times it has been restarted after an unexpected exit. */
  restarts(): number;
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL after 5 s; no restart follows. */
  stop(): Promise<void>;
  /** Sends SIGTERM without waiting (no restart follows): for when this process is exiting. */
  stopNow(): void;
}

/** What {@link superviseService} starts. */
export interface SuperviseOptions {
  name: ServiceName;
  /** Log part when it differs from `name` (replicas: `data-plane-2`). */
  label?: string;
  /** Absolute path of the TypeScript entry file. */
  entry: string;
  port: number;
  /** The variable carrying `port` to the process (CONTROL_PLANE_PORT…). */
  portVariable: string;
  env: NodeJS.ProcessEnv;
  log: StackLog;
}

const RESTART_DELAY_MS = 200;
const STOP_GRACE_MS = 5_000;

/** Starts the service and keeps it running until `stop()`. */
export function superviseService(options: SuperviseOptions): SupervisedService {
  const { name, log } = options;
  const part = options.label ?? name;
  const loader = tsxLoaderUrl();
  let stopping = false;
  let restartCount = 0;
  let restartTimer: NodeJS.Timeout | undefined;

  const launch = () => {
    const child = spawnLogged({
      part,
      command: process.execPath,
      args: [...(SERVICE_LAYOUT[name].v8Flags ?? []), '--import', loader, options.entry],
      env: { ...options.env, [options.portVariable]: String(options.port) },
      cwd: REPO_ROOT,
      log,
    });
    child.once('exit', (code, signal) => {
      // A Ctrl-C reaches the whole process group, so a child may die just before stop() is called;
      // the delay gives stop() the chance to cancel the restart.
      if (stopping) return;
      log.line(part, `exited unexpectedly (${describeExit(code, signal)}); restarting in ${RESTART_DELAY_MS} ms`);
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (stopping) return;
        restartCount += 1;
        current = launch();
      }, RESTART_DELAY_MS);
    });
    return child;
  };
  let current = launch();

  return {
    name,
    port: options.port,
    healthUrl: `http://127.0.0.1:${options.port}/healthz`,
    restarts: () => restartCount,
    isRunning: () => !hasExited(current),
    stopNow() {
      stopping = true;
      clearTimeout(restartTimer);
      if (!hasExited(current)) current.kill('SIGTERM');
    },
    async stop() {
      stopping = true;
      clearTimeout(restartTimer);
      await terminate(current, STOP_GRACE_MS, () => log.line(part, 'did not stop within 5 s; killing it'));
    },
  };
}
