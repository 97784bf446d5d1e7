/**
 * The command-bus side of buckets: read the tenant's live buckets, then the
 * same decider loop as every aggregate, on the project's stream.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { projectStreamId, type BucketCommand, type ProjectEvent } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import { handleCommand, type CommandContext } from '../domain/handle-command';
import * as project from '../domain/project';
import { decideBucket } from '../domain/storage';
import { readBucketFacts } from '../tenants/storage-buckets';
import { TenantConnections } from '../tenants/tenant-connections';

export class ExecuteBucketCommand {
  constructor(readonly command: BucketCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteBucketCommand)
export class ExecuteBucketCommandHandler implements ICommandHandler<ExecuteBucketCommand> {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
  ) {}

  async execute({ command, context }: ExecuteBucketCommand) {
    const buckets = await this.tenants.transaction(command.data.projectId, (client) => readBucketFacts(client));
    return handleCommand<BucketCommand, ProjectEvent, project.ProjectState>(
      this.store,
      { initialState: project.initialState, evolve: project.evolve, decide: (c, state) => decideBucket(c, state, buckets) },
      projectStreamId(command.data.projectId),
      command,
      context,
    );
  }
}
