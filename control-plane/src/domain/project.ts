/**
 * The project aggregate as three pure functions: `initialState`, `decide`
 * (command + state → events, or an ApiError) and `evolve` (state + event →
 * state). No I/O: keys and ids arrive inside the command.
 */
import {
  ApiError,
  DEFAULT_AUTH_SETTINGS,
  DEFAULT_REST_SETTINGS,
  notFound,
  projectUnavailable,
  tenantDatabaseName,
  tenantOwnerRole,
  type ProjectCommand,
  type ProjectEvent,
  type ProjectStatus,
  type RestSettings,
  type StoredAuthSettings,
} from '@baseplane/contracts';

export interface ProjectState {
  status: ProjectStatus | 'none';
  name: string | null;
  teamId: string | null;
  authSettings: StoredAuthSettings;
  restSettings: RestSettings;
}

export const initialState = (): ProjectState => ({ status: 'none', name: null, teamId: null, authSettings: DEFAULT_AUTH_SETTINGS, restSettings: DEFAULT_REST_SETTINGS });

/** The settings of `changes` whose value differs from what `current` holds: sending the current values again records nothing. */
function changed<S extends object>(current: S, changes: Partial<S>): Partial<S> {
  return Object.fromEntries(Object.entries(changes).filter(([name, value]) => JSON.stringify(current[name as keyof S]) !== JSON.stringify(value))) as Partial<S>;
}

/** Events a command produces (type and data; the handler adds metadata). */
export type Decision = ProjectEvent[];

/**
 * A project being deleted takes no more commands: 503 `project_unavailable`
 * (as schema and bucket commands answer, and as API.md lists it for a project
 * that is not serving), not a conflict the caller could resolve.
 */
function requireLive(state: ProjectState): void {
  if (state.status === 'none' || state.status === 'deleted') throw notFound('project');
  if (state.status === 'deleting') throw projectUnavailable(state.status);
}

export function decide(command: ProjectCommand, state: ProjectState): Decision {
  switch (command.type) {
    case 'CreateProject': {
      if (state.status !== 'none') throw new ApiError(409, 'already_exists', 'project already exists');
      const { projectId, name, teamId, keys, signingKey } = command.data;
      return [
        { type: 'ProjectCreated', data: { projectId, name, teamId, keys, databaseName: tenantDatabaseName(projectId), ownerRole: tenantOwnerRole(projectId) } },
        { type: 'SigningKeyIssued', data: { projectId, key: signingKey } },
      ];
    }
    case 'DeleteProject':
      // Deleting a project already being deleted asks for what already holds: nothing is recorded, and the
      // caller follows the deletion under way (ProjectsService.delete), as a retried DELETE expects.
      if (state.status === 'deleting') return [];
      requireLive(state);
      return [{ type: 'ProjectDeletionRequested', data: { projectId: command.data.projectId } }];
    case 'RotateApiKey':
      requireLive(state);
      return [{ type: 'ApiKeyRotated', data: { ...command.data } }];
    case 'PingProject':
      requireLive(state);
      if (state.status !== 'active') throw projectUnavailable(state.status);
      return [{ type: 'ProjectPinged', data: { projectId: command.data.projectId } }];
    case 'UpdateAuthSettings': {
      requireLive(state);
      const changes = changed(state.authSettings, command.data.changes);
      return Object.keys(changes).length === 0 ? [] : [{ type: 'AuthSettingsUpdated', data: { projectId: command.data.projectId, changes } }];
    }
    case 'UpdateRestSettings': {
      requireLive(state);
      const changes = changed(state.restSettings, command.data.changes);
      return Object.keys(changes).length === 0 ? [] : [{ type: 'RestSettingsUpdated', data: { projectId: command.data.projectId, changes } }];
    }
  }
}

export function evolve(state: ProjectState, event: ProjectEvent): ProjectState {
  switch (event.type) {
    case 'ProjectCreated':
      return { ...state, status: 'provisioning', name: event.data.name, teamId: event.data.teamId };
    case 'ProjectProvisioned':
      return state.status === 'provisioning' ? { ...state, status: 'active' } : state;
    case 'ProjectProvisioningFailed':
      return state.status === 'provisioning' ? { ...state, status: 'failed' } : state;
    case 'ProjectDeletionRequested':
      return { ...state, status: 'deleting' };
    case 'ProjectDeleted':
      return { ...state, status: 'deleted' };
    case 'ProjectDeletionFailed':
      return { ...state, status: 'failed' };
    case 'AuthSettingsUpdated':
      return { ...state, authSettings: { ...state.authSettings, ...event.data.changes } };
    case 'RestSettingsUpdated':
      return { ...state, restSettings: { ...state.restSettings, ...event.data.changes } };
    case 'ApiKeyRotated':
    case 'SigningKeyIssued':
    case 'ProjectPinged':
    case 'ProjectPingApplied':
    case 'ProjectPingFailed':
    // Schema events change the tenant's catalog, which is read live; the project's status stays.
    case 'TableCreated':
    case 'TableDropped':
    case 'ColumnAdded':
    case 'ColumnUpdated':
    case 'ColumnDropped':
    case 'ForeignKeyAdded':
    case 'ForeignKeyDropped':
    case 'SchemaChangeApplied':
    case 'SchemaChangeFailed':
    case 'SqlDdlRecorded':
    // Buckets live in the tenant's storage.buckets, which is read live, as the catalog is.
    case 'BucketCreated':
    case 'BucketUpdated':
    case 'BucketDeletionRequested':
    case 'BucketChangeApplied':
    case 'BucketChangeFailed':
      return state;
  }
}
