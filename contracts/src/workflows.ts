/**
 * Names shared by the control plane (which starts and signals workflows) and
 * the workers (which run them). Changing one is a protocol change.
 */

export const PROJECT_TASK_QUEUE = 'baseplane-projects';
export const PROJECT_WORKFLOW_TYPE = 'projectWorkflow';
/** Signal telling a project's workflow that its stream has grown up to `version`. */
export const APPLY_SIGNAL = 'apply';

export interface ApplySignal {
  version: number;
}

export interface ProjectWorkflowInput {
  projectId: string;
  /** Highest stream version already taken care of (carried across continue-as-new). */
  appliedVersion: number;
}

/** One workflow per project: its id is derived from the project, so starting it twice is a no-op. */
export const projectWorkflowId = (projectId: string) => `project-${projectId}`;
export const projectStreamId = (projectId: string) => `project-${projectId}`;
/** Tenant database and role names derive from the project id (a UUID without dashes). */
export const tenantDatabaseName = (projectId: string) => `p_${projectId.replace(/-/g, '')}`;
export const tenantOwnerRole = (projectId: string) => `${tenantDatabaseName(projectId)}_owner`;
/**
 * The role the project's workflow logs in as to apply changes: it may only
 * take the owner's role (SET, not INHERIT) and move the applied-version
 * marker, so owner code that runs during a change (a trigger, a function in a
 * column's `using`) and resets the role lands here, not on a superuser.
 */
export const tenantApplyRole = (projectId: string) => `${tenantDatabaseName(projectId)}_apply`;
/**
 * The data plane's login to the project's database (PostgREST's
 * `authenticator`), which takes `anon`, `authenticated` or `service_role` per
 * request. One per project, never shared: owner code that runs in a request
 * and resets its role lands on this login, so it must have no right on any
 * other project's database, connections or settings.
 */
export const tenantAuthenticatorRole = (projectId: string) => `${tenantDatabaseName(projectId)}_authenticator`;

/**
 * The storage sweep: removes bytes the object store holds without a row in
 * their project's `storage.objects` (what a crash between an upload's rename
 * and its COMMIT leaves, say). A Temporal schedule of this id starts it every
 * STORAGE_SWEEP_INTERVAL_MINUTES on the project task queue.
 */
export const STORAGE_SWEEP_WORKFLOW_TYPE = 'storageSweepWorkflow';
export const STORAGE_SWEEP_SCHEDULE_ID = 'storage-sweep';

export interface StorageSweepInput {
  /** Only these projects (any state; one not active is skipped); every active project when absent. */
  projectIds?: string[];
  /** Bytes stored less than this long ago are left alone, row or not. Default: STORAGE_SWEEP_GRACE_MINUTES as the schedule passes it, else 60 minutes. */
  graceSeconds?: number;
  /**
   * A sweep of every project (no `projectIds`) first removes what uploads
   * that never finished left in the store (temp files on fs, incomplete
   * multipart uploads on S3) untouched this long. Default 3600: a live
   * upload moves far more often (S3_UPLOAD_STALL_TIMEOUT_SECONDS).
   */
  unfinishedSeconds?: number;
  /** Carried across continue-as-new: the last project swept and the counts so far. */
  after?: string;
  totals?: StorageSweepResult;
}

/** What a sweep did. */
export interface StorageSweepResult {
  /** Projects swept. */
  projects: number;
  /** Objects looked up (those past the grace period). */
  checked: number;
  /** Objects removed for having no row. */
  removed: number;
  /** What unfinished uploads left that was removed (temp files, multipart uploads); 0 when projects were named. */
  unfinished: number;
  /** Projects whose sweep failed (left to the next sweep), and the first hundred of them. */
  failures: number;
  failed: string[];
}
