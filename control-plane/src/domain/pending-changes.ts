/**
 * Changes recorded but not yet applied. Schema and bucket commands are decided
 * against the tenant's live catalog, which lags the stream until the workflow
 * applies each event; a command decided against the catalog alone would take
 * a name another command has already taken (and fail when applied, 422,
 * instead of 409 before anything is recorded). Pure: the stream's events and
 * the live facts come in, the facts as they will be once applied go out.
 */
import { BUCKET_CHANGE_EVENTS, SCHEMA_CHANGE_EVENTS, type ProjectEvent } from '@baseplane/contracts';
import type { SchemaFacts, TableInfo } from '../tenants/catalog';
import type { BucketFacts } from '../tenants/storage-buckets';

/** A change event of the stream and its version. */
export interface PendingChange {
  version: number;
  event: ProjectEvent;
}

const OUTCOMES = new Set(['SchemaChangeApplied', 'SchemaChangeFailed', 'BucketChangeApplied', 'BucketChangeFailed']);
const CHANGES: ReadonlySet<string> = new Set([...SCHEMA_CHANGE_EVENTS, ...BUCKET_CHANGE_EVENTS]);

/** Follows the stream: a change joins the list when recorded and leaves it with its outcome. */
export function trackPending(pending: PendingChange[], event: ProjectEvent & { version?: number }): PendingChange[] {
  if (OUTCOMES.has(event.type)) {
    const cause = (event.data as { causationVersion?: number }).causationVersion;
    return pending.filter((p) => p.version !== cause);
  }
  if (CHANGES.has(event.type) && event.version !== undefined) return [...pending, { version: event.version, event }];
  return pending;
}

const column = (name: string, type: string, extra: Partial<TableInfo['columns'][number]> = {}): TableInfo['columns'][number] => ({
  name, type, nullable: true, default: null, unique: false, isPrimaryKey: false, isIdentity: false, ...extra,
});

/**
 * The tables once `pending` is applied, with the names its drops and renames
 * free still held (`held`) until they are: a pending change can fail. Each
 * step is idempotent (adds what is missing, removes what is there), because
 * the catalog is read after the stream and may already hold some of them.
 */
export function withPendingSchema(facts: SchemaFacts, pending: PendingChange[]): SchemaFacts {
  let tables = facts.tables;
  let otherObjects = facts.otherObjects;
  const held: NonNullable<SchemaFacts['held']> = { tables: [], columns: [] };
  const onTable = (name: string, change: (t: TableInfo) => TableInfo) => {
    tables = tables.map((t) => (t.name === name ? change(t) : t));
  };
  for (const { event } of pending) {
    switch (event.type) {
      case 'TableCreated': {
        const { name, columns, access } = event.data;
        if (tables.some((t) => t.name === name)) break;
        const keyed = columns.filter((c) => c.primaryKey).map((c) => c.name);
        const all = [
          ...(keyed.length === 0 ? [column('id', 'int8', { nullable: false, isPrimaryKey: true, isIdentity: true })] : []),
          ...columns.map((c) => column(c.name, c.type, { nullable: c.nullable ?? true, default: c.default ?? null, unique: c.unique ?? false, isPrimaryKey: c.primaryKey ?? false })),
          ...(access === 'owner' && !columns.some((c) => c.name === 'owner_id') ? [column('owner_id', 'uuid', { default: 'auth.uid()' })] : []),
        ];
        tables = [...tables, { name, schema: 'public', columns: all, primaryKey: keyed.length === 0 ? ['id'] : keyed, foreignKeys: [], rlsEnabled: true, access, policies: [] }];
        // What the CREATE TABLE makes beside the table takes its name too: the key's index, the unique columns'
        // indexes, the automatic id's sequence (PostgreSQL's names; longer ones it shortens, left out here).
        const implied = [
          { name: `${name}_pkey`, kind: 'index' },
          ...columns.filter((c) => c.unique && !c.primaryKey).map((c) => ({ name: `${name}_${c.name}_key`, kind: 'index' })),
          ...(keyed.length === 0 ? [{ name: `${name}_id_seq`, kind: 'sequence' }] : []),
        ].filter((o) => o.name.length <= 63);
        otherObjects = [...otherObjects, ...implied];
        break;
      }
      case 'TableDropped':
        held.tables.push(event.data.name);
        tables = tables.filter((t) => t.name !== event.data.name);
        break;
      case 'ColumnAdded': {
        const added = event.data.column;
        const made = column(added.name, added.type, { nullable: added.nullable ?? true, default: added.default ?? null, unique: added.unique ?? false });
        onTable(event.data.table, (t) => (t.columns.some((c) => c.name === added.name) ? t : { ...t, columns: [...t.columns, made] }));
        // A unique column's index takes its name as a table creation's does (PostgreSQL's name; a longer one it shortens).
        const index = `${event.data.table}_${added.name}_key`;
        if (added.unique && index.length <= 63) otherObjects = [...otherObjects, { name: index, kind: 'index' }];
        break;
      }
      case 'ColumnUpdated': {
        const { table: owner, column: from, change } = event.data;
        // Its type, nullability and default as they will be (a later foreign key is checked against the new type).
        const changed = (c: TableInfo['columns'][number]) => ({
          ...c,
          ...(change.type !== undefined && { type: change.type }),
          ...(change.nullable !== undefined && { nullable: change.nullable }),
          ...(change.default !== undefined && { default: change.default }),
        });
        const to = change.name ?? from;
        if (to === from) {
          onTable(owner, (t) => ({ ...t, columns: t.columns.map((c) => (c.name === from ? changed(c) : c)) }));
          break;
        }
        held.columns.push({ table: owner, column: from });
        // The catalog may show the rename applied already (read after the stream): then nothing is left to do.
        if (tables.find((t) => t.name === owner)?.columns.some((c) => c.name === to)) break;
        // A rename carries over to the table's keys and to the foreign keys referencing the column, as PostgreSQL's does.
        const renamed = (names: string[]) => names.map((name) => (name === from ? to : name));
        tables = tables.map((t) => ({
          ...t,
          ...(t.name === owner && {
            columns: t.columns.map((c) => (c.name === from ? changed({ ...c, name: to }) : c)),
            primaryKey: renamed(t.primaryKey),
          }),
          foreignKeys: t.foreignKeys.map((fk) => ({
            ...fk,
            ...(t.name === owner && { columns: renamed(fk.columns) }),
            ...(fk.references.table === owner && { references: { ...fk.references, columns: renamed(fk.references.columns) } }),
          })),
        }));
        break;
      }
      case 'ColumnDropped': {
        const dropped = event.data.column;
        held.columns.push({ table: event.data.table, column: dropped });
        // PostgreSQL drops the table's constraints on the column with it: its foreign keys, and the primary key it is in.
        // (A key of another table that references the column makes the drop fail instead: that key stays.)
        onTable(event.data.table, (t) => {
          const keyGoes = t.primaryKey.includes(dropped);
          return {
            ...t,
            columns: t.columns.filter((c) => c.name !== dropped).map((c) => (keyGoes && c.isPrimaryKey ? { ...c, isPrimaryKey: false } : c)),
            primaryKey: keyGoes ? [] : t.primaryKey,
            foreignKeys: t.foreignKeys.filter((fk) => !fk.columns.includes(dropped)),
          };
        });
        break;
      }
      case 'ForeignKeyAdded': {
        const fk = event.data.foreignKey;
        onTable(event.data.table, (t) => (t.foreignKeys.some((f) => f.name === fk.name) ? t : { ...t, foreignKeys: [...t.foreignKeys, fk] }));
        break;
      }
      case 'ForeignKeyDropped':
        onTable(event.data.table, (t) => ({ ...t, foreignKeys: t.foreignKeys.filter((f) => f.name !== event.data.name) }));
        break;
      default:
        break;
    }
  }
  return { ...facts, tables, otherObjects, held };
}

/**
 * The buckets once `pending` is applied, except that a bucket whose deletion is
 * pending stays, marked `deleting`: its name is taken until the deletion's
 * outcome. Idempotent for the same reason.
 */
export function withPendingBuckets(buckets: BucketFacts[], pending: PendingChange[]): BucketFacts[] {
  let result = buckets;
  for (const { event } of pending) {
    switch (event.type) {
      case 'BucketCreated': {
        const { name, public: isPublic } = event.data.bucket;
        // After a deletion recorded before it (a history from before names stayed taken while deleting), it is the bucket.
        if (!result.some((b) => b.name === name && !b.deleting)) result = [...result.filter((b) => b.name !== name), { name, public: isPublic, hasObjects: false }];
        break;
      }
      case 'BucketUpdated':
        result = result.map((b) => (b.name === event.data.name ? { ...b, public: event.data.public } : b));
        break;
      case 'BucketDeletionRequested':
        // Not gone until applied: a deletion can still fail (a bucket that has had objects uploaded since, without force).
        result = result.map((b) => (b.name === event.data.name ? { ...b, deleting: true } : b));
        break;
      default:
        break;
    }
  }
  return result;
}
