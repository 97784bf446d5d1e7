/**
 * The worker's view of the platform database: read a project's stream,
 * append outcome events (through the same SQL function as the control plane,
 * so the expected-version rule is one), and write the side-effect ledger.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { EVENT_SCHEMA_VERSIONS, inTransaction, projectStreamId, type EventMetadata, type ProjectEvent, type ProjectEventType } from '@baseplane/contracts';

export interface StreamEvent {
  version: number;
  type: ProjectEventType;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

export class PlatformStore {
  constructor(private readonly db: Pool) {}

  async readStream(projectId: string, afterVersion: number, upToVersion: number): Promise<StreamEvent[]> {
    const { rows } = await this.db.query<{ stream_version: number; type: ProjectEventType; data: Record<string, unknown>; metadata: EventMetadata }>(
      `select stream_version, type, data, metadata from events
       where stream_id = $1 and stream_version > $2 and stream_version <= $3 order by stream_version`,
      [projectStreamId(projectId), afterVersion, upToVersion],
    );
    return rows.map((r) => ({ version: r.stream_version, type: r.type, data: r.data, metadata: r.metadata }));
  }

  /** Stream versions after `afterVersion` that an outcome event names as its cause. */
  async causesWithOutcome(projectId: string, afterVersion: number): Promise<Set<number>> {
    const { rows } = await this.db.query<{ cause: number }>(
      `select (data->>'causationVersion')::int as cause from events
       where stream_id = $1 and stream_version > $2 and data ? 'causationVersion'`,
      [projectStreamId(projectId), afterVersion],
    );
    return new Set(rows.map((r) => r.cause).filter((cause) => cause > afterVersion));
  }

  /**
   * Appends an outcome event unless one of that type for that cause is already
   * there (a retried activity). The check and the append hold the store's
   * append lock (append_to_stream's, taken first), so attempts recording at
   * once (one Temporal gave up on still runs) record it once.
   */
  async appendOutcome(projectId: string, event: ProjectEvent & { data: { causationVersion: number } }, correlationId: string): Promise<void> {
    const streamId = projectStreamId(projectId);
    const metadata: EventMetadata = {
      actor: 'worker',
      at: new Date().toISOString(),
      correlationId,
      causationId: `${streamId}@${event.data.causationVersion}`,
      schemaVersion: EVENT_SCHEMA_VERSIONS[event.type],
    };
    await inTransaction(this.db, async (client: PoolClient) => {
      await client.query('select pg_advisory_xact_lock(7011001)');
      const existing = await client.query(
        `select 1 from events where stream_id = $1 and type = $2 and (data->>'causationVersion')::int = $3`,
        [streamId, event.type, event.data.causationVersion],
      );
      if (existing.rowCount) return;
      await client.query('select append_to_stream($1, null, $2::jsonb)', [
        streamId,
        JSON.stringify([{ eventId: randomUUID(), type: event.type, data: event.data, metadata }]),
      ]);
    });
  }

  /**
   * Records that a step's effect exists, once: `performed` false means this
   * attempt found it in place without a ledger row (an earlier attempt died
   * between the effect and this line).
   */
  async recordStep(projectId: string, version: number, step: string, performed: boolean, attempt: number): Promise<void> {
    await this.db.query(
      `insert into activity_ledger (project_id, stream_version, step, attempt, adopted) values ($1, $2, $3, $4, $5)
       on conflict (project_id, stream_version, step) do nothing`,
      [projectId, version, step, attempt, !performed],
    );
  }

  /** Notes that a project's tenant database is at `revision` of the tenant schema (tenant-schema.ts); never lowers it. */
  async recordTenantRevision(projectId: string, revision: number): Promise<void> {
    await this.db.query(
      `insert into tenant_schema_revisions (project_id, revision) values ($1, $2)
       on conflict (project_id) do update set revision = greatest(tenant_schema_revisions.revision, excluded.revision), recorded_at = now()`,
      [projectId, revision],
    );
  }

  /** Active projects whose tenant database is not known to be at `revision`, oldest first. */
  async projectsBehind(revision: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      `select p.id from projects p left join tenant_schema_revisions r on r.project_id = p.id
       where p.status = 'active' and coalesce(r.revision, 0) < $1 order by p.created_at`,
      [revision],
    );
    return rows.map((row) => row.id);
  }
}
