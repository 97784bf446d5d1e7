/**
 * The command-bus side of schema changes: read the tenant's live catalog
 * (tables and the other names taken), then the same decider loop as every aggregate, on the project's stream.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { SchemaCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import type { CommandContext } from '../domain/handle-command';
import { decideSchema } from '../domain/schema';
import { readSchemaFacts } from '../tenants/catalog';
import { handleTenantCommand } from '../tenants/tenant-command';
import { TenantConnections } from '../tenants/tenant-connections';

export class ExecuteSchemaCommand {
  constructor(readonly command: SchemaCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteSchemaCommand)
export class ExecuteSchemaCommandHandler implements ICommandHandler<ExecuteSchemaCommand> {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
  ) {}

  execute({ command, context }: ExecuteSchemaCommand) {
    return handleTenantCommand(this.store, this.tenants, command, context, readSchemaFacts, decideSchema);
  }
}
