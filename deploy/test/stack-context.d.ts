/** What deploy/test/global-setup.ts provides to every test through vitest's `inject()`. */
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The gateway, `http://127.0.0.1:<port>`. */
    baseUrl: string;
    /** `{base_url}` as clients are told (PUBLIC_URL): the issuer of end-user tokens is under it. */
    publicUrl: string;
    /** Platform database (event store, projections), superuser URL. */
    databaseUrl: string;
    /** Cluster where tenant databases live, superuser URL. */
    tenantDatabaseUrl: string;
    /** Temporal frontend `host:port`. */
    temporalAddress: string;
    /** Temporal web UI; null when TEMPORAL_ADDRESS points at an external server. */
    temporalUiUrl: string | null;
    platformSecret: string;
    /** Internal ports of the services behind the gateway; `dataPlanes` has one port per data-plane replica. */
    servicePorts: { controlPlane: number; worker: number; dataPlane: number; dataPlanes: number[] };
    /** The stack's built-in dev inbox, `smtp://127.0.0.1:<port>` (what the services get as SMTP_URL). */
    smtpUrl: string;
    /** The stack's data directory (a fresh temp dir). */
    dataDir: string;
    /** The embedded S3 server (versitygw) the harness always starts, for the storage tests. */
    s3: import('../local/src/s3-server').S3Coordinates;
    /** Where each part's log lines go (`<part>.log`). */
    logDir: string;
  }
}
