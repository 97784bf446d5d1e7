/**
 * Hands events that change the tenant side to the project's Temporal
 * workflow. The event store is the outbox: the dispatcher runs inside the
 * checkpointed subscription, so a signal that failed (Temporal down) is sent
 * again, and a signal sent twice only repeats a target version.
 */
import { Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import {
  APPLIED_BY_WORKFLOW,
  APPLY_SIGNAL,
  PROJECT_TASK_QUEUE,
  PROJECT_WORKFLOW_TYPE,
  projectWorkflowId,
  type ApplySignal,
  type ProjectEventType,
  type ProjectWorkflowInput,
  type RecordedEvent,
} from '@baseplane/contracts';

export class WorkflowDispatcher {
  constructor(private readonly temporal: Client) {}

  async dispatch(event: RecordedEvent<{ type: string; data: { projectId?: string } }>): Promise<void> {
    if (!APPLIED_BY_WORKFLOW.has(event.type as ProjectEventType) || !event.data.projectId) return;
    const projectId = event.data.projectId;
    const input: ProjectWorkflowInput = { projectId, appliedVersion: 0 };
    const signal: ApplySignal = { version: event.version };
    try {
      await this.temporal.workflow.signalWithStart(PROJECT_WORKFLOW_TYPE, {
        workflowId: projectWorkflowId(projectId),
        taskQueue: PROJECT_TASK_QUEUE,
        args: [input],
        signal: APPLY_SIGNAL,
        signalArgs: [signal],
        // A project's workflow completes only when the project is deleted: never start that one again. A run
        // that ended otherwise (terminated, failed) is started again, and applies what has no outcome yet.
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return;
      throw error;
    }
  }
}
