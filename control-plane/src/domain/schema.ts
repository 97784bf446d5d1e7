/**
 * Schema decisions: a table, column or foreign-key command against the
 * project's state and the tenant's live catalog, to events or a refusal
 * (400/404/409) before anything is recorded. Pure: the catalog is passed in.
 */
import {
  ApiError,
  checkDefault,
  checkIdentifier,
  checkSqlExpression,
  normalizeType,
  notFound,
  projectUnavailable,
  type ColumnChange,
  type SchemaCommand,
  type SchemaEvent,
} from '@baseplane/contracts';
import type { SchemaFacts, TableInfo } from '../tenants/catalog';
import type { ProjectState } from './project';

const taken = (what: string) => new ApiError(409, 'already_exists', `${what} already exists`);
const unknownColumn = (table: string, column: string) => new ApiError(400, 'unknown_column', `column "${column}" does not exist in table "${table}"`);
/** PostgreSQL makes a key column not null whatever was asked: asking for null is refused, not silently changed. */
const keyNeverNull = (column: string) => new ApiError(400, 'invalid_request', `column "${column}" is in the primary key, which is never null`);

/** System columns every table has: a column cannot take their names. */
const SYSTEM_COLUMNS = new Set(['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']);

/** A new column's name: an identifier, and not a system column's. */
function columnName(name: string): string {
  checkIdentifier(name, 'column');
  if (SYSTEM_COLUMNS.has(name)) throw new ApiError(400, 'invalid_request', `"${name}" is the name of a system column every table has`);
  return name;
}

/** 409 when a recorded drop or rename, not applied yet, still holds the column's name. */
function assertColumnNotHeld(facts: SchemaFacts, table: string, column: string): void {
  if (facts.held?.columns.some((h) => h.table === table && h.column === column)) {
    throw new ApiError(409, 'already_exists', `column "${column}" of table "${table}" is being dropped or renamed`, null, 'take its name once that change is applied (its operation succeeded)');
  }
}

/** PostgreSQL's limit on a table's columns (MaxHeapAttributeNumber); dropped columns count too, which the catalog does not show. */
const MAX_COLUMNS = 1600;

/** json has no btree operator class, so no unique index and no primary key (42704 when applied); jsonb has one. */
function assertIndexable(column: { name: string; type: string }, why: string): void {
  if (column.type !== 'json') return;
  throw new ApiError(400, 'invalid_request', `column "${column.name}" is json, which cannot be ${why}`, null, 'use jsonb, which can');
}

/**
 * The kinds of API.md's types that PostgreSQL never compares with each other
 * in a foreign key (42804 when applied): a key from one kind to another is
 * refused. Within a kind PostgreSQL decides (an int8 column may reference an
 * int4 key, not the other way round). Arrays are their element's kind, apart
 * from scalars; types outside API.md's list (made in SQL) are left to it.
 */
const TYPE_KINDS: Record<string, string> = {
  text: 'text', varchar: 'text',
  int2: 'number', int4: 'number', int8: 'number', numeric: 'number', float4: 'number', float8: 'number',
  date: 'date and time', timestamp: 'date and time', timestamptz: 'date and time',
  time: 'time', bool: 'bool', uuid: 'uuid', json: 'json', jsonb: 'jsonb', bytea: 'bytea',
};

function typeKind(type: string): string | undefined {
  let normalized: string;
  try {
    normalized = normalizeType(type);
  } catch {
    return undefined;
  }
  const match = /^([a-z0-9]+)(?:\([^)]*\))?((?:\[\])*)$/.exec(normalized);
  const kind = match ? TYPE_KINDS[match[1]!] : undefined;
  return kind === undefined ? undefined : match![2] ? `${kind} array` : kind;
}

/** 400 when a foreign key pairs columns whose types PostgreSQL cannot compare, or names a referenced column twice. */
function assertForeignKeyPairs(target: TableInfo, columns: string[], referenced: TableInfo, references: string[]): void {
  const twice = references.find((name, i) => references.indexOf(name) !== i);
  if (twice !== undefined) throw new ApiError(400, 'invalid_request', `a foreign key references column "${twice}" twice`);
  columns.forEach((name, i) => {
    const from = target.columns.find((c) => c.name === name)!;
    const to = referenced.columns.find((c) => c.name === references[i])!;
    const [fromKind, toKind] = [typeKind(from.type), typeKind(to.type)];
    if (fromKind === undefined || toKind === undefined || fromKind === toKind) return;
    throw new ApiError(
      400,
      'invalid_request',
      `foreign key column "${from.name}" (${from.type}) cannot reference "${referenced.name}"."${to.name}" (${to.type}): PostgreSQL compares no ${fromKind} with a ${toKind}`,
      null,
      'give the column a type of the referenced column\'s kind',
    );
  });
}

function table(catalog: TableInfo[], name: string): TableInfo {
  const found = catalog.find((t) => t.name === name);
  if (!found) throw notFound(`table "${name}"`);
  return found;
}

export function decideSchema(command: SchemaCommand, project: ProjectState, facts: SchemaFacts): SchemaEvent[] {
  const catalog = facts.tables;
  if (project.status === 'none' || project.status === 'deleted') throw notFound('project');
  if (project.status !== 'active') throw projectUnavailable(project.status);
  const { projectId } = command.data;
  switch (command.type) {
    case 'CreateTable': {
      const { name, columns, access } = command.data;
      checkIdentifier(name, 'table');
      if (catalog.some((t) => t.name === name)) throw taken(`table "${name}"`);
      if (facts.held?.tables.includes(name)) {
        throw new ApiError(409, 'already_exists', `table "${name}" is being dropped`, null, 'create it again once the drop is applied (its operation succeeded)');
      }
      // A view, sequence, index, type… of that name would make the CREATE TABLE fail when applied.
      const other = facts.otherObjects.find((o) => o.name === name);
      if (other) throw taken(`a ${other.kind} named "${name}"`);
      const names = new Set<string>();
      for (const column of columns) {
        columnName(column.name);
        checkDefault(column.default, column.type);
        if (names.has(column.name)) throw new ApiError(400, 'invalid_request', `column "${column.name}" is given twice`);
        if (column.primaryKey && column.nullable === true) throw keyNeverNull(column.name);
        if (column.primaryKey) assertIndexable(column, 'in a primary key');
        else if (column.unique) assertIndexable(column, 'unique');
        names.add(column.name);
      }
      const hasPrimaryKey = columns.some((c) => c.primaryKey);
      if (!hasPrimaryKey && names.has('id')) {
        throw new ApiError(400, 'invalid_request', 'a column "id" without primaryKey would clash with the automatic id primary key', null, 'mark the primary key column(s) with primaryKey: true');
      }
      if (access === 'owner' && columns.some((c) => c.name === 'owner_id' && c.type !== 'uuid')) {
        throw new ApiError(400, 'invalid_request', 'the owner preset needs owner_id to be a uuid');
      }
      const added = [!hasPrimaryKey && 'id', access === 'owner' && !names.has('owner_id') && 'owner_id'].filter((name) => name !== false);
      if (columns.length + added.length > MAX_COLUMNS) {
        const also = added.length === 0 ? '' : ` (${added.map((name) => `the automatic ${name}`).join(' and ')} ${added.length === 1 ? 'is one of them' : 'are among them'})`;
        throw new ApiError(400, 'invalid_request', `a table has at most ${MAX_COLUMNS} columns${also}; this one would have ${columns.length + added.length}`);
      }
      return [{ type: 'TableCreated', data: { projectId, name, columns, access } }];
    }
    case 'DropTable':
      table(catalog, command.data.name);
      return [{ type: 'TableDropped', data: { projectId, name: command.data.name } }];
    case 'AddColumn': {
      const target = table(catalog, command.data.table);
      columnName(command.data.column.name);
      if (command.data.column.primaryKey) {
        throw new ApiError(400, 'invalid_request', 'a column added to a table cannot join its primary key', null, 'make the key when the table is created, or change it with SQL');
      }
      checkDefault(command.data.column.default, command.data.column.type);
      if (command.data.column.unique) assertIndexable(command.data.column, 'unique');
      if (target.columns.some((c) => c.name === command.data.column.name)) throw taken(`column "${command.data.column.name}"`);
      assertColumnNotHeld(facts, target.name, command.data.column.name);
      if (target.columns.length >= MAX_COLUMNS) throw new ApiError(400, 'invalid_request', `table "${target.name}" has ${MAX_COLUMNS} columns, the most a table has`);
      return [{ type: 'ColumnAdded', data: { projectId, table: target.name, column: command.data.column } }];
    }
    case 'UpdateColumn': {
      const target = table(catalog, command.data.table);
      const current = target.columns.find((c) => c.name === command.data.column);
      if (!current) throw notFound(`column "${command.data.column}"`);
      const change: ColumnChange = { ...command.data.change };
      if (change.name !== undefined && change.name !== command.data.column) {
        columnName(change.name);
        if (target.columns.some((c) => c.name === change.name)) throw taken(`column "${change.name}"`);
        assertColumnNotHeld(facts, target.name, change.name);
      }
      if (change.nullable === true && current.isPrimaryKey) throw keyNeverNull(current.name);
      if (current.isIdentity && (change.default !== undefined || change.nullable === true)) {
        throw new ApiError(400, 'invalid_request', `column "${current.name}" is an identity column: its values come from its sequence, it takes no default and is never null`);
      }
      if (change.type !== undefined) change.type = normalizeType(change.type);
      if (change.type !== undefined && (current.isPrimaryKey || current.unique)) assertIndexable({ name: current.name, type: change.type }, current.isPrimaryKey ? 'in a primary key' : 'unique');
      if (change.using !== undefined && change.type === undefined) throw new ApiError(400, 'invalid_request', '"using" goes with a new "type"');
      if (change.using !== undefined) checkSqlExpression(change.using, 'using');
      checkDefault(change.default, change.type ?? current.type);
      return [{ type: 'ColumnUpdated', data: { projectId, table: target.name, column: command.data.column, change } }];
    }
    case 'DropColumn': {
      const target = table(catalog, command.data.table);
      if (!target.columns.some((c) => c.name === command.data.column)) throw notFound(`column "${command.data.column}"`);
      return [{ type: 'ColumnDropped', data: { projectId, table: target.name, column: command.data.column } }];
    }
    case 'AddForeignKey': {
      const target = table(catalog, command.data.table);
      const fk = command.data.foreignKey;
      for (const column of fk.columns) if (!target.columns.some((c) => c.name === column)) throw unknownColumn(target.name, column);
      const referenced = table(catalog, fk.references.table);
      for (const column of fk.references.columns) if (!referenced.columns.some((c) => c.name === column)) throw unknownColumn(referenced.name, column);
      if (fk.columns.length !== fk.references.columns.length) {
        throw new ApiError(400, 'invalid_request', 'a foreign key names as many columns as it references');
      }
      assertForeignKeyPairs(target, fk.columns, referenced, fk.references.columns);
      const name = checkIdentifier(fk.name ?? `${target.name}_${fk.columns.join('_')}_fkey`.slice(0, 63), 'foreign key');
      if (catalog.some((t) => t.foreignKeys.some((f) => f.name === name) || t.name === name)) throw taken(`foreign key "${name}"`);
      // A primary key or unique constraint of that name (its index has the name): PostgreSQL would refuse it when applied.
      if (facts.otherObjects.some((o) => o.kind === 'index' && o.name === name)) throw taken(`an index or constraint named "${name}"`);
      return [{ type: 'ForeignKeyAdded', data: { projectId, table: target.name, foreignKey: { ...fk, name, onDelete: fk.onDelete ?? 'no action', onUpdate: fk.onUpdate ?? 'no action' } } }];
    }
    case 'DropForeignKey': {
      const target = table(catalog, command.data.table);
      if (!target.foreignKeys.some((f) => f.name === command.data.name)) throw notFound(`foreign key "${command.data.name}"`);
      return [{ type: 'ForeignKeyDropped', data: { projectId, table: target.name, name: command.data.name } }];
    }
  }
}
