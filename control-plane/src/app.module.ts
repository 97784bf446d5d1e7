/**
 * Wiring of the control plane: NestJS modules and DI carry the plumbing; the
 * decisions stay in domain/. Every dependency is built once from the config.
 */
import { Controller, Get, Inject, Module, type DynamicModule } from '@nestjs/common';
import { CqrsModule, CommandBus } from '@nestjs/cqrs';
import { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { HealReport, ServiceConfig } from '@baseplane/contracts';
import { EventStore } from './event-store/event-store';
import { PlatformSecrets } from './accounts/secrets';
import { PlatformTokenService } from './accounts/platform-tokens';
import { AccountsService } from './accounts/accounts.service';
import { AccountsController } from './accounts/accounts.controller';
import { CallerResolver } from './http/caller';
import { ExecuteProjectCommandHandler } from './projects/project-command';
import { OperationWaiter } from './projects/operation-waiter';
import { CommandRunner } from './projects/command-runner';
import { ProjectsService } from './projects/projects.service';
import { ProjectsController } from './projects/projects.controller';
import { TenantConnections } from './tenants/tenant-connections';
import { TablesController } from './tables/tables.controller';
import { ExecuteSchemaCommandHandler } from './tables/schema-command';
import { RowsController } from './rows/rows.controller';
import { SqlController } from './sql/sql.controller';
import { sqlConsoleProvider } from './sql/sql-console';
import { DevInboxController } from './dev-inbox/dev-inbox.controller';
import { AuthSettingsController } from './auth-admin/auth-settings.controller';
import { UsersController } from './auth-admin/users.controller';
import { RestSettingsController } from './rest-admin/rest-settings.controller';
import { BucketsController } from './storage/buckets.controller';
import { ExecuteBucketCommandHandler } from './storage/bucket-command';

export const PG_POOL = Symbol('PG_POOL');
export const CONFIG = Symbol('CONFIG');

@Controller()
class HealthController {
  constructor(@Inject(PG_POOL) private readonly db: Pool) {}

  @Get('healthz')
  async health() {
    await this.db.query('select 1');
    return { status: 'ok', pid: process.pid };
  }
}

export interface AppDependencies {
  config: ServiceConfig;
  db: Pool;
  temporal: Client;
  waiter: OperationWaiter;
  /** Hears each owner login healed (its password set back after owner code changed it). */
  reportHeal?: (heal: HealReport) => void;
  /** Where services log what they handle on their own (the SQL console's DDL recorded late). */
  log?: Logger;
}

@Module({})
export class AppModule {
  static register(deps: AppDependencies): DynamicModule {
    return {
      module: AppModule,
      imports: [CqrsModule.forRoot()],
      controllers: [HealthController, AccountsController, ProjectsController, TablesController, RowsController, SqlController, DevInboxController, AuthSettingsController, UsersController, RestSettingsController, BucketsController],
      providers: [
        { provide: CONFIG, useValue: deps.config },
        { provide: PG_POOL, useValue: deps.db },
        { provide: Client, useValue: deps.temporal },
        { provide: OperationWaiter, useValue: deps.waiter },
        { provide: EventStore, useFactory: (db: Pool) => new EventStore(db), inject: [PG_POOL] },
        { provide: PlatformSecrets, useFactory: (c: ServiceConfig) => new PlatformSecrets(c.platformSecret), inject: [CONFIG] },
        { provide: PlatformTokenService, useFactory: (db: Pool, s: PlatformSecrets) => new PlatformTokenService(db, s), inject: [PG_POOL, PlatformSecrets] },
        { provide: AccountsService, useFactory: (db: Pool, t: PlatformTokenService) => new AccountsService(db, t, (err) => deps.log?.warn({ err }, 'rate-limit sweep failed')), inject: [PG_POOL, PlatformTokenService] },
        { provide: CallerResolver, useFactory: (db: Pool, t: PlatformTokenService) => new CallerResolver(db, t), inject: [PG_POOL, PlatformTokenService] },
        { provide: CommandRunner, useFactory: (waiter: OperationWaiter) => new CommandRunner(waiter), inject: [OperationWaiter] },
        {
          provide: ProjectsService,
          useFactory: (db: Pool, store: EventStore, bus: CommandBus, runner: CommandRunner, s: PlatformSecrets, c: ServiceConfig) =>
            new ProjectsService(db, store, bus, runner, s, c.publicUrl),
          inject: [PG_POOL, EventStore, CommandBus, CommandRunner, PlatformSecrets, CONFIG],
        },
        { provide: TenantConnections, useFactory: (c: ServiceConfig) => new TenantConnections(c.tenantDatabaseUrl, c.platformSecret, deps.reportHeal), inject: [CONFIG] },
        sqlConsoleProvider(process.env, deps.log),
        ExecuteProjectCommandHandler,
        ExecuteSchemaCommandHandler,
        ExecuteBucketCommandHandler,
      ],
    };
  }
}
