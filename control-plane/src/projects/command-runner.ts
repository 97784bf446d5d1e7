/**
 * Runs a command the *Waiting* rule's way (API.md): send it, then wait up to
 * 30 s for its operation — answered when done, 422 `apply_failed` when the
 * apply failed, 202 with the operation when still going or asked to be async.
 */
import { randomUUID } from 'node:crypto';
import { ApiError, type OperationRecord } from '@baseplane/contracts';
import type { CommandContext } from '../domain/handle-command';
import type { Caller } from '../http/caller';
import type { OperationWaiter } from './operation-waiter';

export const WAIT_LIMIT_MS = 30_000;
/** A 202 is answered once the operation can be followed (the projector has recorded it). */
const RECORD_WAIT_MS = 5_000;

export type CommandOutcome =
  /** `operation` is null when the command changed nothing: no event, so no operation to follow. */
  | { done: true; operation: OperationRecord | null }
  | { done: false; operation: OperationRecord | undefined; operationId: string; projectId: string };

export const actorOf = (caller: Caller) => (caller.kind === 'operator' ? `operator:${caller.accountId}` : `service-key:${caller.projectId}`);

export class CommandRunner {
  constructor(private readonly waiter: OperationWaiter) {}

  async run(projectId: string, caller: Caller, async: boolean, send: (context: CommandContext) => Promise<{ events: unknown[] }>): Promise<CommandOutcome> {
    const operationId = randomUUID();
    const handled = await send({ actor: actorOf(caller), correlationId: operationId, causationId: null });
    // Nothing was recorded (the command asked for what already holds): done, with nothing to wait for.
    if (handled.events.length === 0) return { done: true, operation: null };
    return this.follow(projectId, operationId, async);
  }

  /** Waits for an operation (one just started, or one under way another request started) as {@link run} does. */
  async follow(projectId: string, operationId: string, async: boolean): Promise<CommandOutcome> {
    let operation = await this.waiter.wait(operationId, async ? 0 : WAIT_LIMIT_MS);
    if (!operation) operation = await this.waiter.wait(operationId, RECORD_WAIT_MS, () => true);
    if (operation?.status === 'failed') {
      throw new ApiError(422, 'apply_failed', `${operation.command} failed when applied`, operation.error, `see GET /api/projects/${projectId}/operations/${operationId}`);
    }
    if (operation?.status === 'succeeded') return { done: true, operation };
    return { done: false, operation, operationId, projectId };
  }
}
