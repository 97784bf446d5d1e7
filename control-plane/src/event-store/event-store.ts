/**
 * The event store: one append-only table in the platform database. Appends
 * take an expected version, enforced in SQL by `append_to_stream` (see the
 * migration), so every writer — control plane or worker — gets the same rule.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { ApiError, inTransaction, upcastEvent, type EventMetadata, type RecordedEvent } from '@baseplane/contracts';

/** Expected version meaning "the stream must not exist yet". */
export const NO_STREAM = 0;
/** Expected version meaning "append whatever the stream's version is". */
export const ANY_VERSION = null;

export interface NewEvent<E extends { type: string; data: unknown } = { type: string; data: unknown }> {
  type: E['type'];
  data: E['data'];
  metadata: EventMetadata;
}

export interface AppendResult {
  nextExpectedVersion: number;
  lastGlobalPosition: number;
  versions: number[];
}

export class VersionConflictError extends ApiError {
  constructor(streamId: string, detail: string) {
    super(409, 'version_conflict', `stream ${streamId} changed concurrently`, { detail });
  }
}

type Queryable = Pool | PoolClient;

export interface ReadStreamOptions {
  /** Only events of a version above this one. */
  after?: number;
  /** At most this many events. */
  limit?: number;
}

interface EventRow {
  event_id: string;
  stream_id: string;
  stream_version: number;
  global_position: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
}

const EVENT_COLUMNS = 'event_id, stream_id, stream_version, global_position, type, data, metadata';
/** The largest stream version: `events.stream_version` is an int4. */
const MAX_STREAM_VERSION = 2_147_483_647;

function toRecorded<E extends { type: string; data: unknown }>(row: EventRow): RecordedEvent<E> {
  return {
    eventId: row.event_id,
    streamId: row.stream_id,
    version: row.stream_version,
    globalPosition: Number(row.global_position),
    type: row.type,
    data: upcastEvent(row.type, row.metadata.schemaVersion ?? 1, row.data),
    metadata: row.metadata,
  } as RecordedEvent<E>;
}

export class EventStore {
  constructor(private readonly db: Pool) {}

  /** Appends `events` if the stream is at `expectedVersion` (null: any; 0: must not exist). */
  async appendToStream(
    streamId: string,
    expectedVersion: number | null,
    events: NewEvent[],
    on: Queryable = this.db,
  ): Promise<AppendResult> {
    const payload = events.map((e) => ({ eventId: randomUUID(), type: e.type, data: e.data, metadata: e.metadata }));
    try {
      const { rows } = await on.query<{ stream_version: number; global_position: string }>(
        'select stream_version, global_position from append_to_stream($1, $2, $3::jsonb)',
        [streamId, expectedVersion, JSON.stringify(payload)],
      );
      const last = rows[rows.length - 1]!;
      return {
        nextExpectedVersion: last.stream_version,
        lastGlobalPosition: Number(last.global_position),
        versions: rows.map((r) => r.stream_version),
      };
    } catch (error) {
      if ((error as { code?: string }).code === 'BPV01') throw new VersionConflictError(streamId, (error as Error).message);
      throw error;
    }
  }

  /**
   * Appends `event` at any version unless the stream holds an event of its
   * type with its correlation id already; true when it appended. The check
   * and the append hold the store's append lock (append_to_stream's, taken
   * first), so writers recording one thing at once record it once: the SQL
   * console's DDL batches, which its own call and a later relay may both try.
   */
  async appendOnce(streamId: string, event: NewEvent): Promise<boolean> {
    return inTransaction(this.db, async (client: PoolClient) => {
      await client.query('select pg_advisory_xact_lock(7011001)');
      const { rowCount } = await client.query(
        "select 1 from events where stream_id = $1 and type = $2 and metadata->>'correlationId' = $3",
        [streamId, event.type, event.metadata.correlationId],
      );
      if (rowCount) return false;
      await this.appendToStream(streamId, ANY_VERSION, [event], client);
      return true;
    });
  }

  /**
   * The stream's events after version `after` (default 0: from the start), in
   * version order, at most `limit` of them (default: all). The page is taken
   * in SQL, so a page of a long history reads only that page.
   */
  async readStream<E extends { type: string; data: unknown }>(streamId: string, { after = 0, limit }: ReadStreamOptions = {}): Promise<RecordedEvent<E>[]> {
    const { rows } = await this.db.query<EventRow>(
      // `limit null` is PostgreSQL's `limit all`.
      `select ${EVENT_COLUMNS} from events where stream_id = $1 and stream_version > $2 order by stream_version limit $3`,
      // Versions are int4: an `after` past the largest one (a caller's cursor may be) reads nothing, not 22003.
      [streamId, Math.min(after, MAX_STREAM_VERSION), limit ?? null],
    );
    return rows.map((r) => toRecorded<E>(r));
  }

  /** The stream's last event of `type`, and with `data`, the last whose data holds those fields (jsonb containment). */
  async lastOfType<E extends { type: string; data: unknown }>(streamId: string, type: string, data?: Record<string, unknown>): Promise<RecordedEvent<E> | undefined> {
    const { rows } = await this.db.query<EventRow>(
      `select ${EVENT_COLUMNS} from events where stream_id = $1 and type = $2${data ? ' and data @> $3::jsonb' : ''} order by stream_version desc limit 1`,
      data ? [streamId, type, JSON.stringify(data)] : [streamId, type],
    );
    return rows[0] && toRecorded<E>(rows[0]);
  }

  async readAll<E extends { type: string; data: unknown }>(afterPosition: number, limit: number, on: Queryable = this.db): Promise<RecordedEvent<E>[]> {
    const { rows } = await on.query<EventRow>(
      `select ${EVENT_COLUMNS} from events where global_position > $1 order by global_position limit $2`,
      [afterPosition, limit],
    );
    return rows.map((r) => toRecorded<E>(r));
  }
}
