/**
 * The command-bus side of schema changes: the same decider loop as every
 * aggregate, on the project's stream, against the tenant's live catalog
 * (tables and the other names taken) with the changes recorded but not yet
 * applied laid over them.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { ProjectEvent, SchemaCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import type { CommandContext, HandledCommand } from '../domain/handle-command';
import { handleCommandWithFacts } from '../domain/decide-with-facts';
import { withPendingSchema } from '../domain/pending-changes';
import type { ProjectState } from '../domain/project';
import { decideSchema } from '../domain/schema';
import { readSchemaFacts } from '../tenants/catalog';
import { SqlConsole } from '../sql/sql-console';
import { TenantConnections } from '../tenants/tenant-connections';

/** A schema command's outcome: the events it recorded (none when refused: that throws). */
export type HandledSchemaCommand = HandledCommand<ProjectState, ProjectEvent>;

export class ExecuteSchemaCommand {
  constructor(readonly command: SchemaCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteSchemaCommand)
export class ExecuteSchemaCommandHandler implements ICommandHandler<ExecuteSchemaCommand, HandledSchemaCommand> {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
    @Inject(SqlConsole) private readonly sqlConsole: SqlConsole,
  ) {}

  async execute({ command, context }: ExecuteSchemaCommand): Promise<HandledSchemaCommand> {
    // The console's DDL that is not in the history yet goes first: this command may build on it.
    await this.sqlConsole.recordEarlierDdl(command.data.projectId);
    return handleCommandWithFacts(this.store, this.tenants, command, context, readSchemaFacts, withPendingSchema, decideSchema);
  }
}
