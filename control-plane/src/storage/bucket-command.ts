/**
 * The command-bus side of buckets: read the tenant's live buckets, then the
 * same decider loop as every aggregate, on the project's stream.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { BucketCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import type { CommandContext } from '../domain/handle-command';
import { decideBucket } from '../domain/storage';
import { readBucketFacts } from '../tenants/storage-buckets';
import { handleTenantCommand } from '../tenants/tenant-command';
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

  execute({ command, context }: ExecuteBucketCommand) {
    return handleTenantCommand(this.store, this.tenants, command, context, readBucketFacts, decideBucket);
  }
}
