/**
 * Vitest global setup: one real local stack (embedded PostgreSQL, Temporal dev
 * server, the services, the gateway) in a fresh temp dir for the whole run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startStack, type Stack } from '../local/src/stack';
import { serviceEnvFromJson, stackTestEnv } from './stack-env';

/** Starts the stack and provides its coordinates; the returned function stops it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-test-'));
  const logDir = path.join(dir, 'logs');
  // Set BASEPLANE_KEEP_TEST_DIR=1 to keep data and logs for a post-mortem.
  const keep = process.env.BASEPLANE_KEEP_TEST_DIR === '1';
  console.log(`[stack] service logs: ${logDir}`);

  // Tests read the emailed codes from the built-in dev inbox, never from the developer's SMTP server.
  const env = stackTestEnv();
  delete env.SMTP_URL;
  // A stalled S3 upload is given up after 8 s rather than 30 s, so that a test can stall one (storage-objects-upload.e2e.test.ts) without a long wait.
  env.S3_UPLOAD_STALL_TIMEOUT_SECONDS ??= '8';
  // The data plane runs as a fleet: two replicas behind the gateway, so tests see what a scaled deployment does.
  env.DATA_PLANE_REPLICAS ??= '2';
  // An ingress in front of the gateway, as in a deployment: tests send X-Forwarded-For as it would pass it on (see TRUSTED_INGRESS).
  env.TRUSTED_PROXIES ??= '192.0.2.0/24';

  let stack: Stack;
  try {
    stack = await startStack({
      dataDir: dir,
      port: 0,
      env,
      quiet: true,
      logDir,
      // The storage tests run against the fs store and against this real S3 server.
      s3Server: true,
      extraServiceEnv: serviceEnvFromJson(process.env.BASEPLANE_TEST_SERVICE_ENV),
    });
  } catch (error) {
    // startStack stopped what it had started; the logs say why it failed, so keep them.
    console.error(`[stack] failed to start; logs kept in ${logDir}`);
    throw error;
  }

  project.provide('baseUrl', stack.baseUrl);
  project.provide('publicUrl', stack.publicUrl);
  project.provide('databaseUrl', stack.databaseUrl);
  project.provide('tenantDatabaseUrl', stack.tenantDatabaseUrl);
  project.provide('temporalAddress', stack.temporalAddress);
  project.provide('temporalUiUrl', stack.temporalUiUrl);
  project.provide('platformSecret', stack.platformSecret);
  project.provide('servicePorts', stack.servicePorts);
  project.provide('smtpUrl', stack.smtpUrl);
  project.provide('dataDir', stack.dataDir);
  project.provide('s3', stack.s3!);
  project.provide('logDir', logDir);

  return async () => {
    await stack.stop();
    if (keep) console.log(`[stack] kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  };
}
