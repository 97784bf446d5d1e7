/**
 * The project workflow: one long-lived workflow per project (an entity
 * workflow). Signals say how far the project's stream has grown; it applies
 * the pending events in stream order, one outcome event each (the applying
 * activity records a success; the workflow records a failure), and ends when
 * the project is deleted. Deterministic: activity types only, no I/O.
 */
import { ActivityFailure, ApplicationFailure, condition, continueAsNew, defineSignal, proxyActivities, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ApplySignal, ProjectWorkflowInput, StorageSweepInput, StorageSweepResult } from '@baseplane/contracts';
import type { Activities, DatabaseErrorInfo, EventRef, PendingEvent } from './activities';
import type { StorageSweepActivities } from './storage-sweep';

const applySignal = defineSignal<[ApplySignal]>('apply');

/** Reading the stream: local, fast, retried until the platform database answers. */
const reader = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '100ms', maximumInterval: '5s' },
});

/**
 * Changes to the tenant cluster: heartbeats notice a dead worker in seconds, so an attempt that heartbeats may take
 * long (waiting for an app's lock, rewriting a big table); one given up past its start-to-close cancels its
 * statement (activities.ts: asApplier).
 */
const tenant = proxyActivities<Activities>({
  startToCloseTimeout: '2h',
  heartbeatTimeout: '3s',
  // What PostgreSQL refuses fails at once (classifyError); anything else, a database away for a failover or a
  // restart, is tried again for about six minutes.
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 40 },
});

/** Emptying a deleted bucket's or project's objects must eventually happen (their rows are gone): retried without limit while the store is away. */
const store = proxyActivities<Activities>({
  startToCloseTimeout: '10m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** Recording an outcome must eventually succeed: retried without limit. */
const recorder = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '10s' },
});

function reasonOf(error: unknown): string {
  let cause: unknown = error;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  return cause instanceof Error ? cause.message : String(cause);
}

/** PostgreSQL's error behind a failed activity, when that is what failed. */
function databaseErrorOf(error: unknown): DatabaseErrorInfo | undefined {
  let cause: unknown = error;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'DatabaseError') return cause.details?.[0] as DatabaseErrorInfo;
  return undefined;
}

/** Schema events (contracts' SCHEMA_CHANGE_EVENTS), listed here because workflow code imports no runtime values. */
const SCHEMA_CHANGES = new Set(['TableCreated', 'TableDropped', 'ColumnAdded', 'ColumnUpdated', 'ColumnDropped', 'ForeignKeyAdded', 'ForeignKeyDropped']);

/** Bucket events (contracts' BUCKET_CHANGE_EVENTS), listed here for the same reason. */
const BUCKET_CHANGES = new Set(['BucketCreated', 'BucketUpdated', 'BucketDeletionRequested']);

type Applied = 'continue' | 'deleted';

async function applyEvent(projectId: string, event: PendingEvent): Promise<Applied> {
  const ref: EventRef & { correlationId: string } = { projectId, version: event.version, correlationId: event.correlationId };
  const record = (type: Parameters<Activities['recordOutcome']>[0]['type'], reason?: string) =>
    recorder.recordOutcome({ ...ref, type, correlationId: event.correlationId, ...(reason === undefined ? {} : { reason }) });
  if (SCHEMA_CHANGES.has(event.type)) {
    try {
      await tenant.applySchemaChange(ref);
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      await recorder.recordOutcome({ ...ref, type: 'SchemaChangeFailed', reason: reasonOf(error), ...(databaseErrorOf(error) ? { error: databaseErrorOf(error)! } : {}) });
    }
    return 'continue';
  }
  if (BUCKET_CHANGES.has(event.type)) {
    try {
      const { emptyPrefix } = await tenant.applyBucketChange(ref);
      if (emptyPrefix !== null) await store.emptyBucket({ ...ref, prefix: emptyPrefix });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      await recorder.recordOutcome({ ...ref, type: 'BucketChangeFailed', reason: reasonOf(error), ...(databaseErrorOf(error) ? { error: databaseErrorOf(error)! } : {}) });
    }
    return 'continue';
  }
  switch (event.type) {
    case 'ProjectCreated':
      try {
        await tenant.ensureApiRoles();
        await tenant.createOwnerRole(ref);
        await tenant.createDatabase(ref);
        await tenant.installTenantSchema(ref);
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        await record('ProjectProvisioningFailed', reasonOf(error));
      }
      return 'continue';
    case 'ProjectPinged':
      try {
        await tenant.applyPing(ref);
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        // A ping that cannot reach the tenant fails its operation and leaves the project as it is.
        await record('ProjectPingFailed', reasonOf(error));
      }
      return 'continue';
    case 'ProjectDeletionRequested':
      try {
        await tenant.dropDatabase(ref);
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        await record('ProjectDeletionFailed', reasonOf(error));
        return 'continue';
      }
      // The project's objects follow its database out; the workflow ends once the store has let them go.
      await store.emptyProjectStorage(ref);
      return 'deleted';
    default:
      throw ApplicationFailure.nonRetryable(`no way to apply ${event.type}`);
  }
}

export async function projectWorkflow(input: ProjectWorkflowInput): Promise<void> {
  let target = input.appliedVersion;
  let applied = input.appliedVersion;
  setHandler(applySignal, ({ version }) => {
    if (version > target) target = version;
  });
  for (;;) {
    await condition(() => target > applied);
    const upToVersion = target;
    const pending = await reader.loadPendingEvents({ projectId: input.projectId, afterVersion: applied, upToVersion });
    for (const event of pending) {
      if ((await applyEvent(input.projectId, event)) === 'deleted') return;
    }
    applied = upToVersion;
    if (target === applied && workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof projectWorkflow>({ projectId: input.projectId, appliedVersion: applied });
    }
  }
}

/** Listing the projects to sweep: one quick query. */
const sweepLister = proxyActivities<StorageSweepActivities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});

/** One project's sweep: as long as its buckets take, heartbeating; a project that keeps failing is left to the next sweep. */
const sweeper = proxyActivities<StorageSweepActivities>({
  startToCloseTimeout: '6h',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 3 },
});

const SWEEP_PAGE = 100;
const MAX_FAILED_NAMED = 100;
const DEFAULT_GRACE_SECONDS = 3600;
const DEFAULT_UNFINISHED_SECONDS = 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The storage sweep (`storage-sweep.ts`): every active project, or the ones
 * named, one after the other, a page of projects at a time; sweeping every
 * project, it first removes what unfinished uploads left in the store. A project whose
 * sweep fails its attempts is counted in `failures` (and named in `failed`,
 * the first hundred) and the sweep goes on.
 */
export async function storageSweepWorkflow(input: StorageSweepInput = {}): Promise<StorageSweepResult> {
  const graceSeconds = input.graceSeconds ?? DEFAULT_GRACE_SECONDS;
  const unfinishedSeconds = input.unfinishedSeconds ?? DEFAULT_UNFINISHED_SECONDS;
  for (const [name, value] of [['graceSeconds', graceSeconds], ['unfinishedSeconds', unfinishedSeconds]] as const) {
    if (!Number.isInteger(value) || value < 0) throw ApplicationFailure.nonRetryable(`${name} must be a whole number of seconds, got ${String(value)}`);
  }
  const named = input.projectIds?.find((id) => !UUID.test(id));
  if (named !== undefined) throw ApplicationFailure.nonRetryable(`projectIds must be project ids (lower case), got "${named}"`);
  let totals: StorageSweepResult | undefined = input.totals;
  if (!totals) {
    const unfinished = input.projectIds === undefined ? await sweeper.sweepUnfinishedUploads({ staleSeconds: unfinishedSeconds }) : 0;
    totals = { projects: 0, checked: 0, removed: 0, unfinished, failures: 0, failed: [] };
  }
  let after = input.after;
  for (;;) {
    const projectIds = input.projectIds ?? (await sweepLister.listProjectsToSweep({ ...(after === undefined ? {} : { after }), limit: SWEEP_PAGE }));
    for (const projectId of projectIds) {
      try {
        const swept = await sweeper.sweepProjectStorage({ projectId, graceSeconds });
        totals.projects += 1;
        totals.checked += swept.checked;
        totals.removed += swept.removed;
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        totals.failures += 1;
        if (totals.failed.length < MAX_FAILED_NAMED) totals.failed.push(projectId);
      }
    }
    if (input.projectIds !== undefined || projectIds.length < SWEEP_PAGE) return totals;
    after = projectIds[projectIds.length - 1];
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof storageSweepWorkflow>({ graceSeconds, unfinishedSeconds, after, totals });
    }
  }
}
