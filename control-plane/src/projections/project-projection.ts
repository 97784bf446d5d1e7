/**
 * Projects events into the `projects` and `operations` read models, inside the
 * subscription's transaction. An operation is the life of one command: it
 * starts with the command's event and ends with the outcome event that names
 * the same correlation id.
 */
import type { PoolClient } from 'pg';
import { APPLIED_BY_WORKFLOW, projectWorkflowId, type ProjectEvent, type RecordedEvent } from '@baseplane/contracts';

const COMMAND_OF: Partial<Record<ProjectEvent['type'], string>> = {
  ProjectCreated: 'CreateProject',
  ProjectDeletionRequested: 'DeleteProject',
  ApiKeyRotated: 'RotateApiKey',
  ProjectPinged: 'PingProject',
  TableCreated: 'CreateTable',
  TableDropped: 'DropTable',
  ColumnAdded: 'AddColumn',
  ColumnUpdated: 'UpdateColumn',
  ColumnDropped: 'DropColumn',
  ForeignKeyAdded: 'AddForeignKey',
  ForeignKeyDropped: 'DropForeignKey',
  SqlDdlRecorded: 'ExecuteSql',
  BucketCreated: 'CreateBucket',
  BucketUpdated: 'UpdateBucket',
  BucketDeletionRequested: 'DeleteBucket',
  AuthSettingsUpdated: 'UpdateAuthSettings',
  RestSettingsUpdated: 'UpdateRestSettings',
};

export async function projectProjectEvent(event: RecordedEvent<ProjectEvent>, tx: PoolClient): Promise<void> {
  const at = event.metadata.at;
  const projectId = event.data.projectId;
  switch (event.type) {
    case 'ProjectCreated': {
      const d = event.data;
      await tx.query(
        `insert into projects (id, name, team_id, status, database_name, anon_key_hash, anon_key_cipher,
           service_key_hash, service_key_cipher, version, created_at, updated_at)
         values ($1, $2, $3, 'provisioning', $4, $5, $6, $7, $8, $9, $10, $10)
         on conflict (id) do nothing`,
        [d.projectId, d.name, d.teamId, d.databaseName, d.keys.anon.hash, d.keys.anon.cipher, d.keys.service.hash, d.keys.service.cipher, event.version, at],
      );
      break;
    }
    case 'ProjectProvisioned':
      await setStatus(tx, projectId, 'active', null, event, "status = 'provisioning'");
      await finishOperation(tx, event, 'succeeded', null);
      break;
    case 'ProjectProvisioningFailed':
      await setStatus(tx, projectId, 'failed', event.data.reason, event, "status = 'provisioning'");
      await finishOperation(tx, event, 'failed', { message: event.data.reason });
      break;
    case 'ProjectDeletionRequested':
      await setStatus(tx, projectId, 'deleting', null, event);
      break;
    case 'ProjectDeleted':
      await setStatus(tx, projectId, 'deleted', null, event);
      await finishOperation(tx, event, 'succeeded', null);
      break;
    case 'ProjectDeletionFailed':
      await setStatus(tx, projectId, 'failed', event.data.reason, event);
      await finishOperation(tx, event, 'failed', { message: event.data.reason });
      break;
    case 'ApiKeyRotated': {
      const column = event.data.kind === 'anon' ? 'anon_key' : 'service_key';
      await tx.query(
        `update projects set ${column}_hash = $2, ${column}_cipher = $3, version = $4, updated_at = $5 where id = $1`,
        [projectId, event.data.key.hash, event.data.key.cipher, event.version, at],
      );
      break;
    }
    case 'AuthSettingsUpdated':
      await tx.query(
        'update projects set auth_settings = auth_settings || $2::jsonb, version = $3, updated_at = $4 where id = $1',
        [projectId, JSON.stringify(event.data.changes), event.version, at],
      );
      break;
    case 'RestSettingsUpdated':
      await tx.query(
        'update projects set rest_settings = rest_settings || $2::jsonb, version = $3, updated_at = $4 where id = $1',
        [projectId, JSON.stringify(event.data.changes), event.version, at],
      );
      break;
    case 'ProjectPinged':
    case 'SigningKeyIssued':
      break;
    case 'ProjectPingApplied':
      await finishOperation(tx, event, 'succeeded', null);
      break;
    case 'ProjectPingFailed':
      await finishOperation(tx, event, 'failed', { message: event.data.reason });
      break;
    case 'SchemaChangeApplied':
      await finishOperation(tx, event, 'succeeded', null);
      break;
    case 'SchemaChangeFailed':
      await finishOperation(tx, event, 'failed', event.data.error);
      break;
    case 'BucketChangeApplied':
      await finishOperation(tx, event, 'succeeded', null);
      break;
    case 'BucketChangeFailed':
      await finishOperation(tx, event, 'failed', event.data.error);
      break;
    case 'TableCreated':
    case 'TableDropped':
    case 'ColumnAdded':
    case 'ColumnUpdated':
    case 'ColumnDropped':
    case 'ForeignKeyAdded':
    case 'ForeignKeyDropped':
    case 'SqlDdlRecorded':
    case 'BucketCreated':
    case 'BucketUpdated':
    case 'BucketDeletionRequested':
      break;
  }
  const command = COMMAND_OF[event.type];
  if (command) await startOperation(tx, event, command);
}

async function setStatus(
  tx: PoolClient,
  projectId: string,
  status: string,
  detail: string | null,
  event: RecordedEvent<ProjectEvent>,
  guard = 'true',
): Promise<void> {
  await tx.query(
    `update projects set status = $2, status_detail = $3, version = $4, updated_at = $5 where id = $1 and ${guard}`,
    [projectId, status, detail, event.version, event.metadata.at],
  );
}

async function startOperation(tx: PoolClient, event: RecordedEvent<ProjectEvent>, command: string): Promise<void> {
  const viaWorkflow = APPLIED_BY_WORKFLOW.has(event.type);
  await tx.query(
    `insert into operations (id, project_id, command, status, workflow_id, stream_version, started_at, finished_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (id) do nothing`,
    [
      event.metadata.correlationId,
      event.data.projectId,
      command,
      viaWorkflow ? 'running' : 'succeeded',
      viaWorkflow ? projectWorkflowId(event.data.projectId) : null,
      event.version,
      event.metadata.at,
      viaWorkflow ? null : event.metadata.at,
    ],
  );
  await tx.query("select pg_notify('baseplane_operations', $1)", [event.metadata.correlationId]);
}

async function finishOperation(
  tx: PoolClient,
  event: RecordedEvent<ProjectEvent>,
  status: 'succeeded' | 'failed',
  error: unknown,
): Promise<void> {
  await tx.query(
    `update operations set status = $2, finished_at = $3, error = $4 where id = $1 and finished_at is null`,
    [event.metadata.correlationId, status, event.metadata.at, error === null ? null : JSON.stringify(error)],
  );
  await tx.query("select pg_notify('baseplane_operations', $1)", [event.metadata.correlationId]);
}
