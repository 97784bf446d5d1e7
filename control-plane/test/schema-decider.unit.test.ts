/** given(project state, catalog).when(schema command).then(events | refusal). */
import { describe, expect, it } from 'vitest';
import { ApiError, type SchemaCommand } from '@baseplane/contracts';
import { decideSchema } from '../src/domain/schema';
import { trackPending, withPendingSchema, type PendingChange } from '../src/domain/pending-changes';
import { initialState, type ProjectState } from '../src/domain/project';
import type { OtherObject, SchemaFacts, TableInfo } from '../src/tenants/catalog';

const projectId = 'p1';
const active: ProjectState = { ...initialState(), status: 'active', name: 'p', teamId: 't' };
const column = (name: string, extra: Partial<TableInfo['columns'][number]> = {}) => ({ name, type: 'text', nullable: true, default: null, unique: false, isPrimaryKey: false, isIdentity: false, ...extra });
const todos: TableInfo = {
  name: 'todos', schema: 'public', columns: [column('id', { isPrimaryKey: true }), column('title')], primaryKey: ['id'],
  foreignKeys: [{ name: 'todos_fk', columns: ['title'], references: { table: 'todos', columns: ['id'] }, onDelete: 'no action', onUpdate: 'no action' }],
  rlsEnabled: true, access: 'public-read', policies: [],
};

const stats: OtherObject = { name: 'stats', kind: 'view' };
const catalog = (tables: TableInfo[] = [todos], otherObjects: OtherObject[] = [stats]): SchemaFacts => ({ tables, otherObjects });

function refusal(command: SchemaCommand, state = active, facts = catalog()): { status: number; code: string; message: string } {
  try {
    decideSchema(command, state, facts);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return { status: (error as ApiError).status, code: (error as ApiError).code, message: (error as ApiError).message };
  }
  throw new Error('expected a refusal');
}

describe('schema decider', () => {
  it('creates a table whose name is free', () => {
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'notes', columns: [{ name: 'body', type: 'text' }], access: 'owner' } }, active, catalog())).toEqual([
      { type: 'TableCreated', data: { projectId, name: 'notes', columns: [{ name: 'body', type: 'text' }], access: 'owner' } },
    ]);
  });

  it('refuses what the catalog contradicts, before anything is recorded', () => {
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'todos', columns: [], access: 'custom' } })).toMatchObject({ status: 409, code: 'already_exists' });
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'a', type: 'text' }, { name: 'a', type: 'int4' }], access: 'custom' } }).status).toBe(400);
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'id', type: 'text' }], access: 'custom' } }).status).toBe(400);
    expect(refusal({ type: 'DropTable', data: { projectId, name: 'nope' } })).toMatchObject({ status: 404, code: 'not_found' });
    expect(refusal({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'title', type: 'text' } } })).toMatchObject({ status: 409, code: 'already_exists' });
    expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { name: 'id' } } }).status).toBe(409);
    expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'nope', change: { nullable: true } } }).status).toBe(404);
    expect(refusal({ type: 'AddForeignKey', data: { projectId, table: 'todos', foreignKey: { columns: ['x'], references: { table: 'todos', columns: ['id'] } } } })).toMatchObject({ status: 400, code: 'unknown_column' });
    expect(refusal({ type: 'AddForeignKey', data: { projectId, table: 'todos', foreignKey: { name: 'todos_fk', columns: ['title'], references: { table: 'todos', columns: ['id'] } } } }).status).toBe(409);
    expect(refusal({ type: 'DropForeignKey', data: { projectId, table: 'todos', name: 'nope' } }).status).toBe(404);
  });

  it('refuses a table name that a view, sequence, index or type of public already takes', () => {
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'stats', columns: [], access: 'custom' } })).toEqual({ status: 409, code: 'already_exists', message: 'a view named "stats" already exists' });
    const others = ['todos_id_seq', 'todos_pkey', 'mood'].map((name, i) => ({ name, kind: ['sequence', 'index', 'type'][i]! }));
    for (const other of others) {
      expect(refusal({ type: 'CreateTable', data: { projectId, name: other.name, columns: [], access: 'custom' } }, active, catalog([todos], others))).toMatchObject({ status: 409, code: 'already_exists' });
    }
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'Stats', columns: [], access: 'custom' } }, active, catalog())).toHaveLength(1);
  });

  it('refuses a "using" that is not one SQL expression', () => {
    const using = (text: string) => refusal({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { type: 'text', using: text } } });
    expect(using('title, disable row level security')).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('one SQL expression') });
    expect(using('title; drop table todos')).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(using('title -- comment')).toMatchObject({ status: 400, code: 'invalid_request' });
  });

  it('refuses schema changes unless the project is active', () => {
    expect(refusal({ type: 'DropTable', data: { projectId, name: 'todos' } }, { ...active, status: 'provisioning' })).toMatchObject({ status: 503, code: 'project_unavailable' });
    expect(refusal({ type: 'DropTable', data: { projectId, name: 'todos' } }, { ...active, status: 'deleting' })).toEqual({ status: 503, code: 'project_unavailable', message: 'project is being deleted' });
    expect(refusal({ type: 'DropTable', data: { projectId, name: 'todos' } }, { ...active, status: 'deleted' })).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('normalises a new type and names a foreign key after its columns', () => {
    expect(decideSchema({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { type: 'integer', using: 'title::int' } } }, active, catalog())[0]!.data).toMatchObject({ change: { type: 'int4', using: 'title::int' } });
    expect(decideSchema({ type: 'AddForeignKey', data: { projectId, table: 'todos', foreignKey: { columns: ['id'], references: { table: 'todos', columns: ['id'] } } } }, active, catalog())[0]!.data)
      .toMatchObject({ foreignKey: { name: 'todos_id_fkey', onDelete: 'no action', onUpdate: 'no action' } });
  });
});

describe('changes recorded but not yet applied', () => {
  const recorded = (version: number, event: PendingChange['event']) => ({ ...event, version });
  const added = (version: number, name: string) => recorded(version, { type: 'ColumnAdded', data: { projectId, table: 'todos', column: { name, type: 'int4' } } });

  it('takes a name a pending change takes, and frees it again once that change has failed', () => {
    let pending = [added(5, 'due'), added(6, 'rank')].reduce(trackPending, [] as PendingChange[]);
    const addDue: SchemaCommand = { type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'due', type: 'date' } } };
    expect(refusal(addDue, active, withPendingSchema(catalog(), pending))).toMatchObject({ status: 409, code: 'already_exists' });
    pending = trackPending(pending, { type: 'SchemaChangeFailed', data: { projectId, causationVersion: 5, reason: 'x', error: { code: null, message: 'x', detail: null, hint: null } } });
    expect(decideSchema(addDue, active, withPendingSchema(catalog(), pending))).toHaveLength(1);
  });

  it('lays pending changes over a catalog that already holds some of them without doubling them', () => {
    const pending = [
      recorded(5, { type: 'TableCreated', data: { projectId, name: 'notes', columns: [{ name: 'body', type: 'text' }], access: 'owner' } }),
      added(6, 'due'),
      recorded(7, { type: 'TableDropped', data: { projectId, name: 'todos' } }),
    ].reduce(trackPending, [] as PendingChange[]);
    const facts = withPendingSchema(catalog([{ ...todos, columns: [...todos.columns, column('due')] }]), pending);
    expect(facts.tables.map((t) => t.name)).toEqual(['notes']);
    expect(facts.tables[0]!.columns.map((c) => c.name)).toEqual(['id', 'body', 'owner_id']);
    expect(refusal({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'x', type: 'text' } } }, active, facts).status).toBe(404);
  });

  it('holds the names a pending drop or rename frees until it is applied: it can still fail', () => {
    // A drop another table's foreign key blocks, a rename whose new type does not take the values: both fail when applied.
    const pending = [
      recorded(5, { type: 'TableDropped', data: { projectId, name: 'todos' } }),
      recorded(6, { type: 'ColumnDropped', data: { projectId, table: 'notes', column: 'code' } }),
      recorded(7, { type: 'ColumnUpdated', data: { projectId, table: 'notes', column: 'amount', change: { name: 'amount_text', type: 'int4' } } }),
    ].reduce(trackPending, [] as PendingChange[]);
    const notes: TableInfo = { ...todos, name: 'notes', columns: [column('id', { isPrimaryKey: true }), column('code'), column('amount')], foreignKeys: [] };
    let facts = withPendingSchema(catalog([todos, notes]), pending);
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'todos', columns: [], access: 'custom' } }, active, facts))
      .toEqual({ status: 409, code: 'already_exists', message: 'table "todos" is being dropped' });
    for (const name of ['code', 'amount']) {
      expect(refusal({ type: 'AddColumn', data: { projectId, table: 'notes', column: { name, type: 'text' } } }, active, facts)).toMatchObject({ status: 409, code: 'already_exists' });
      expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'notes', column: 'id', change: { name } } }, active, facts)).toMatchObject({ status: 409 });
    }
    // Gone from what commands act on meanwhile.
    expect(refusal({ type: 'DropTable', data: { projectId, name: 'todos' } }, active, facts).status).toBe(404);
    // Once their outcomes are in, the names are free (a failed drop leaves the table, as the catalog then says).
    const settled = [5, 6, 7].reduce((list, version) => trackPending(list, { type: 'SchemaChangeApplied', data: { projectId, causationVersion: version } }), pending);
    facts = withPendingSchema(catalog([{ ...notes, columns: [column('id', { isPrimaryKey: true }), column('amount_text')] }]), settled);
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'todos', columns: [], access: 'custom' } }, active, facts)).toHaveLength(1);
    expect(decideSchema({ type: 'AddColumn', data: { projectId, table: 'notes', column: { name: 'amount', type: 'text' } } }, active, facts)).toHaveLength(1);
  });

  it('takes the names a pending table creation makes beside the table: its key\'s index, unique columns\' indexes, its id sequence', () => {
    const pending = [recorded(5, { type: 'TableCreated', data: { projectId, name: 'gadgets', columns: [{ name: 'sku', type: 'text', unique: true }], access: 'custom' } })]
      .reduce(trackPending, [] as PendingChange[]);
    const facts = withPendingSchema(catalog(), pending);
    for (const name of ['gadgets_pkey', 'gadgets_id_seq', 'gadgets_sku_key']) {
      expect(refusal({ type: 'CreateTable', data: { projectId, name, columns: [], access: 'custom' } }, active, facts), name).toMatchObject({ status: 409, code: 'already_exists' });
    }
  });

  it('takes a pending column drop\'s foreign keys and primary key with the column, as PostgreSQL does', () => {
    const pairs: TableInfo = {
      ...todos, name: 'pairs', primaryKey: ['a', 'b'], columns: [column('a', { isPrimaryKey: true }), column('b', { isPrimaryKey: true }), column('owner'), column('note')],
      foreignKeys: [
        { name: 'pairs_owner', columns: ['owner'], references: { table: 'todos', columns: ['title'] }, onDelete: 'no action', onUpdate: 'no action' },
        { name: 'pairs_note', columns: ['note', 'owner'], references: { table: 'pairs', columns: ['a', 'b'] }, onDelete: 'no action', onUpdate: 'no action' },
        { name: 'pairs_a', columns: ['a'], references: { table: 'todos', columns: ['id'] }, onDelete: 'no action', onUpdate: 'no action' },
      ],
    };
    const pending = [recorded(5, { type: 'ColumnDropped', data: { projectId, table: 'pairs', column: 'owner' } }), recorded(6, { type: 'ColumnDropped', data: { projectId, table: 'pairs', column: 'b' } })]
      .reduce(trackPending, [] as PendingChange[]);
    const facts = withPendingSchema(catalog([todos, pairs]), pending);
    const after = facts.tables.find((t) => t.name === 'pairs')!;
    expect(after.foreignKeys.map((fk) => fk.name)).toEqual(['pairs_a']);
    expect(after.primaryKey).toEqual([]);
    expect(after.columns.map((c) => [c.name, c.isPrimaryKey])).toEqual([['a', false], ['note', false]]);
    // Dropping the key afterwards would fail when applied (42704): it is not found now.
    expect(refusal({ type: 'DropForeignKey', data: { projectId, table: 'pairs', name: 'pairs_owner' } }, active, facts)).toMatchObject({ status: 404, code: 'not_found' });
    // A key that references a dropped column (rather than being on it) is not dropped with it: PostgreSQL refuses that drop, and the key stays.
    const refs = withPendingSchema(catalog([todos]), [recorded(5, { type: 'ColumnDropped', data: { projectId, table: 'todos', column: 'id' } })].reduce(trackPending, [] as PendingChange[]));
    expect(refs.tables[0]!.foreignKeys.map((fk) => fk.name)).toEqual(['todos_fk']);
  });

  it('carries a pending rename into its table\'s keys and the foreign keys referencing it, and a pending type change into the checks of a foreign key', () => {
    const rename = [recorded(5, { type: 'ColumnUpdated', data: { projectId, table: 'todos', column: 'id', change: { name: 'key' } } })].reduce(trackPending, [] as PendingChange[]);
    const renamed = withPendingSchema(catalog(), rename).tables[0]!;
    expect(renamed.primaryKey).toEqual(['key']);
    expect(renamed.foreignKeys[0]).toMatchObject({ columns: ['title'], references: { table: 'todos', columns: ['key'] } });

    const keyed: TableInfo = { ...todos, columns: [column('id', { isPrimaryKey: true, type: 'int8' }), column('title')], foreignKeys: [] };
    const notes: TableInfo = { ...todos, name: 'notes', columns: [column('id', { isPrimaryKey: true }), column('code')], foreignKeys: [] };
    const addKey: SchemaCommand = { type: 'AddForeignKey', data: { projectId, table: 'notes', foreignKey: { columns: ['code'], references: { table: 'todos', columns: ['id'] } } } };
    expect(refusal(addKey, active, catalog([keyed, notes]))).toMatchObject({ status: 400, code: 'invalid_request' });
    const retype = [recorded(6, { type: 'ColumnUpdated', data: { projectId, table: 'notes', column: 'code', change: { type: 'int8', using: 'code::int8', nullable: false } } })].reduce(trackPending, [] as PendingChange[]);
    const facts = withPendingSchema(catalog([keyed, notes]), retype);
    expect(facts.tables[1]!.columns[1]).toMatchObject({ name: 'code', type: 'int8', nullable: false });
    expect(decideSchema(addKey, active, facts)).toHaveLength(1);
  });

  it('takes the name of a pending added unique column\'s index, and gives the column its flags', () => {
    const pending = [
      recorded(5, { type: 'ColumnAdded', data: { projectId, table: 'todos', column: { name: 'code', type: 'text', unique: true, nullable: false, default: 'x' } } }),
      recorded(6, { type: 'ColumnAdded', data: { projectId, table: 'todos', column: { name: 'plain', type: 'text' } } }),
    ].reduce(trackPending, [] as PendingChange[]);
    const facts = withPendingSchema(catalog(), pending);
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'todos_code_key', columns: [], access: 'custom' } }, active, facts)).toMatchObject({ status: 409, code: 'already_exists' });
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'todos_plain_key', columns: [], access: 'custom' } }, active, facts)).toHaveLength(1);
    expect(facts.tables[0]!.columns.find((c) => c.name === 'code')).toMatchObject({ unique: true, nullable: false, default: 'x' });
  });
});

describe('checks that would otherwise fail only when applied', () => {
  it('refuses a system column\'s name, a nullable primary key column, and a foreign key named as an index or key constraint', () => {
    for (const name of ['xmin', 'ctid', 'tableoid']) {
      expect(refusal({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name, type: 'text' } } }).status, name).toBe(400);
      expect(refusal({ type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name, type: 'text' }], access: 'custom' } }).status, name).toBe(400);
      expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { name } } }).status, name).toBe(400);
    }
    expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'id', change: { nullable: true } } })).toMatchObject({ status: 400, code: 'invalid_request' });
    // Made not null by the key all the same, and silently: refused, as a change of a key column to nullable is.
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'code', type: 'text', primaryKey: true, nullable: true }], access: 'custom' } }))
      .toEqual({ status: 400, code: 'invalid_request', message: 'column "code" is in the primary key, which is never null' });
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'code', type: 'text', primaryKey: true, nullable: false }], access: 'custom' } }, active, catalog())).toHaveLength(1);
    // ADD COLUMN makes no key: a column added to a table cannot join its primary key.
    expect(refusal({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'code', type: 'text', primaryKey: true } } })).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(decideSchema({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { nullable: false } } }, active, catalog())).toHaveLength(1);
    const withKey = catalog([todos], [{ name: 'todos_pkey', kind: 'index' }]);
    expect(refusal({ type: 'AddForeignKey', data: { projectId, table: 'todos', foreignKey: { name: 'todos_pkey', columns: ['title'], references: { table: 'todos', columns: ['id'] } } } }, active, withKey).status).toBe(409);
  });

  it('refuses a date or time default that PostgreSQL would fix at the apply (now, today, tomorrow, yesterday), and takes it for other types', () => {
    const withDue = catalog([{ ...todos, columns: [...todos.columns, column('due', { type: 'timestamptz' })] }]);
    const refused: SchemaCommand[] = [
      { type: 'CreateTable', data: { projectId, name: 'events', columns: [{ name: 'at', type: 'timestamptz', default: 'now' }], access: 'private' } },
      { type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'on', type: 'date', default: ' Tomorrow ' } } },
      { type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'due', change: { default: 'today' } } },
      { type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'title', change: { type: 'time', default: 'yesterday' } } },
    ];
    for (const command of refused) expect(refusal(command, active, withDue)).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('the moment the column is made') });
    expect(decideSchema({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'at', type: 'timestamptz', default: 'now()' } } }, active, withDue)).toHaveLength(1);
    expect(decideSchema({ type: 'AddColumn', data: { projectId, table: 'todos', column: { name: 'word', type: 'text', default: 'today' } } }, active, withDue)).toHaveLength(1);
    expect(decideSchema({ type: 'UpdateColumn', data: { projectId, table: 'todos', column: 'due', change: { default: '2026-01-01 00:00' } } }, active, withDue)).toHaveLength(1);
  });
});

describe('what PostgreSQL refuses when applied, refused before anything is recorded', () => {
  const typed = (name: string, type: string, extra: Partial<TableInfo['columns'][number]> = {}) => column(name, { type, ...extra });
  const things: TableInfo = {
    ...todos, name: 'things', foreignKeys: [], primaryKey: ['id'],
    columns: [typed('id', 'int8', { isPrimaryKey: true, isIdentity: true, nullable: false, unique: true }), typed('code', 'text', { unique: true }), typed('n', 'int4'), typed('small', 'int2'),
      typed('amount', 'numeric(10,2)'), typed('at', 'timestamptz'), typed('day', 'date'), typed('clock', 'time'), typed('ref', 'uuid'), typed('ids', 'int8[]'), typed('label', 'varchar(20)'),
      typed('feeling', 'feeling'), typed('letter', 'character(1)'), typed('doc', 'jsonb'), typed('raw', 'json'), typed('seq', 'int4', { isIdentity: true, nullable: false })],
  };
  const facts = catalog([todos, things]);
  const fk = (columns: string[], references: string[]): SchemaCommand => ({ type: 'AddForeignKey', data: { projectId, table: 'things', foreignKey: { columns, references: { table: 'things', columns: references } } } });

  it('refuses a json column that is unique or in the primary key, made, added or changed to json; takes jsonb and json[]', () => {
    const refused: SchemaCommand[] = [
      { type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'doc', type: 'json', unique: true }], access: 'custom' } },
      { type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'doc', type: 'json', primaryKey: true }], access: 'custom' } },
      { type: 'AddColumn', data: { projectId, table: 'things', column: { name: 'more', type: 'json', unique: true } } },
      { type: 'UpdateColumn', data: { projectId, table: 'things', column: 'code', change: { type: 'json', using: 'code::json' } } },
      { type: 'UpdateColumn', data: { projectId, table: 'things', column: 'id', change: { type: 'json', using: 'to_json(id)' } } },
    ];
    for (const command of refused) expect(refusal(command, active, facts), command.type).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('is json, which cannot be') });
    const taken: SchemaCommand[] = [
      { type: 'CreateTable', data: { projectId, name: 'x', columns: [{ name: 'doc', type: 'jsonb', unique: true }, { name: 'raw', type: 'json' }, { name: 'list', type: 'json[]', unique: true }], access: 'custom' } },
      { type: 'AddColumn', data: { projectId, table: 'things', column: { name: 'more', type: 'json' } } },
      { type: 'UpdateColumn', data: { projectId, table: 'things', column: 'n', change: { type: 'json', using: 'to_json(n)' } } },
    ];
    for (const command of taken) expect(decideSchema(command, active, facts), command.type).toHaveLength(1);
  });

  it('refuses a foreign key between kinds of types PostgreSQL never compares, and leaves the rest to it', () => {
    for (const [from, to] of [['code', 'id'], ['ref', 'code'], ['at', 'n'], ['clock', 'at'], ['ids', 'id'], ['n', 'ids'], ['doc', 'code'], ['label', 'ref']]) {
      expect(refusal(fk([from!], [to!]), active, facts), `${from} -> ${to}`).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('cannot reference') });
    }
    // Same kind (PostgreSQL then decides: int2 -> int8 works, numeric -> int8 does not), or a type made in SQL.
    for (const [from, to] of [['small', 'id'], ['amount', 'id'], ['day', 'at'], ['label', 'code'], ['feeling', 'code'], ['letter', 'code'], ['n', 'letter']]) {
      expect(decideSchema(fk([from!], [to!]), active, facts), `${from} -> ${to}`).toHaveLength(1);
    }
    // The automatic id of a table not applied yet is an int8 too.
    const pending = [{ version: 5, event: { type: 'TableCreated', data: { projectId, name: 'later', columns: [{ name: 'note', type: 'text' }], access: 'custom' } } as PendingChange['event'] }];
    const later = withPendingSchema(facts, pending);
    expect(refusal({ type: 'AddForeignKey', data: { projectId, table: 'later', foreignKey: { columns: ['note'], references: { table: 'later', columns: ['id'] } } } }, active, later).message).toContain('cannot reference');
  });

  it('refuses a foreign key that references one column twice; takes one whose own columns repeat, as PostgreSQL does', () => {
    expect(refusal(fk(['n', 'small'], ['id', 'id']), active, facts)).toEqual({ status: 400, code: 'invalid_request', message: 'a foreign key references column "id" twice' });
    expect(decideSchema(fk(['n', 'n'], ['id', 'small']), active, facts)).toHaveLength(1);
  });

  it('refuses a default, set or dropped, and null for an identity column', () => {
    for (const [column, change] of [['id', { default: '5' }], ['id', { default: null }], ['seq', { default: '5' }], ['seq', { nullable: true }]] as const) {
      expect(refusal({ type: 'UpdateColumn', data: { projectId, table: 'things', column, change } }, active, facts), JSON.stringify(change)).toMatchObject({ status: 400, code: 'invalid_request', message: expect.stringContaining('identity column') });
    }
    expect(decideSchema({ type: 'UpdateColumn', data: { projectId, table: 'things', column: 'n', change: { default: '5' } } }, active, facts)).toHaveLength(1);
  });

  it('refuses a table of more than 1600 columns, the automatic id and owner_id counted, and a column added to a table that has 1600', () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, type: 'int4' }));
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'wide', columns: many(1600), access: 'custom' } }))
      .toEqual({ status: 400, code: 'invalid_request', message: 'a table has at most 1600 columns (the automatic id is one of them); this one would have 1601' });
    expect(refusal({ type: 'CreateTable', data: { projectId, name: 'wide', columns: many(1599), access: 'owner' } }).message).toContain('(the automatic id and the automatic owner_id are among them); this one would have 1601');
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'wide', columns: many(1599), access: 'custom' } }, active, catalog())).toHaveLength(1);
    expect(decideSchema({ type: 'CreateTable', data: { projectId, name: 'wide', columns: [...many(1599), { name: 'k', type: 'int4', primaryKey: true }], access: 'custom' } }, active, catalog())).toHaveLength(1);
    const full: TableInfo = { ...todos, name: 'full', foreignKeys: [], columns: many(1600).map((c) => column(c.name)) };
    expect(refusal({ type: 'AddColumn', data: { projectId, table: 'full', column: { name: 'one_more', type: 'text' } } }, active, catalog([full])).message).toContain('1600 columns');
  });
});

