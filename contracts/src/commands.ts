/**
 * Project commands: what an operator asks for. Decided against the project's
 * state by the control plane's pure decider into events.
 */
import type { StoredAuthSettings } from './auth';
import type { RestSettings } from './rest-settings';
import type { BucketSpec, ColumnChange, ColumnSpec, ForeignKeySpec, KeyKind, SigningKey, StoredKey, TableAccess } from './events';

interface Command<T extends string, D> {
  type: T;
  data: D;
}

export type CreateProject = Command<'CreateProject', {
  projectId: string;
  name: string;
  teamId: string;
  keys: Record<KeyKind, StoredKey>;
  signingKey: SigningKey;
}>;
export type DeleteProject = Command<'DeleteProject', { projectId: string }>;
export type RotateApiKey = Command<'RotateApiKey', { projectId: string; kind: KeyKind; key: StoredKey }>;
export type PingProject = Command<'PingProject', { projectId: string }>;

/** Auth settings: only what the operator sent, already validated (the SMTP URL sealed). */
export type UpdateAuthSettings = Command<'UpdateAuthSettings', { projectId: string; changes: Partial<StoredAuthSettings> }>;

/** Data API settings: only what the operator sent, already validated. */
export type UpdateRestSettings = Command<'UpdateRestSettings', { projectId: string; changes: Partial<RestSettings> }>;

export type ProjectCommand = CreateProject | DeleteProject | RotateApiKey | PingProject | UpdateAuthSettings | UpdateRestSettings;

/** Schema commands: decided against the tenant's live catalog, applied by the project's workflow. */
export type CreateTable = Command<'CreateTable', { projectId: string; name: string; columns: ColumnSpec[]; access: TableAccess }>;
export type DropTable = Command<'DropTable', { projectId: string; name: string }>;
export type AddColumn = Command<'AddColumn', { projectId: string; table: string; column: ColumnSpec }>;
export type UpdateColumn = Command<'UpdateColumn', { projectId: string; table: string; column: string; change: ColumnChange }>;
export type DropColumn = Command<'DropColumn', { projectId: string; table: string; column: string }>;
export type AddForeignKey = Command<'AddForeignKey', { projectId: string; table: string; foreignKey: Pick<ForeignKeySpec, 'columns' | 'references'> & Partial<Pick<ForeignKeySpec, 'name' | 'onDelete' | 'onUpdate'>> }>;
export type DropForeignKey = Command<'DropForeignKey', { projectId: string; table: string; name: string }>;

export type SchemaCommand = CreateTable | DropTable | AddColumn | UpdateColumn | DropColumn | AddForeignKey | DropForeignKey;

/** Bucket commands: decided against the tenant's live `storage.buckets`, applied by the project's workflow. */
export type CreateBucket = Command<'CreateBucket', { projectId: string; bucket: BucketSpec }>;
export type UpdateBucket = Command<'UpdateBucket', { projectId: string; name: string; public: boolean }>;
export type DeleteBucket = Command<'DeleteBucket', { projectId: string; name: string; force: boolean }>;

export type BucketCommand = CreateBucket | UpdateBucket | DeleteBucket;
