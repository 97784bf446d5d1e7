/**
 * The decider loop of a command decided against live facts of the tenant
 * (its catalog, its buckets) as well as the project's stream. Each attempt
 * reads the stream, then the facts, and decides against the facts with the
 * changes the stream holds but the tenant has not applied yet laid over them
 * (`pending-changes.ts`): two commands taking one name at once get one 201
 * and one 409, not a recorded change that fails when applied.
 */
import { projectStreamId, type ProjectEvent } from '@baseplane/contracts';
import type { PoolClient } from 'pg';
import type { EventStore } from '../event-store/event-store';
import type { TenantConnections } from '../tenants/tenant-connections';
import { handleCommand, type CommandContext, type HandledCommand } from './handle-command';
import { trackPending, type PendingChange } from './pending-changes';
import * as project from './project';

interface FactsState {
  project: project.ProjectState;
  pending: PendingChange[];
}

export async function handleCommandWithFacts<C extends { data: { projectId: string } }, F>(
  store: EventStore,
  tenants: TenantConnections,
  command: C,
  context: CommandContext,
  readFacts: (client: PoolClient) => Promise<F>,
  withPending: (facts: F, pending: PendingChange[]) => F,
  decide: (command: C, state: project.ProjectState, facts: F) => ProjectEvent[],
): Promise<HandledCommand<project.ProjectState, ProjectEvent>> {
  const handled = await handleCommand<C, ProjectEvent, FactsState>(
    store,
    {
      initialState: () => ({ project: project.initialState(), pending: [] }),
      evolve: (state, event) => ({ project: project.evolve(state.project, event), pending: trackPending(state.pending, event) }),
      // The facts are read after the stream, so the tenant holds at least what the stream says was applied.
      decide: async (c, state) => {
        const facts = await tenants.transaction(command.data.projectId, (client) => readFacts(client));
        return decide(c, state.project, withPending(facts, state.pending));
      },
    },
    projectStreamId(command.data.projectId),
    command,
    context,
  );
  return { ...handled, state: handled.state.project };
}
