/**
 * The command-bus side of buckets: the same decider loop as every aggregate,
 * on the project's stream, against the tenant's live buckets with the
 * changes recorded but not yet applied laid over them.
 */
import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { BucketCommand } from '@baseplane/contracts';
import { EventStore } from '../event-store/event-store';
import type { CommandContext } from '../domain/handle-command';
import { handleCommandWithFacts } from '../domain/decide-with-facts';
import { withPendingBuckets } from '../domain/pending-changes';
import { decideBucket } from '../domain/storage';
import { readBucketFacts } from '../tenants/storage-buckets';
import { SqlConsole } from '../sql/sql-console';
import { TenantConnections } from '../tenants/tenant-connections';

export class ExecuteBucketCommand {
  constructor(readonly command: BucketCommand, readonly context: CommandContext) {}
}

@CommandHandler(ExecuteBucketCommand)
export class ExecuteBucketCommandHandler implements ICommandHandler<ExecuteBucketCommand> {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(TenantConnections) private readonly tenants: TenantConnections,
    @Inject(SqlConsole) private readonly sqlConsole: SqlConsole,
  ) {}

  async execute({ command, context }: ExecuteBucketCommand) {
    // The console's DDL that is not in the history yet goes first: this command may build on it.
    await this.sqlConsole.recordEarlierDdl(command.data.projectId);
    return handleCommandWithFacts(this.store, this.tenants, command, context, readBucketFacts, withPendingBuckets, decideBucket);
  }
}
