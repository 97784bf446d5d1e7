/**
 * Control-plane process: migrates the platform database, starts the
 * projector/dispatcher subscription and serves the operator API on its
 * internal port (the gateway routes `/api` here).
 */
import 'reflect-metadata';
import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import pino from 'pino';
import { ConfigError, answerClientError, answerFrameworkError, emptyJsonIsNoBody, idleConnectionError, refuseEncodedBody, loadServiceConfig, proxiesToTrust, type ProjectEvent, type RecordedEvent } from '@baseplane/contracts';
import { AppModule } from './app.module';
import { ApiErrorFilter } from './http/api-error.filter';
import { migratePlatformDatabase } from './migrate';
import { Subscription } from './event-store/subscription';
import { projectProjectEvent } from './projections/project-projection';
import { WorkflowDispatcher } from './projections/workflow-dispatcher';
import { OperationWaiter } from './projects/operation-waiter';
import { SqlConsole } from './sql/sql-console';

async function main(): Promise<void> {
  const config = loadServiceConfig(process.env, 'CONTROL_PLANE_PORT');
  const log = pino({ level: config.logLevel, base: { part: 'control-plane' } });
  const db = new pg.Pool({ connectionString: config.databaseUrl, max: 20 });
  db.on('error', (err) => log.warn({ err: idleConnectionError(err) }, 'idle platform connection failed'));
  const applied = await migratePlatformDatabase(db);
  if (applied.length) log.info({ applied }, 'platform database migrated');

  const connection = await Connection.connect({ address: config.temporalAddress });
  const temporal = new Client({ connection, namespace: config.temporalNamespace });
  const dispatcher = new WorkflowDispatcher(temporal);
  const subscription = new Subscription(
    db,
    'control-plane',
    async (event, tx) => {
      await projectProjectEvent(event as RecordedEvent<ProjectEvent>, tx);
      await dispatcher.dispatch(event as RecordedEvent<{ type: string; data: { projectId?: string } }>);
    },
    { log },
  );
  const waiter = new OperationWaiter(db);
  await waiter.start();

  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.register({
      config, db, temporal, waiter, log,
      reportHeal: ({ error, ...heal }) =>
        error ? log.error({ ...heal, err: error }, 'project login refused; resetting its password failed') : log.warn(heal, 'project login refused; its password was reset'),
    }),
    // trustProxy: the client's address from X-Forwarded-For as the local gateway (on loopback) and TRUSTED_PROXIES pass it on, for the rate limits.
    new FastifyAdapter({ bodyLimit: 1024 * 1024, trustProxy: proxiesToTrust(config), clientErrorHandler: answerClientError, frameworkErrors: answerFrameworkError }),
    // rawBody: the rows API reads a body's numbers again as written (rows/exact-json.ts).
    { logger: ['error', 'warn'], rawBody: true },
  );
  app.useGlobalFilters(new ApiErrorFilter(log));
  // A JSON content type over an empty body is no body, as on the data plane. Registering a parser also keeps Nest from
  // adding its form parser: the management API reads JSON only (a form is 415).
  const json = emptyJsonIsNoBody(app.getHttpAdapter().getInstance().getDefaultJsonParser('error', 'error'));
  app.useBodyParser<Server>('application/json', {}, json);
  // Any origin, as the data plane allows: callers authenticate with a Bearer token or a key in a header, never a cookie.
  app.enableCors({
    origin: '*',
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['authorization', 'apikey', 'content-type', 'accept', 'prefer', 'x-client-info'],
    exposedHeaders: ['location', 'retry-after'],
    maxAge: 86400,
    // An OPTIONS without Origin or Access-Control-Request-Method is no browser's preflight; strict, @fastify/cors refuses
    // it 400 in plain text, not API.md's error shape. It gets the preflight's answer, as the data plane gives it.
    strictPreflight: false,
  });
  // A compressed body is refused before anything reads it as it is (after CORS, so a page can read the refusal).
  app.getHttpAdapter().getInstance().addHook('onRequest', async (request, reply) => {
    const refused = refuseEncodedBody(request.headers);
    if (refused) return reply.code(refused.status).header('content-type', 'application/json; charset=utf-8').send(refused.toBody());
  });
  await app.listen(config.listenPort, '127.0.0.1');
  subscription.start();
  log.info({ port: config.listenPort }, 'control plane listening');
  // DDL of console calls a stopped control plane did not record yet (the tenants' outboxes), in the background.
  void db.query<{ id: string }>("select id from projects where status = 'active' order by created_at")
    .then(({ rows }) => app.get(SqlConsole).relayAll(rows.map((row) => row.id)))
    .catch((error: unknown) => log.warn({ err: error }, 'could not look for unrecorded SQL console DDL'));

  const shutdown = async () => {
    await subscription.stop();
    await app.close();
    await waiter.stop();
    await connection.close();
    await db.end();
    process.exit(0);
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

main().catch((error) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error('control plane failed to start:', error instanceof Error ? error.message : error);
  }
  process.exit(1);
});
