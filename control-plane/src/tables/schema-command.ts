/**
 * The command-bus side of schema changes: the same decider loop as every
 * aggregate, on the project's stream, against the tenant's live catalog
 * (tables and the other names taken) with the changes recorded but not yet
 * applied laid over them.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { SchemaCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import type { CommandContext } from '../domain/handle-command';
import { handleCommandWithFacts } from '../domain/decide-with-facts';
import { withPendingSchema } from '../domain/pending-changes';
import { decideSchema } from '../domain/schema';
import { readSchemaFacts } from '../tenants/catalog';
import { SqlConsole } from '../sql/sql-console';
import { TenantConnections } from '../tenants/tenant-connections';

export class ExecuteSchemaCommand {
  constructor(readonly command: SchemaCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteSchemaCommand)
export class ExecuteSchemaCommandHandler implements ICommandHandler<ExecuteSchemaCommand> {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
    @Inject(SqlConsole) private readonly sqlConsole: SqlConsole,
  ) {}

  async execute({ command, context }: ExecuteSchemaCommand) {
    // The console's DDL that is not in the history yet goes first: this command may build on it.
    await this.sqlConsole.recordEarlierDdl(command.data.projectId);
    return handleCommandWithFacts(this.store, this.tenants, command, context, readSchemaFacts, withPendingSchema, decideSchema);
  }
}
