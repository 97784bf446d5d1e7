/**
 * The command-bus side of schema changes: read the tenant's live catalog,
 * then the same decider loop as every aggregate, on the project's stream.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { projectStreamId, type ProjectEvent, type SchemaCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import { handleCommand, type CommandContext } from '../domain/handle-command';
import * as project from '../domain/project';
import { decideSchema } from '../domain/schema';
import { readCatalog } from '../tenants/catalog';
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

  async execute({ command, context }: ExecuteSchemaCommand) {
    const catalog = await this.tenants.transaction(command.data.projectId, (client) => readCatalog(client));
    return handleCommand<SchemaCommand, ProjectEvent, project.ProjectState>(
      this.store,
      { initialState: project.initialState, evolve: project.evolve, decide: (c, state) => decideSchema(c, state, catalog) },
      projectStreamId(command.data.projectId),
      command,
      context,
    );
  }
}
