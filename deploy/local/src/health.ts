/**
 * The stack-wide readiness report behind the gateway's `GET /healthz`: one
 * probe per part (platform database, Temporal, each service), 1 s each.
 */
import pg from 'pg';
import { answers200, canConnect, splitHostPort } from './net';

/** The parts `/healthz` reports on (API.md → Conventions). */
export const HEALTH_PARTS = ['platformDatabase', 'temporal', 'controlPlane', 'worker', 'dataPlane'] as const;
export type HealthPart = (typeof HEALTH_PARTS)[number];
export type PartStatus = 'ok' | 'unavailable';

/** Body of `GET /healthz`. */
export interface HealthReport {
  status: 'ok' | 'unavailable';
  parts: Record<HealthPart, PartStatus>;
}

/** Where the probes look. */
export interface HealthTargets {
  databaseUrl: string;
  temporalAddress: string;
  /** `/healthz` URL of each internal service; the data plane's part is ok when every replica answers. */
  serviceHealthUrls: { controlPlane: string; worker: string; dataPlane: string | string[] };
}

/** A reusable prober; `close()` ends its database pool. */
export interface HealthCheck {
  check(): Promise<HealthReport>;
  close(): Promise<void>;
}

const PROBE_TIMEOUT_MS = 1000;

/** The report when nothing could be probed yet (the stack is still starting). */
export function nothingReady(): HealthReport {
  return reportOf({ platformDatabase: false, temporal: false, controlPlane: false, worker: false, dataPlane: false });
}

/** Builds the prober for `targets`. */
export function createHealthCheck(targets: HealthTargets): HealthCheck {
  const pool = new pg.Pool({
    connectionString: targets.databaseUrl,
    max: 1,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    application_name: 'baseplane-gateway-health',
  });
  // An idle connection dropped by a server restart must not crash the supervisor.
  pool.on('error', () => {});
  const temporal = splitHostPort(targets.temporalAddress);

  const databaseAnswers = async () => {
    try {
      await pool.query('select 1');
      return true;
    } catch {
      return false;
    }
  };

  return {
    async check() {
      const [platformDatabase, temporalUp, controlPlane, worker, dataPlane] = await Promise.all([
        databaseAnswers(),
        canConnect(temporal.host, temporal.port, PROBE_TIMEOUT_MS),
        answers200(targets.serviceHealthUrls.controlPlane, PROBE_TIMEOUT_MS),
        answers200(targets.serviceHealthUrls.worker, PROBE_TIMEOUT_MS),
        Promise.all([targets.serviceHealthUrls.dataPlane].flat().map((url) => answers200(url, PROBE_TIMEOUT_MS))).then((up) => up.every(Boolean)),
      ]);
      return reportOf({ platformDatabase, temporal: temporalUp, controlPlane, worker, dataPlane });
    },
    close: () => pool.end(),
  };
}

function reportOf(up: Record<HealthPart, boolean>): HealthReport {
  const parts = Object.fromEntries(HEALTH_PARTS.map((part) => [part, up[part] ? 'ok' : 'unavailable'])) as Record<
    HealthPart,
    PartStatus
  >;
  return { status: HEALTH_PARTS.every((part) => up[part]) ? 'ok' : 'unavailable', parts };
}
