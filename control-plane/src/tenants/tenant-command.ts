/**
 * The decider loop of a command decided against live facts of the tenant
 * (its catalog, its buckets) as well as the project's stream: read the facts,
 * then the one loop of every aggregate with them passed to `decide`.
 */
import { projectStreamId, type ProjectEvent } from '@baseplane/contracts';
import type { PoolClient } from 'pg';
import { handleCommand, type CommandContext, type HandledCommand } from '../domain/handle-command';
import * as project from '../domain/project';
import type { EventStore } from '../event-store/event-store';
import type { TenantConnections } from './tenant-connections';

export async function handleTenantCommand<C extends { data: { projectId: string } }, F>(
  store: EventStore,
  tenants: TenantConnections,
  command: C,
  context: CommandContext,
  readFacts: (client: PoolClient) => Promise<F>,
  decide: (command: C, state: project.ProjectState, facts: F) => ProjectEvent[],
): Promise<HandledCommand<project.ProjectState>> {
  const facts = await tenants.transaction(command.data.projectId, (client) => readFacts(client));
  return handleCommand<C, ProjectEvent, project.ProjectState>(
    store,
    { initialState: project.initialState, evolve: project.evolve, decide: (c, state) => decide(c, state, facts) },
    projectStreamId(command.data.projectId),
    command,
    context,
  );
}
