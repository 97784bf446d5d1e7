/**
 * Project use cases: each resolves the caller, authorises, sends a command
 * through the bus, and waits for its operation as API.md's *Waiting* rule says.
 */
import { randomUUID } from 'node:crypto';
import type { CommandBus } from '@nestjs/cqrs';
import type { Pool } from 'pg';
import {
  notFound,
  projectStreamId,
  type KeyKind,
  type OperationRecord,
  type ProjectCommand,
  type ProjectRecord,
  type ProjectStatus,
} from '@baseplane/contracts';
import type { EventStore } from '../event-store/event-store';
import type { PlatformSecrets } from '../accounts/secrets';
import type { Caller } from '../http/caller';
import { ExecuteProjectCommand } from './project-command';
import { OPERATION_COLUMNS, toOperation } from './operation-waiter';
import type { CommandOutcome, CommandRunner } from './command-runner';

interface ProjectRow {
  id: string;
  name: string;
  team_id: string;
  status: ProjectStatus;
  status_detail: string | null;
  anon_key_cipher: string;
  service_key_cipher: string;
  created_at: Date;
}

export class ProjectsService {
  constructor(
    private readonly db: Pool,
    private readonly store: EventStore,
    private readonly commands: CommandBus,
    private readonly runner: CommandRunner,
    private readonly secrets: PlatformSecrets,
    private readonly publicUrl: string,
  ) {}

  /** Sends a project command and waits (unless `async`) for the operation it starts. */
  run(command: ProjectCommand, caller: Caller, async: boolean): Promise<CommandOutcome> {
    return this.runner.run(command.data.projectId, caller, async, (context) => this.commands.execute(new ExecuteProjectCommand(command, context)));
  }

  /**
   * Deletes a project. Deleting one already being deleted records nothing
   * again: the caller follows the deletion under way (its operation is named
   * by the request's correlation id) and is answered as its first DELETE was,
   * 200 once deleted or 202 with the operation, so a retried DELETE is safe.
   */
  async delete(caller: Caller, projectId: string, async: boolean): Promise<CommandOutcome> {
    const outcome = await this.run({ type: 'DeleteProject', data: { projectId } }, caller, async);
    if (!outcome.done || outcome.operation) return outcome;
    const underWay = await this.store.lastOfType(projectStreamId(projectId), 'ProjectDeletionRequested');
    return underWay ? this.runner.follow(projectId, underWay.metadata.correlationId, async) : outcome;
  }

  async create(caller: Extract<Caller, { kind: 'operator' }>, name: string, teamId: string, async: boolean) {
    const projectId = randomUUID();
    const anon = this.secrets.mintApiKey('anon');
    const service = this.secrets.mintApiKey('service');
    const signingKey = await this.secrets.mintSigningKey();
    const outcome = await this.run(
      { type: 'CreateProject', data: { projectId, name: name.trim(), teamId, keys: { anon: anon.stored, service: service.stored }, signingKey } },
      caller,
      async,
    );
    return { outcome, projectId };
  }

  async rotateKey(caller: Caller, projectId: string, kind: KeyKind) {
    const key = this.secrets.mintApiKey(kind);
    await this.run({ type: 'RotateApiKey', data: { projectId, kind, key: key.stored } }, caller, false);
    return this.keys(projectId);
  }

  async get(projectId: string, showKeys: boolean): Promise<ProjectRecord> {
    const { rows } = await this.db.query<ProjectRow>('select * from projects where id = $1', [projectId]);
    if (!rows[0]) throw notFound('project');
    return this.toRecord(rows[0], showKeys);
  }

  async list(accountId: string, teamId: string | undefined): Promise<ProjectRecord[]> {
    const { rows } = await this.db.query<ProjectRow>(
      `select p.* from projects p join team_members m on m.team_id = p.team_id and m.account_id = $1
       where ($2::uuid is null or p.team_id = $2) and p.status <> 'deleted'
       order by p.created_at, p.id`,
      [accountId, teamId ?? null],
    );
    return rows.map((r) => this.toRecord(r, true));
  }

  async keys(projectId: string): Promise<{ anonKey: string; serviceKey: string }> {
    const record = await this.get(projectId, true);
    return { anonKey: record.anonKey!, serviceKey: record.serviceKey! };
  }

  async events(projectId: string, after: number, limit: number) {
    const events = await this.store.readStream(projectStreamId(projectId), { after, limit });
    return {
      events: events.map((e) => ({
        version: e.version,
        globalPosition: e.globalPosition,
        type: e.type,
        data: redactKeys(e.data),
        metadata: { actor: e.metadata.actor, at: e.metadata.at, correlationId: e.metadata.correlationId, causationId: e.metadata.causationId },
      })),
    };
  }

  async operations(projectId: string): Promise<OperationRecord[]> {
    const { rows } = await this.db.query(`select ${OPERATION_COLUMNS} from operations where project_id = $1 order by started_at, stream_version`, [projectId]);
    return rows.map(toOperation);
  }

  async operation(projectId: string, operationId: string): Promise<OperationRecord> {
    const { rows } = await this.db.query(`select ${OPERATION_COLUMNS} from operations where project_id = $1 and id = $2`, [projectId, operationId]);
    if (!rows[0]) throw notFound('operation');
    return toOperation(rows[0]);
  }

  private toRecord(row: ProjectRow, showKeys: boolean): ProjectRecord {
    const live = row.status !== 'deleted';
    return {
      id: row.id,
      name: row.name,
      teamId: row.team_id,
      status: row.status,
      statusDetail: row.status_detail,
      anonKey: showKeys && live ? this.secrets.decrypt(row.anon_key_cipher) : null,
      serviceKey: showKeys && live ? this.secrets.decrypt(row.service_key_cipher) : null,
      restUrl: `${this.publicUrl}/rest/v1`,
      authUrl: `${this.publicUrl}/rest/v1/auth`,
      createdAt: row.created_at.toISOString(),
    };
  }
}

/** Sealed fields, shown in history only as having been there. */
const SEALED_FIELDS = new Set(['cipher', 'privateJwkCipher', 'urlCipher']);

/** History shows that keys were issued, never the (encrypted) keys themselves. */
function redactKeys(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(redactKeys);
  if (!data || typeof data !== 'object') return data;
  return Object.fromEntries(Object.entries(data).map(([field, value]) => [field, SEALED_FIELDS.has(field) ? '[encrypted]' : redactKeys(value)]));
}
