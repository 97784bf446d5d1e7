/**
 * Lets a request wait for its operation to finish (the *Waiting* rule of
 * API.md): one LISTEN connection per process on `baseplane_operations`, with
 * a slow poll as a safety net for a lost notification.
 */
import type { Pool, PoolClient } from 'pg';
import type { OperationRecord } from '@baseplane/contracts';

interface OperationRow {
  id: string;
  command: string;
  status: OperationRecord['status'];
  workflow_id: string | null;
  started_at: Date;
  finished_at: Date | null;
  error: unknown;
}

export const toOperation = (row: OperationRow): OperationRecord => ({
  id: row.id,
  command: row.command,
  status: row.status,
  workflowId: row.workflow_id,
  startedAt: row.started_at.toISOString(),
  finishedAt: row.finished_at?.toISOString() ?? null,
  error: row.error ?? null,
});

const isFinished = (op: OperationRecord) => op.status === 'succeeded' || op.status === 'failed';

export const OPERATION_COLUMNS = 'id, command, status, workflow_id, started_at, finished_at, error';

export class OperationWaiter {
  private listener: PoolClient | undefined;
  private stopped = false;
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(private readonly db: Pool) {}

  async start(): Promise<void> {
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.listener?.release(true);
    this.listener = undefined;
  }

  private async listen(): Promise<void> {
    const listener = await this.db.connect();
    listener.on('notification', (message) => {
      for (const wake of this.waiting.get(message.payload ?? '') ?? []) wake();
    });
    // A lost connection (PostgreSQL restarting) must not take the process down with it: it is replaced.
    listener.on('error', () => this.relisten(listener));
    try {
      await listener.query('listen baseplane_operations');
    } catch (error) {
      listener.release(true);
      throw error;
    }
    if (this.stopped) listener.release(true);
    else this.listener = listener;
  }

  /** Listens again on a new connection, retried every second; meanwhile {@link wait}'s poll answers. */
  private relisten(lost: PoolClient): void {
    if (this.listener !== lost) return;
    this.listener = undefined;
    lost.release(true);
    const retry = () => {
      if (!this.stopped) this.listen().catch(() => setTimeout(retry, 1000));
    };
    retry();
  }

  async find(operationId: string): Promise<OperationRecord | undefined> {
    const { rows } = await this.db.query<OperationRow>(`select ${OPERATION_COLUMNS} from operations where id = $1`, [operationId]);
    return rows[0] && toOperation(rows[0]);
  }

  /**
   * Resolves with the operation once `done` says so (by default: finished),
   * or with its current state after `timeoutMs`.
   */
  async wait(operationId: string, timeoutMs: number, done: (op: OperationRecord) => boolean = isFinished): Promise<OperationRecord | undefined> {
    const deadline = Date.now() + timeoutMs;
    let wake: () => void = () => undefined;
    const set = this.waiting.get(operationId) ?? new Set();
    this.waiting.set(operationId, set);
    try {
      for (;;) {
        const signalled = new Promise<void>((resolve) => {
          wake = resolve;
          set.add(resolve);
        });
        // Checked after registering, so a notification between the two is not lost.
        const operation = await this.find(operationId);
        if (operation && done(operation)) return operation;
        const left = deadline - Date.now();
        if (left <= 0) return operation;
        await Promise.race([signalled, new Promise((resolve) => setTimeout(resolve, Math.min(left, 250)))]);
        set.delete(wake);
      }
    } finally {
      set.delete(wake);
      if (set.size === 0) this.waiting.delete(operationId);
    }
  }
}
