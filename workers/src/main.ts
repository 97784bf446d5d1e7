/**
 * Worker process: runs project workflows and their activities on the
 * project task queue, and answers `GET /healthz` (with its pid) on its
 * internal port once polling.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection, ScheduleAlreadyRunning, ScheduleNotFoundError } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, makeTelemetryFilterString, type LogLevel } from '@temporalio/worker';
import pg from 'pg';
import pino from 'pino';
import {
  ConfigError, PROJECT_TASK_QUEUE, STORAGE_SWEEP_SCHEDULE_ID, STORAGE_SWEEP_WORKFLOW_TYPE, applyPasswordPurpose, deriveSecret, idleConnectionError,
  loadServiceConfig, storageSweepVariables, tenantApplyRole, tenantDatabaseName, tenantOwnerUrl, type StorageSweepInput,
} from '@baseplane/contracts';
import { createObjectStore } from '@baseplane/contracts/object-store';
import { createActivities } from './activities';
import { createStorageSweepActivities } from './storage-sweep';
import { PlatformStore } from './platform-store';
import { TenantPools } from './tenant-pools';
import { ensureDataApiLogins } from './data-api-logins';
import { upgradeTenantSchemas } from './tenant-schema';

const WORKFLOWS = fileURLToPath(new URL('./workflows.ts', import.meta.url));

/**
 * Bundling workflows with webpack takes seconds; the bundle is cached in
 * DATA_DIR under a hash of the sources it is made from, so a restarted
 * worker is polling again at once.
 */
async function workflowBundle(dataDir: string, log: pino.Logger): Promise<{ code: string }> {
  const sources = [WORKFLOWS, fileURLToPath(new URL('./activities.ts', import.meta.url)), fileURLToPath(new URL('../../contracts/src/workflows.ts', import.meta.url))];
  const hash = createHash('sha256');
  for (const file of sources) hash.update(await readFile(file));
  const file = path.join(dataDir, 'cache', `workflows-${hash.digest('hex').slice(0, 16)}.js`);
  try {
    return { code: await readFile(file, 'utf8') };
  } catch {
    const started = Date.now();
    const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: new DefaultLogger('WARN') });
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(`${file}.tmp`, bundle.code);
    await rename(`${file}.tmp`, file);
    log.info({ ms: Date.now() - started }, 'workflow bundle built');
    return bundle;
  }
}

/**
 * Makes the storage sweep's schedule say what the configuration does: every
 * `intervalMinutes` (0: no schedule), with the configured grace; created,
 * updated or deleted. Several workers starting at once come to the same.
 */
async function scheduleStorageSweep(client: Client, { intervalMinutes, graceMinutes }: { intervalMinutes: number; graceMinutes: number }, log: pino.Logger): Promise<void> {
  const handle = client.schedule.getHandle(STORAGE_SWEEP_SCHEDULE_ID);
  if (intervalMinutes === 0) {
    await handle.delete().catch((error: unknown) => { if (!(error instanceof ScheduleNotFoundError)) throw error; });
    return;
  }
  const input: StorageSweepInput = { graceSeconds: graceMinutes * 60 };
  const action = { type: 'startWorkflow' as const, workflowType: STORAGE_SWEEP_WORKFLOW_TYPE, workflowId: STORAGE_SWEEP_SCHEDULE_ID, taskQueue: PROJECT_TASK_QUEUE, args: [input] };
  const spec = { intervals: [{ every: `${intervalMinutes}m` as const }] };
  // One sweep at a time; one missed while Temporal was away runs when it is back, not every one missed.
  const policies = { overlap: 'SKIP' as const, catchupWindow: `${intervalMinutes}m` as const };
  try {
    await client.schedule.create({ scheduleId: STORAGE_SWEEP_SCHEDULE_ID, spec, action, policies });
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    await handle.update((previous) => ({ ...previous, spec, action, policies }));
  }
  log.info({ intervalMinutes, graceMinutes }, 'storage sweep scheduled');
}

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env, 'WORKER_PORT');
  const sweep = storageSweepVariables(process.env);
  const log = pino({ level: config.logLevel, base: { part: 'worker' } });
  // The SDK logs every state change at INFO; only its warnings belong in our log.
  const sdkLevel: LogLevel = config.logLevel === 'debug' || config.logLevel === 'trace' ? 'DEBUG' : 'WARN';
  Runtime.install({ logger: new DefaultLogger(sdkLevel), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: sdkLevel }) } } });

  const platformDb = new pg.Pool({ connectionString: config.databaseUrl, max: 5, application_name: 'baseplane-worker' });
  const tenantAdmin = new pg.Pool({ connectionString: config.tenantDatabaseUrl, max: 5, application_name: 'baseplane-worker' });
  for (const pool of [platformDb, tenantAdmin]) pool.on('error', (err) => log.warn({ err: idleConnectionError(err) }, 'idle connection failed'));

  // Before any workflow runs: every tenant database's data API logs in as a login of its own.
  await ensureDataApiLogins(tenantAdmin, config.platformSecret);
  const tenants = TenantPools.asAdmin(config.tenantDatabaseUrl);
  const platform = new PlatformStore(platformDb);
  // Before any workflow runs: databases made by an earlier release get the tenant schema's newer revisions.
  await upgradeTenantSchemas({ platform, transaction: (projectId, work) => tenants.transaction(projectId, work), log });
  const appliers = new TenantPools((projectId) =>
    tenantOwnerUrl(config.tenantDatabaseUrl, tenantApplyRole(projectId), deriveSecret(config.platformSecret, applyPasswordPurpose(projectId)), tenantDatabaseName(projectId)));
  // Bucket deletions empty the bucket's prefix in the same store the data plane writes.
  const objects = await createObjectStore(config);
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: PROJECT_TASK_QUEUE,
    workflowBundle: await workflowBundle(path.resolve(config.dataDir), log),
    activities: {
      ...createActivities({ platform, tenantAdmin, tenants, appliers, platformSecret: config.platformSecret, objects }),
      ...createStorageSweepActivities({ platformDb, tenantDatabaseUrl: config.tenantDatabaseUrl, objects, log }),
    },
  });
  // A schedule Temporal refuses (schedules turned off in its namespace, say) costs the sweep, not the worker.
  await Connection.connect({ address: config.temporalAddress })
    .then((clientConnection) =>
      scheduleStorageSweep(new Client({ connection: clientConnection, namespace: config.temporalNamespace }), sweep, log).finally(() => clientConnection.close()))
    .catch((err: unknown) => log.error({ err }, 'could not schedule the storage sweep'));

  const health = createServer((request, response) => {
    const ok = request.url === '/healthz' && worker.getState() === 'RUNNING';
    response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ status: ok ? 'ok' : 'unavailable', state: worker.getState(), pid: process.pid }));
  });
  await new Promise<void>((resolve) => health.listen(config.listenPort, '127.0.0.1', resolve));

  let stopping = false;
  const stop = () => {
    // A second signal while draining must not call shutdown() again (it throws).
    if (stopping) return;
    stopping = true;
    worker.shutdown();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  log.info({ taskQueue: PROJECT_TASK_QUEUE }, 'worker polling');
  await worker.run();
  health.close();
  await connection.close();
  await Promise.all([platformDb.end(), tenantAdmin.end(), tenants.closeAll(), appliers.closeAll(), objects.close()]);
}

main().catch((error) => {
  console.error(error instanceof ConfigError ? error.message : `worker failed: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
});
