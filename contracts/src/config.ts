/**
 * The configuration schema of every Baseplane process (API.md → Configuration).
 * Pure: takes an environment object, returns a typed config or throws a
 * `ConfigError` whose message is one line naming the variable.
 */

export type StorageBackend = 'fs' | 's3';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  port: number;
  publicUrl: string;
  authUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  tenantDatabaseUrl: string | undefined;
  temporalAddress: string | undefined;
  temporalNamespace: string;
  smtpUrl: string | undefined;
  mailFrom: string;
  storageBackend: StorageBackend;
  s3: S3Config;
  platformSecret: string | undefined;
  logLevel: LogLevel;
  /**
   * Proxies in front of the gateway whose `X-Forwarded-For` is believed
   * (TRUSTED_PROXIES: addresses and CIDR ranges), besides loopback, which is
   * always: a client's address, which the rate limits count by, is the last
   * one of that header not in this list.
   */
  trustedProxies: string[];
}

/** Where the S3 backend keeps objects and how it reaches the service (S3_*). */
export interface S3Config {
  /** e.g. `http://127.0.0.1:9000`; undefined means AWS itself. */
  endpoint: string | undefined;
  region: string;
  /** Undefined uses the SDK's default credential chain (environment, profile, instance role). */
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** `http://host/bucket/key` rather than `http://bucket.host/key`; what most self-hosted servers want. */
  forcePathStyle: boolean;
  /** The one S3 bucket holding every project's objects (S3_BUCKET, default `baseplane`); created when missing. */
  bucket: string;
  /** S3_UPLOAD_STALL_TIMEOUT_SECONDS (default 30): an upload making no progress this long is given up (503). */
  uploadStallTimeoutSeconds?: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`invalid configuration: ${variable} ${reason}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function text(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

export function parsePort(env: Env, name: string, fallback: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a port number (1-65535), got "${raw}"`);
  const port = Number(raw);
  if (port < 1 || port > 65535) throw new ConfigError(name, `must be a port number (1-65535), got "${raw}"`);
  return port;
}

function url(env: Env, name: string, protocols: readonly string[]): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL (${protocols.join(', ')}), got "${redact(raw)}"`);
  }
  if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw.replace(/\/+$/, '');
}

function hostPort(env: Env, name: string): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9.\-]+:\d{1,5}$/.test(raw) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(raw)) {
    throw new ConfigError(name, `must be host:port, got "${raw}"`);
  }
  return raw;
}

/** proxy-addr's names for ranges, which Fastify's `trustProxy` takes besides addresses. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function trustedProxies(env: Env): string[] {
  const raw = text(env, 'TRUSTED_PROXIES');
  if (raw === undefined) return [];
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (!PROXY_RANGE_NAMES.includes(entry) && !isAddressOrRange(entry)) {
      throw new ConfigError('TRUSTED_PROXIES', `must be addresses or CIDR ranges separated by commas (or ${PROXY_RANGE_NAMES.join(', ')}), got "${entry}"`);
    }
  }
  return entries;
}

/** `192.0.2.7`, `10.0.0.0/8`, `2001:db8::1`, `2001:db8::/32`. */
function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  if (rest.length > 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return false;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) return v4.slice(1).every((octet) => Number(octet) <= 255) && (prefix === undefined || Number(prefix) <= 32);
  if (!address.includes(':') || !/^[0-9a-fA-F:.]+$/.test(address)) return false;
  try {
    // The URL parser knows IPv6's forms (`::`, an IPv4 tail); node:net is not for a module browsers load too.
    new URL(`http://[${address}]/`);
  } catch {
    return false;
  }
  return prefix === undefined || Number(prefix) <= 128;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/**
 * Hides the password part of every URL in `raw` (an error line, an SMTP URL
 * shown to operators): `scheme://user:***@host`. The credentials end at the
 * authority's last `@`, so a password holding a raw `@` is hidden whole, and
 * an empty user name (`smtp://:password@host`) hides its password too. A
 * password holding a raw `/`, `?` or `#` (which end the authority for a URL
 * parser) is hidden up to the `@` after it, unless what comes before that
 * character is a host and port (`http://h:80/?to=a@b` holds no password).
 */
export function redact(raw: string): string {
  // Each `//` up to the last `@` before a space or the next `//`.
  return raw.replace(/\/\/((?:(?!\/\/)\S)*)@/g, (whole, run: string) => {
    const end = run.search(/[/?#]/);
    const authority = end < 0 ? run : run.slice(0, end);
    const at = authority.lastIndexOf('@');
    let userinfo = run;
    if (end >= 0 && at >= 0) userinfo = authority.slice(0, at);
    else if (end >= 0 && /^[^:]*(:\d*)?$/.test(authority)) return whole;
    const colon = userinfo.indexOf(':');
    if (colon < 0) return whole;
    const rest = userinfo === run ? '' : `${run.slice(userinfo.length + 1)}@`;
    return `//${userinfo.slice(0, colon)}:***@${rest}`;
  });
}

/** The SQL console's limits: SQL_STATEMENT_TIMEOUT_MS (default 60 s) and SQL_ROW_CAP (default 10,000). Read by the control plane. */
export function sqlConsoleVariables(env: Env): { statementTimeoutMs: number; rowCap: number } {
  return {
    statementTimeoutMs: positiveInteger(env, 'SQL_STATEMENT_TIMEOUT_MS', 60_000),
    rowCap: positiveInteger(env, 'SQL_ROW_CAP', 10_000),
  };
}

/**
 * The data API's connections per project and replica: DATA_API_POOL_SIZE
 * (held by one request alone; default 10, 1 to 100) and DATA_API_PIPELINES
 * (shared, pipelined; default 2, 0 to 100, 0 turns sharing off); and
 * DATA_API_MAX_ROWS, the most rows a read answers (default 1,000 as
 * Supabase's `max_rows`; 0 for no cap, as PostgREST's default). Read by the data plane.
 */
export function dataApiVariables(env: Env): { poolSize: number; pipelines: number; maxRows: number | undefined } {
  const maxRows = text(env, 'DATA_API_MAX_ROWS');
  if (maxRows !== undefined && !/^\d{1,9}$/.test(maxRows)) throw new ConfigError('DATA_API_MAX_ROWS', `must be a whole number (0 for no cap), got "${maxRows}"`);
  return {
    poolSize: connectionCount(env, 'DATA_API_POOL_SIZE', 1, 10),
    pipelines: connectionCount(env, 'DATA_API_PIPELINES', 0, 2),
    maxRows: maxRows === undefined ? 1000 : Number(maxRows) === 0 ? undefined : Number(maxRows),
  };
}

const WEEK_MINUTES = 7 * 24 * 60;

/**
 * The storage sweep's schedule (workers): STORAGE_SWEEP_INTERVAL_MINUTES
 * (default 60; 0 removes the schedule, up to a week) and
 * STORAGE_SWEEP_GRACE_MINUTES (default 60, up to a week): bytes without a row
 * younger than that are left alone.
 */
export function storageSweepVariables(env: Env): { intervalMinutes: number; graceMinutes: number } {
  const minutes = (name: string, fallback: number): number => {
    const raw = text(env, name);
    if (raw === undefined) return fallback;
    if (!/^\d{1,5}$/.test(raw) || Number(raw) > WEEK_MINUTES) throw new ConfigError(name, `must be a whole number of minutes from 0 to ${WEEK_MINUTES}, got "${raw}"`);
    return Number(raw);
  };
  return { intervalMinutes: minutes('STORAGE_SWEEP_INTERVAL_MINUTES', 60), graceMinutes: minutes('STORAGE_SWEEP_GRACE_MINUTES', 60) };
}

function positiveInteger(env: Env, name: string, fallback: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) === 0) throw new ConfigError(name, `must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/** A whole number from `min` to 100 in `env[name]`, or `fallback` when unset. */
function connectionCount(env: Env, name: string, min: number, fallback: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  const size = Number(raw);
  if (!/^\d+$/.test(raw) || size < min || size > 100) throw new ConfigError(name, `must be a whole number from ${min} to 100, got "${raw}"`);
  return size;
}

export function loadConfig(env: Env): Config {
  const port = parsePort(env, 'PORT', 8000);
  // Read by one service each, but checked by every process that loads the config, the
  // supervisor included: a bad one stops `npm start` before anything starts.
  sqlConsoleVariables(env);
  dataApiVariables(env);
  storageSweepVariables(env);
  const publicUrl = url(env, 'PUBLIC_URL', ['http', 'https']) ?? `http://localhost:${port}`;
  const authUrl = url(env, 'AUTH_URL', ['http', 'https']) ?? `${publicUrl}/auth`;

  const storage = text(env, 'STORAGE_BACKEND') ?? 'fs';
  if (storage !== 'fs' && storage !== 's3') throw new ConfigError('STORAGE_BACKEND', `must be fs or s3, got "${storage}"`);
  // S3_ENDPOINT may be unset here: the local stack then starts its embedded S3 server; services require it.
  const s3Endpoint = url(env, 'S3_ENDPOINT', ['http', 'https']);
  const s3Bucket = text(env, 'S3_BUCKET') ?? 'baseplane';
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(s3Bucket)) {
    throw new ConfigError('S3_BUCKET', `must be an S3 bucket name (3-63 of a-z, 0-9, ".", "-"), got "${s3Bucket}"`);
  }

  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);

  const platformSecret = text(env, 'PLATFORM_SECRET');
  if (platformSecret !== undefined && platformSecret.length < 32) {
    throw new ConfigError('PLATFORM_SECRET', 'must be at least 32 characters');
  }
  const mailFrom = text(env, 'MAIL_FROM') ?? 'Baseplane <no-reply@baseplane.local>';
  if (!/@/.test(mailFrom)) throw new ConfigError('MAIL_FROM', `must contain an email address, got "${mailFrom}"`);

  return {
    port,
    publicUrl,
    authUrl,
    dataDir: text(env, 'DATA_DIR') ?? './.data',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres', 'postgresql']),
    tenantDatabaseUrl: url(env, 'TENANT_DATABASE_URL', ['postgres', 'postgresql']),
    temporalAddress: hostPort(env, 'TEMPORAL_ADDRESS'),
    temporalNamespace: text(env, 'TEMPORAL_NAMESPACE') ?? 'default',
    smtpUrl: url(env, 'SMTP_URL', ['smtp', 'smtps']),
    mailFrom,
    storageBackend: storage,
    s3: {
      endpoint: s3Endpoint,
      region: text(env, 'S3_REGION') ?? 'us-east-1',
      accessKeyId: text(env, 'S3_ACCESS_KEY_ID'),
      secretAccessKey: text(env, 'S3_SECRET_ACCESS_KEY'),
      forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', true),
      bucket: s3Bucket,
      uploadStallTimeoutSeconds: positiveInteger(env, 'S3_UPLOAD_STALL_TIMEOUT_SECONDS', 30),
    },
    platformSecret,
    logLevel,
    trustedProxies: trustedProxies(env),
  };
}

/**
 * What a service's `trustProxy` is given: loopback (the local gateway, which
 * appends its client to `X-Forwarded-For`) and TRUSTED_PROXIES.
 */
export function proxiesToTrust(config: Pick<Config, 'trustedProxies'>): string[] {
  return ['loopback', ...config.trustedProxies];
}

/**
 * What a service process (control plane, worker, data plane) needs on top of
 * the public config; the supervisor in deploy/local always provides these.
 */
export interface ServiceConfig extends Config {
  databaseUrl: string;
  tenantDatabaseUrl: string;
  temporalAddress: string;
  platformSecret: string;
  /** Internal port this process listens on (behind the gateway). */
  listenPort: number;
}

export function loadServiceConfig(env: Env, portVariable: string): ServiceConfig {
  const config = loadConfig(env);
  const require = <T>(value: T | undefined, name: string): T => {
    if (value === undefined) throw new ConfigError(name, 'is required by this process (the supervisor sets it)');
    return value;
  };
  if (config.storageBackend === 's3') require(config.s3.endpoint, 'S3_ENDPOINT');
  return {
    ...config,
    databaseUrl: require(config.databaseUrl, 'DATABASE_URL'),
    tenantDatabaseUrl: config.tenantDatabaseUrl ?? require(config.databaseUrl, 'DATABASE_URL'),
    temporalAddress: require(config.temporalAddress, 'TEMPORAL_ADDRESS'),
    platformSecret: require(config.platformSecret, 'PLATFORM_SECRET'),
    listenPort: parsePort(env, portVariable, 0),
  };
}
