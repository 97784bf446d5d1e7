/**
 * Data-plane process: builds the project directory from the event stream and
 * serves the application API on its internal port. Run any number of these.
 */
import pg from 'pg';
import pino from 'pino';
import { ApiError, ConfigError, PlatformLogins, idleConnectionError, SecretBox, loadServiceConfig, platformTokenKey } from '@baseplane/contracts';
import { createObjectStore } from '@baseplane/contracts/object-store';
import { ProjectDirectory } from './directory/project-directory';
import { buildDataPlane } from './app';
import { AccessTokens } from './auth/access-tokens';
import { ConnectionRoom } from './tenants/connection-room';
import { OwnerPools } from './tenants/owner-pools';
import { CodeBook } from './auth/codes';
import { RefreshTokens } from './auth/refresh-tokens';
import { createMailer, type Mailer } from './mail/mailer';
import { ProjectMailers } from './mail/project-mailers';
import { createDataApi, dataApiMaxRows, dataApiPipelines, dataApiPoolSize } from './rest/data-api';
import { ObjectUrls } from './storage/object-urls';
import { StorageCallers } from './storage/storage-caller';
import { StorageDb } from './storage/storage-db';

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env, 'DATA_PLANE_PORT');
  const log = pino({ level: config.logLevel, base: { part: 'data-plane' } });
  const platformDb = new pg.Pool({ connectionString: config.databaseUrl, max: 4 });
  platformDb.on('error', (err) => log.warn({ err: idleConnectionError(err) }, 'idle platform connection failed'));
  const directory = new ProjectDirectory(platformDb, log);
  await directory.start();
  // One room for all the replica's tenant connections: whichever part finds the cluster full, every part's idle ones go.
  const room = new ConnectionRoom();
  // Heals a project login whose password owner code changed (platform-logins.ts); one admin connection, opened only then.
  const tenantAdmin = new pg.Pool({ connectionString: config.tenantDatabaseUrl, max: 1, idleTimeoutMillis: 1_000 });
  tenantAdmin.on('error', (err) => log.warn({ err: idleConnectionError(err) }, 'idle tenant admin connection failed'));
  const logins = new PlatformLogins(config.tenantDatabaseUrl, config.platformSecret, (sql) => tenantAdmin.query(sql), ({ error, ...heal }) =>
    error ? log.error({ ...heal, err: error }, 'project login refused; resetting its password failed') : log.warn(heal, 'project login refused; its password was reset'));
  const tenants = new OwnerPools(logins, room);
  const tokens = new AccessTokens(config.platformSecret, config.publicUrl);
  const codes = new CodeBook(config.platformSecret);
  const refreshTokens = new RefreshTokens(config.platformSecret);
  const mailer: Mailer = config.smtpUrl
    ? createMailer(config.smtpUrl, config.mailFrom)
    : { send: () => Promise.reject(new ApiError(503, 'email_unavailable', 'no mail server is configured (SMTP_URL)')) };
  const dataApi = createDataApi({ directory, tokens, logins, room, maxConnections: dataApiPoolSize(process.env), pipelines: dataApiPipelines(process.env), maxRows: dataApiMaxRows(process.env) });
  const mailers = new ProjectMailers(mailer, new SecretBox(config.platformSecret));
  const store = await createObjectStore(config);
  const storageDb = new StorageDb(logins, room);
  const dropProjectPools = directory.onEvent((event) => {
    if (event.type !== 'ProjectDeleted') return;
    void storageDb.drop(event.data.projectId);
    void tenants.drop(event.data.projectId);
  });
  const storage = {
    store,
    db: storageDb,
    callers: new StorageCallers(directory, tokens, platformDb, platformTokenKey(config.platformSecret)),
    urls: new ObjectUrls(config.platformSecret, config.publicUrl),
  };
  const app = buildDataPlane({ directory, tenants, tokens, codes, refreshTokens, mailers, publicUrl: config.publicUrl, trustedProxies: config.trustedProxies, log, dataApi, storage });
  await app.listen({ port: config.listenPort, host: '127.0.0.1' });
  log.info({ port: config.listenPort }, 'data plane listening');
  const shutdown = async () => {
    await app.close();
    await directory.stop();
    await tenants.closeAll();
    await dataApi.close();
    dropProjectPools();
    await storageDb.closeAll();
    await store.close();
    await platformDb.end();
    await tenantAdmin.end();
    process.exit(0);
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error) => {
  console.error(error instanceof ConfigError ? error.message : `data plane failed: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
});
