/**
 * Project events: what happened to a project, as recorded in its stream
 * `project-<id>`. Each type carries a schema version; an old version is upcast
 * when read (`upcastEvent`), never rewritten in the store.
 */

import type { StoredAuthSettings } from './auth';
import type { RestSettings } from './rest-settings';

export type KeyKind = 'anon' | 'service';

/** A key as the event store keeps it: looked up by hash, shown to operators after decryption. */
export interface StoredKey {
  hash: string;
  cipher: string;
}

/** A project's token-signing key as events carry it: public JWK in the clear, private JWK sealed. */
export interface SigningKey {
  kid: string;
  publicJwk: Record<string, unknown>;
  privateJwkCipher: string;
}

export interface EventMetadata {
  actor: string;
  at: string;
  /** The operation the event belongs to; commands start one, outcome events carry it on. */
  correlationId: string;
  /** The request or event that caused this one. */
  causationId: string | null;
  schemaVersion: number;
}

interface Event<T extends string, D> {
  type: T;
  data: D;
}

export type ProjectCreated = Event<'ProjectCreated', {
  projectId: string;
  name: string;
  teamId: string;
  databaseName: string;
  ownerRole: string;
  keys: Record<KeyKind, StoredKey>;
}>;
export type ProjectProvisioned = Event<'ProjectProvisioned', { projectId: string; causationVersion: number }>;
export type ProjectProvisioningFailed = Event<'ProjectProvisioningFailed', { projectId: string; causationVersion: number; reason: string }>;
export type ProjectDeletionRequested = Event<'ProjectDeletionRequested', { projectId: string }>;
export type ProjectDeleted = Event<'ProjectDeleted', { projectId: string; causationVersion: number }>;
export type ProjectDeletionFailed = Event<'ProjectDeletionFailed', { projectId: string; causationVersion: number; reason: string }>;
export type ApiKeyRotated = Event<'ApiKeyRotated', { projectId: string; kind: KeyKind; key: StoredKey }>;
/** The key that signs the project's end-user access tokens (issued at creation; rotation is another one). */
export type SigningKeyIssued = Event<'SigningKeyIssued', { projectId: string; key: SigningKey }>;
/** A command that changes nothing; it travels the whole path (store, workflow, tenant) to prove it works. */
export type ProjectPinged = Event<'ProjectPinged', { projectId: string }>;
export type ProjectPingApplied = Event<'ProjectPingApplied', { projectId: string; causationVersion: number }>;
export type ProjectPingFailed = Event<'ProjectPingFailed', { projectId: string; causationVersion: number; reason: string }>;

/**
 * The project's auth settings changed: `changes` holds the new value of each
 * setting that changed (folded over DEFAULT_AUTH_SETTINGS by every reader).
 */
export type AuthSettingsUpdated = Event<'AuthSettingsUpdated', { projectId: string; changes: Partial<StoredAuthSettings> }>;

/**
 * The project's data API settings changed (which schemas `/rest/v1` serves, its row cap):
 * `changes` holds the new value of each setting that changed (folded over
 * DEFAULT_REST_SETTINGS by every reader).
 */
export type RestSettingsUpdated = Event<'RestSettingsUpdated', { projectId: string; changes: Partial<RestSettings> }>;

/** A column as a command declares it (API.md → Tables). */
export interface ColumnSpec {
  name: string;
  type: string;
  nullable?: boolean;
  default?: string | null;
  unique?: boolean;
  primaryKey?: boolean;
}

export type TableAccess = 'public-read' | 'authenticated' | 'owner' | 'private' | 'custom';

export interface ForeignKeySpec {
  name: string;
  columns: string[];
  references: { table: string; columns: string[] };
  onDelete: string;
  onUpdate: string;
}

export interface ColumnChange {
  name?: string;
  type?: string;
  using?: string;
  nullable?: boolean;
  default?: string | null;
}

/** Schema commands' events, applied to the tenant by the project's workflow. */
export type TableCreated = Event<'TableCreated', { projectId: string; name: string; columns: ColumnSpec[]; access: TableAccess }>;
export type TableDropped = Event<'TableDropped', { projectId: string; name: string }>;
export type ColumnAdded = Event<'ColumnAdded', { projectId: string; table: string; column: ColumnSpec }>;
export type ColumnUpdated = Event<'ColumnUpdated', { projectId: string; table: string; column: string; change: ColumnChange }>;
export type ColumnDropped = Event<'ColumnDropped', { projectId: string; table: string; column: string }>;
export type ForeignKeyAdded = Event<'ForeignKeyAdded', { projectId: string; table: string; foreignKey: ForeignKeySpec }>;
export type ForeignKeyDropped = Event<'ForeignKeyDropped', { projectId: string; table: string; name: string }>;
/** Outcome of a schema event: applied, or refused by PostgreSQL with its error. */
export type SchemaChangeApplied = Event<'SchemaChangeApplied', { projectId: string; causationVersion: number }>;
export type SchemaChangeFailed = Event<'SchemaChangeFailed', {
  projectId: string;
  causationVersion: number;
  reason: string;
  error: { code: string | null; message: string; detail: string | null; hint: string | null };
}>;
/** DDL an operator ran through the SQL console, captured by the tenant's event trigger. */
export type SqlDdlRecorded = Event<'SqlDdlRecorded', {
  projectId: string;
  statement: string;
  commands: { commandTag: string; objectType: string | null; objectIdentity: string | null }[];
}>;

/** A bucket as a command declares it (API.md → Storage), checked and normalised. */
export interface BucketSpec {
  name: string;
  public: boolean;
  fileSizeLimit: number | null;
  allowedMimeTypes: string[] | null;
}

/** Bucket commands' events, applied to the tenant's `storage.buckets` and the object store by the project's workflow. */
export type BucketCreated = Event<'BucketCreated', { projectId: string; bucket: BucketSpec }>;
export type BucketUpdated = Event<'BucketUpdated', { projectId: string; name: string; public: boolean }>;
/** Deletion decided; `force` empties the bucket first. Requested, since applying it can still fail. */
export type BucketDeletionRequested = Event<'BucketDeletionRequested', { projectId: string; name: string; force: boolean }>;
/** Outcome of a bucket event: applied, or refused at apply time with the reason. */
export type BucketChangeApplied = Event<'BucketChangeApplied', { projectId: string; causationVersion: number }>;
export type BucketChangeFailed = Event<'BucketChangeFailed', {
  projectId: string;
  causationVersion: number;
  reason: string;
  error: { code: string | null; message: string; detail: string | null; hint: string | null };
}>;

export type BucketEvent = BucketCreated | BucketUpdated | BucketDeletionRequested | BucketChangeApplied | BucketChangeFailed;

export type SchemaEvent =
  | TableCreated
  | TableDropped
  | ColumnAdded
  | ColumnUpdated
  | ColumnDropped
  | ForeignKeyAdded
  | ForeignKeyDropped
  | SchemaChangeApplied
  | SchemaChangeFailed
  | SqlDdlRecorded;

export type ProjectEvent =
  | ProjectCreated
  | ProjectProvisioned
  | ProjectProvisioningFailed
  | ProjectDeletionRequested
  | ProjectDeleted
  | ProjectDeletionFailed
  | ApiKeyRotated
  | SigningKeyIssued
  | ProjectPinged
  | ProjectPingApplied
  | ProjectPingFailed
  | AuthSettingsUpdated
  | RestSettingsUpdated
  | SchemaEvent
  | BucketEvent;

export type ProjectEventType = ProjectEvent['type'];

/** Current schema version of each event type. */
export const EVENT_SCHEMA_VERSIONS: Record<ProjectEventType, number> = {
  ProjectCreated: 1,
  ProjectProvisioned: 1,
  ProjectProvisioningFailed: 1,
  ProjectDeletionRequested: 1,
  ProjectDeleted: 1,
  ProjectDeletionFailed: 1,
  ApiKeyRotated: 1,
  SigningKeyIssued: 1,
  ProjectPinged: 1,
  ProjectPingApplied: 1,
  ProjectPingFailed: 1,
  AuthSettingsUpdated: 1,
  RestSettingsUpdated: 1,
  TableCreated: 1,
  TableDropped: 1,
  ColumnAdded: 1,
  ColumnUpdated: 1,
  ColumnDropped: 1,
  ForeignKeyAdded: 1,
  ForeignKeyDropped: 1,
  SchemaChangeApplied: 1,
  SchemaChangeFailed: 1,
  SqlDdlRecorded: 1,
  BucketCreated: 1,
  BucketUpdated: 1,
  BucketDeletionRequested: 1,
  BucketChangeApplied: 1,
  BucketChangeFailed: 1,
};

/** Schema events a project's workflow applies (all with a SchemaChangeApplied/Failed outcome). */
export const SCHEMA_CHANGE_EVENTS: ReadonlySet<ProjectEventType> = new Set<ProjectEventType>([
  'TableCreated',
  'TableDropped',
  'ColumnAdded',
  'ColumnUpdated',
  'ColumnDropped',
  'ForeignKeyAdded',
  'ForeignKeyDropped',
]);

/** Bucket events a project's workflow applies (all with a BucketChangeApplied/Failed outcome). */
export const BUCKET_CHANGE_EVENTS: ReadonlySet<ProjectEventType> = new Set<ProjectEventType>(['BucketCreated', 'BucketUpdated', 'BucketDeletionRequested']);

/**
 * Events that a project's workflow must apply to the tenant side; the others
 * are outcomes or only change read models and caches.
 */
export const APPLIED_BY_WORKFLOW: ReadonlySet<ProjectEventType> = new Set<ProjectEventType>([
  'ProjectCreated',
  'ProjectDeletionRequested',
  'ProjectPinged',
  ...SCHEMA_CHANGE_EVENTS,
  ...BUCKET_CHANGE_EVENTS,
]);

/** Where and when an event was recorded. */
export interface EventEnvelope {
  eventId: string;
  streamId: string;
  version: number;
  globalPosition: number;
  metadata: EventMetadata;
}

/** An event as read back from the store; distributes over the union so `type` narrows `data`. */
export type RecordedEvent<E extends { type: string; data: unknown } = ProjectEvent> = E extends unknown ? E & EventEnvelope : never;

type Upcaster = (data: unknown) => unknown;
/** `UPCASTERS[type][fromVersion]` turns data of that version into the next one. None exist yet. */
const UPCASTERS: Partial<Record<ProjectEventType, Record<number, Upcaster>>> = {};

/** Brings an event read from the store to the current schema of its type. */
export function upcastEvent(type: string, schemaVersion: number, data: unknown): unknown {
  const steps = UPCASTERS[type as ProjectEventType];
  const target = EVENT_SCHEMA_VERSIONS[type as ProjectEventType] ?? schemaVersion;
  let current = data;
  for (let v = schemaVersion; v < target; v++) {
    const step = steps?.[v];
    if (!step) throw new Error(`no upcaster for ${type} v${v}`);
    current = step(current);
  }
  return current;
}
