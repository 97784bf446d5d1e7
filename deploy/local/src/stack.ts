/**
 * The whole local Baseplane in one process tree: embedded PostgreSQL and Temporal,
 * the three services under supervision, and the gateway in front. Used by
 * `npm start`, the test harness and the benchmarks.
 */
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, loadConfig } from '@baseplane/contracts';
import { startDevInbox, type DevInbox } from './dev-inbox';
import { startGateway, type Gateway } from './gateway';
import { createHealthCheck, nothingReady, type HealthCheck } from './health';
import { reservePort, waitUntil, answers200, type PortReservation } from './net';
import { claimDataDir, stopLeftovers } from './orphans';
import { PLATFORM_DATABASE, startEmbeddedPostgres, type EmbeddedCluster } from './postgres';
import { resolveS3ServerBin, startS3Server, type S3Coordinates, type S3Server } from './s3-server';
import { readOrCreateSecretFile } from './secrets';
import { REPO_ROOT, SERVICE_LAYOUT, superviseService, type ServiceName, type SupervisedService } from './services';
import { createStackLog, type StackLog, type StackLogOptions } from './stack-log';
import { resolveTemporalBin, startTemporalDevServer, type TemporalDevServer } from './temporal';

/** How to start a stack. Configuration comes from `env` (API.md → Configuration). */
export interface StackOptions extends StackLogOptions {
  /** Where PostgreSQL, Temporal's SQLite file, secrets and storage live; made absolute. */
  dataDir: string;
  /** Public port of the gateway; 0 picks a free one. Wins over env PORT. */
  port: number;
  /** Address the gateway binds; default 127.0.0.1 (`npm start` uses 0.0.0.0). */
  host?: string;
  /** The environment to configure from and pass on to the services; default process.env. */
  env?: Record<string, string | undefined>;
  /** Extra variables for the service processes only (tests use this for knobs). */
  extraServiceEnv?: Record<string, string>;
  /**
   * Entry file per service instead of `<part>/src/main.ts`, e.g. to try the
   * supervisor against another build of a service.
   */
  serviceEntries?: Partial<Record<ServiceName, string>>;
  /** Cancels a start in progress: what was started is stopped and the promise rejects. */
  signal?: AbortSignal;
  /**
   * Start the embedded S3 server even when the services do not use it (the test
   * harness runs the storage suite against it). It always starts for
   * STORAGE_BACKEND=s3 without S3_ENDPOINT.
   */
  s3Server?: boolean;
}

/** A running stack. */
export interface Stack {
  /** Where the gateway answers, `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** `{base_url}` as clients are told (PUBLIC_URL, default `http://localhost:<port>`). */
  publicUrl: string;
  port: number;
  temporalAddress: string;
  /** The embedded Temporal's web UI; null when TEMPORAL_ADDRESS points elsewhere. */
  temporalUiUrl: string | null;
  /** Platform database URL (event store, projections). */
  databaseUrl: string;
  /** Cluster where tenant databases are created (superuser URL). */
  tenantDatabaseUrl: string;
  /** Where the services send mail: SMTP_URL, else the built-in dev inbox. */
  smtpUrl: string;
  /** True when `smtpUrl` is the built-in dev inbox (readable at `GET /api/dev/inbox`). */
  devInbox: boolean;
  /** The embedded S3 server, when this stack started one; null otherwise. */
  s3: S3Coordinates | null;
  dataDir: string;
  platformSecret: string;
  /** Internal ports of the services behind the gateway; `dataPlane` is the first of `dataPlanes`, one per replica. */
  servicePorts: { controlPlane: number; worker: number; dataPlane: number; dataPlanes: number[] };
  /** Stops gateway, services, the dev inbox, the S3 server, Temporal and PostgreSQL, in that order; resolves when all are gone. */
  stop(): Promise<void>;
}

const SERVICE_READY_TIMEOUT_MS = 60_000;

/** What has been started so far, so that a failed start can undo exactly that. */
interface Started {
  /** Ports held for the services until they start. */
  reservedPorts?: PortReservation[];
  gateway?: Gateway;
  services: SupervisedService[];
  health?: HealthCheck;
  devInbox?: DevInbox;
  s3?: S3Server;
  temporal?: TemporalDevServer;
  postgres?: EmbeddedCluster;
}

/**
 * Starts everything and resolves once every present service answers its
 * `/healthz`. Throws `ConfigError` on bad configuration; on any other failure
 * stops what it had started before rethrowing.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const env = options.env ?? process.env;
  // options.port is the public port (0 allowed); validating env PORT is the caller's business.
  const config = loadConfig({ ...env, PORT: undefined });
  // Checked with the rest of the configuration: a bad value makes nothing (no DATA_DIR, no secret).
  const replicas = dataPlaneReplicas(env);
  const dataDir = path.resolve(options.dataDir);
  await fs.mkdir(dataDir, { recursive: true });
  const log = createStackLog(options);
  const started: Started = { services: [] };
  // One stack per data directory: a running one's processes are not leftovers to stop.
  const releaseDataDir = await claimDataDir(dataDir);
  // Last resort when this process exits without stop() (an uncaught error,
  // process.exit elsewhere): signal the children so none outlives us.
  const stopNowOnExit = () => stopNow(started);
  process.once('exit', stopNowOnExit);
  const stopStarted = async () => {
    process.off('exit', stopNowOnExit);
    await stopAll(started, log);
    await releaseDataDir();
  };
  const checkCancelled = () => options.signal?.throwIfAborted();

  try {
    await stopLeftovers(dataDir, log);
    const platformSecret =
      config.platformSecret ?? (await readOrCreateSecretFile(path.join(dataDir, 'platform-secret'), 48));
    // Held until the services start: PostgreSQL, Temporal and the S3 server start first and must not be given these.
    const reserved: PortReservation[] = [];
    const reserve = async () => {
      const reservation = await reservePort();
      reserved.push(reservation);
      return reservation.port;
    };
    started.reservedPorts = reserved;
    const dataPlanes: number[] = [];
    for (let i = replicas; i > 0; i--) dataPlanes.push(await reserve());
    const servicePorts = {
      controlPlane: await reserve(),
      worker: await reserve(),
      dataPlane: dataPlanes[0]!,
      dataPlanes,
    };

    // The gateway comes first so that a taken public port fails the start at once.
    let health: HealthCheck | undefined;
    started.gateway = await startGateway({
      host: options.host ?? '127.0.0.1',
      port: options.port,
      controlPlaneUrl: `http://127.0.0.1:${servicePorts.controlPlane}`,
      dataPlaneUrl: dataPlanes.map((dataPlanePort) => `http://127.0.0.1:${dataPlanePort}`),
      checkHealth: () => (health ? health.check() : Promise.resolve(nothingReady())),
    });
    const port = started.gateway.port;
    const publicUrl = env.PUBLIC_URL?.trim() ? config.publicUrl : `http://localhost:${port}`;
    checkCancelled();
    log.line('gateway', `listening on ${options.host ?? '127.0.0.1'}:${port}`);

    let databaseUrl = config.databaseUrl;
    let tenantDatabaseUrl = config.tenantDatabaseUrl ?? config.databaseUrl;
    if (databaseUrl === undefined) {
      const verbose = config.logLevel === 'debug' || config.logLevel === 'trace';
      started.postgres = await startEmbeddedPostgres({ dataDir, log, verbose });
      databaseUrl = started.postgres.urlOf(PLATFORM_DATABASE);
      // TENANT_DATABASE_URL set alone puts the tenants elsewhere; unset, they share the embedded server.
      tenantDatabaseUrl = config.tenantDatabaseUrl ?? started.postgres.urlOf('postgres');
    }

    checkCancelled();
    let temporalAddress = config.temporalAddress;
    let temporalUiUrl: string | null = null;
    if (temporalAddress === undefined) {
      started.temporal = await startTemporalDevServer({
        bin: resolveTemporalBin(env),
        dataDir,
        namespace: config.temporalNamespace,
        log,
      });
      temporalAddress = started.temporal.address;
      temporalUiUrl = started.temporal.uiUrl;
    }

    checkCancelled();
    // STORAGE_BACKEND=s3 without S3_ENDPOINT means the embedded S3 server (README → Configuration).
    const embeddedS3 = config.storageBackend === 's3' && config.s3.endpoint === undefined;
    if (embeddedS3 || options.s3Server) {
      started.s3 = await startS3Server({ bin: resolveS3ServerBin(env), dataDir, log });
    }

    checkCancelled();
    // Without SMTP_URL, mail goes to the dev inbox. It stores into a table the control
    // plane's migrations create; the data plane, the only sender, starts after those.
    let smtpUrl = config.smtpUrl;
    if (smtpUrl === undefined) {
      started.devInbox = await startDevInbox({ databaseUrl, log });
      smtpUrl = started.devInbox.url;
    }

    checkCancelled();
    health = started.health = createHealthCheck({
      databaseUrl,
      temporalAddress,
      serviceHealthUrls: {
        controlPlane: `http://127.0.0.1:${servicePorts.controlPlane}/healthz`,
        worker: `http://127.0.0.1:${servicePorts.worker}/healthz`,
        dataPlane: dataPlanes.map((dataPlanePort) => `http://127.0.0.1:${dataPlanePort}/healthz`),
      },
    });

    const serviceEnv: NodeJS.ProcessEnv = {
      ...env,
      PORT: String(port),
      PUBLIC_URL: publicUrl,
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      TENANT_DATABASE_URL: tenantDatabaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: config.temporalNamespace,
      SMTP_URL: smtpUrl,
      PLATFORM_SECRET: platformSecret,
      LOG_LEVEL: config.logLevel,
      ...options.extraServiceEnv,
    };
    // DEV_INBOX=1 opens GET /api/dev/inbox; it says what this stack runs, not what the caller's env claims.
    if (started.devInbox) serviceEnv.DEV_INBOX = '1';
    else delete serviceEnv.DEV_INBOX;
    if (embeddedS3 && started.s3) {
      Object.assign(serviceEnv, {
        S3_ENDPOINT: started.s3.endpoint,
        S3_REGION: started.s3.region,
        S3_ACCESS_KEY_ID: started.s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: started.s3.secretAccessKey,
        S3_FORCE_PATH_STYLE: 'true',
      });
    }
    const launch = (name: ServiceName, servicePort: number, label?: string) =>
      launchService({ name, label, port: servicePort, env: serviceEnv, options, started, log });
    // The control plane runs the platform migrations at start; the others rely on them.
    await Promise.all(reserved.map((reservation) => reservation.release()));
    await launch('control-plane', servicePorts.controlPlane);
    const others = await Promise.allSettled([
      launch('worker', servicePorts.worker),
      // Identical data-plane replicas, each its own supervised process and port; the gateway spreads requests over them.
      ...dataPlanes.map((dataPlanePort, i) => launch('data-plane', dataPlanePort, i === 0 ? undefined : `data-plane-${i + 1}`)),
    ]);
    for (const outcome of others) if (outcome.status === 'rejected') throw outcome.reason;

    checkCancelled();
    let stopping: Promise<void> | undefined;
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      publicUrl,
      port,
      temporalAddress,
      temporalUiUrl,
      databaseUrl,
      tenantDatabaseUrl: tenantDatabaseUrl ?? databaseUrl,
      smtpUrl,
      devInbox: started.devInbox !== undefined,
      s3: started.s3 ? s3CoordinatesOf(started.s3) : null,
      dataDir,
      platformSecret,
      servicePorts,
      stop: () => (stopping ??= stopStarted()),
    };
  } catch (error) {
    await stopStarted();
    throw error;
  }
}

/** What {@link launchService} needs. */
interface LaunchService {
  name: ServiceName;
  /** Log part of a replica (`data-plane-2`); default the name. */
  label?: string;
  port: number;
  env: NodeJS.ProcessEnv;
  options: StackOptions;
  started: Started;
  log: StackLog;
}

/** Starts one service under supervision (if its entry exists) and waits for its `/healthz`. */
async function launchService({ name, label, port, env, options, started, log }: LaunchService): Promise<void> {
  const entry = path.resolve(REPO_ROOT, options.serviceEntries?.[name] ?? SERVICE_LAYOUT[name].entry);
  if (!existsSync(entry)) {
    log.line(name, `${path.relative(REPO_ROOT, entry)} does not exist; not started`);
    return;
  }
  const { portVariable } = SERVICE_LAYOUT[name];
  const service = superviseService({ name, label, entry, port, portVariable, env, log });
  // Recorded before waiting, so that a failed start stops it too.
  started.services.push(service);
  await waitUntil(() => answers200(service.healthUrl, 1000), {
    what: `${label ?? name} /healthz`,
    timeoutMs: SERVICE_READY_TIMEOUT_MS,
    intervalMs: 200,
    abort: () => (options.signal?.aborted ? 'start cancelled' : undefined),
  });
  log.line(label ?? name, `ready on 127.0.0.1:${port}`);
}

/** DATA_PLANE_REPLICAS: how many data-plane processes to run (default 1, at most 16). */
export function dataPlaneReplicas(env: Record<string, string | undefined>): number {
  const raw = env.DATA_PLANE_REPLICAS?.trim();
  if (raw === undefined || raw === '') return 1;
  const replicas = Number(raw);
  if (!/^\d+$/.test(raw) || replicas < 1 || replicas > 16) {
    throw new ConfigError('DATA_PLANE_REPLICAS', `must be a whole number from 1 to 16, got "${raw}"`);
  }
  return replicas;
}

/** Signals every started child to stop, without waiting; safe inside an 'exit' handler. */
function stopNow(started: Started): void {
  for (const service of started.services) service.stopNow();
  started.s3?.stopNow();
  started.temporal?.stopNow();
  started.postgres?.stopNow();
}

/** Stops whatever `started` holds, gateway first and PostgreSQL last, then closes the log files. */
async function stopAll(started: Started, log: StackLog): Promise<void> {
  started.postgres?.expectExit();
  await Promise.all((started.reservedPorts ?? []).map((reservation) => reservation.release()));
  const attempt = async (part: string, stop: (() => Promise<void>) | undefined) => {
    try {
      await stop?.();
    } catch (error) {
      log.line(part, `failed to stop: ${(error as Error).message}`);
    }
  };
  await attempt('gateway', started.gateway?.close);
  await Promise.all(started.services.map((service) => attempt(service.name, () => service.stop())));
  await attempt('dev-inbox', started.devInbox?.stop);
  await attempt('s3', started.s3?.stop);
  await attempt('gateway', started.health?.close);
  await attempt('temporal', started.temporal?.stop);
  await attempt('postgres', started.postgres?.stop);
  await log.close();
}

/** The coordinates alone, without the process handle (they cross into vitest's `provide`). */
function s3CoordinatesOf(server: S3Server): S3Coordinates {
  const { endpoint, region, accessKeyId, secretAccessKey } = server;
  return { endpoint, region, accessKeyId, secretAccessKey };
}
