/**
 * Tables, columns and foreign keys as commands: decided against the live
 * catalog (refusals record nothing), applied by the workflow to a real tenant
 * database (apply failures change nothing and answer 422), read from the catalog.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeType, tenantOwnerRole } from '@baseplane/contracts';
import { apikey, bearer, call, createProject, projectEventTypes, scenarios, signUpOperator, streamVersion, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { connectTenant, whileAppliesWait, type TenantDatabase } from '../../deploy/test/tenant';
import type { PoolClient } from 'pg';
import { readCatalog } from '../src/tenants/catalog';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
let tenant: TenantDatabase;
const asOwner = (sql: string, values: unknown[] = []) => tenant.asOwner(sql, values);
const base = () => `/api/projects/${project.id}/tables`;
const auth = () => bearer(ada.token);

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  project = await createProject(ada, 'schema app');
  tenant = await connectTenant(project.id);
  const created = await call('POST', base(), {
    headers: auth(),
    body: { name: 'todos', columns: [{ name: 'title', type: 'text', nullable: false }, { name: 'done', type: 'boolean', default: false }] },
  });
  expect(created.status, created.text).toBe(201);
});
afterAll(async () => {
  await tenant.end();
});

describe('creating tables', () => {
  it('adds the identity primary key, enables RLS with the public-read preset and records two events', async () => {
    const table = await call('GET', `${base()}/todos/columns`, { headers: auth() });
    expect(table.body.map((c: { name: string }) => c.name)).toEqual(['id', 'title', 'done']);
    expect(table.body[0]).toMatchObject({ name: 'id', type: 'int8', isPrimaryKey: true, isIdentity: true, nullable: false });
    expect(table.body[1]).toMatchObject({ name: 'title', type: 'text', nullable: false });
    expect(table.body[2]).toMatchObject({ name: 'done', type: 'bool', default: 'false' });
    const list = await call('GET', base(), { headers: auth() });
    const todos = list.body.find((t: { name: string }) => t.name === 'todos');
    expect(todos).toMatchObject({ schema: 'public', primaryKey: ['id'], rlsEnabled: true, access: 'public-read' });
    expect(todos.policies).toEqual([expect.objectContaining({ command: 'select', roles: ['anon', 'authenticated'] })]);
    const owner = await tenant.client.query(`select tableowner from pg_tables where tablename = 'todos'`);
    expect(owner.rows[0].tableowner).toBe(tenantOwnerRole(project.id));
    expect((await projectEventTypes(project.id)).slice(-2)).toEqual(['TableCreated', 'SchemaChangeApplied']);
  });

  it('creates the owner preset with owner_id and per-user policies, and a composite key', async () => {
    const notes = await call('POST', base(), { headers: auth(), body: { name: 'notes', access: 'owner', columns: [{ name: 'body', type: 'text' }] } });
    expect(notes.status, notes.text).toBe(201);
    expect(notes.body.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'body', 'owner_id']);
    expect(notes.body.columns[2]).toMatchObject({ type: 'uuid', default: 'auth.uid()' });
    expect(notes.body.policies.map((p: { command: string }) => p.command).sort()).toEqual(['delete', 'insert', 'select', 'update']);
    const pairs = await call('POST', base(), {
      headers: auth(),
      body: { name: 'pairs', access: 'private', columns: [{ name: 'a', type: 'int4', primaryKey: true }, { name: 'b', type: 'varchar(20)', primaryKey: true }, { name: 'tags', type: 'text[]' }, { name: 'price', type: 'numeric(10,2)' }] },
    });
    expect(pairs.status, pairs.text).toBe(201);
    expect(pairs.body).toMatchObject({ primaryKey: ['a', 'b'], policies: [], access: 'private', rlsEnabled: true });
    expect(pairs.body.columns.map((c: { type: string }) => c.type)).toEqual(['int4', 'varchar(20)', 'text[]', 'numeric(10,2)']);
  });

  it("answers each column's type as API.md spells it, whatever alias made it, and a type outside its list as PostgreSQL names it", async () => {
    const inputs = ['text', 'character varying(12)', 'varchar', 'smallint', 'integer', 'bigint', 'numeric(8,3)', 'numeric', 'real', 'double precision', 'boolean', 'uuid', 'date', 'time',
      'timestamp', 'timestamp with time zone', 'json', 'jsonb', 'bytea', 'bigint[]', 'varchar(5)[]', 'timestamptz[]', 'numeric(4,1)[]'];
    const columns = inputs.map((type, i) => ({ name: `c${i}`, type }));
    const made = await call('POST', base(), { headers: auth(), body: { name: 'every_type', access: 'private', columns } });
    expect(made.status, made.text).toBe(201);
    const types = new Map(made.body.columns.map((c: { name: string; type: string }) => [c.name, c.type]));
    for (const [i, type] of inputs.entries()) expect(types.get(`c${i}`), type).toBe(normalizeType(type));
    // The record of a column made in SQL with a type API.md does not list keeps PostgreSQL's name for it.
    await asOwner(`create type feeling as enum ('ok', 'meh');
      create table other_types (id int8 primary key, letter char(1), at timestamp(3) with time zone, clock time with time zone, feeling feeling, feelings feeling[])`);
    const other = await call('GET', `${base()}/other_types/columns`, { headers: auth() });
    expect(other.status, other.text).toBe(200);
    expect(other.body.map((c: { type: string }) => c.type)).toEqual(['int8', 'character(1)', 'timestamp(3) with time zone', 'time with time zone', 'feeling', 'feeling[]']);
  });
});

describe('refusals record nothing', () => {
  const none = { projectId: () => project.id, types: [] };
  scenarios([
    { name: 'an unknown type is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'x1', columns: [{ name: 'a', type: 'money' }] }, expectedStatus: 400, expectedContent: ['unknown column type'], expectedEvents: none },
    { name: 'a bad table name is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'drop table x;--', columns: [] }, expectedStatus: 400, expectedEvents: none },
    { name: 'a bad column name is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'x2', columns: [{ name: 'a b', type: 'text' }] }, expectedStatus: 400, expectedEvents: none },
    { name: 'a taken table name is 409', method: 'POST', url: () => base(), headers: auth, body: { name: 'todos', columns: [] }, expectedStatus: 409, expectedContent: ['already_exists'], expectedEvents: none },
    { name: 'a taken column name is 409', method: 'POST', url: () => `${base()}/todos/columns`, headers: auth, body: { name: 'title', type: 'text' }, expectedStatus: 409, expectedEvents: none },
    { name: 'adding to an unknown table is 404', method: 'POST', url: () => `${base()}/nope/columns`, headers: auth, body: { name: 'a', type: 'text' }, expectedStatus: 404, expectedEvents: none },
    { name: 'dropping an unknown table is 404', method: 'DELETE', url: () => `${base()}/nope`, headers: auth, expectedStatus: 404, expectedEvents: none },
    { name: 'editing an unknown column is 404', method: 'PUT', url: () => `${base()}/todos/columns/nope`, headers: auth, body: { nullable: true }, expectedStatus: 404, expectedEvents: none },
    { name: 'an empty edit is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: {}, expectedStatus: 400, expectedEvents: none },
    { name: 'using without a type is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: { using: 'title::int' }, expectedStatus: 400, expectedEvents: none },
    { name: 'a using with a ; is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: { type: 'text', using: 'title; drop table todos' }, expectedStatus: 400, expectedContent: ['one SQL expression'], expectedEvents: none },
    { name: 'a using with a comment is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: { type: 'text', using: "title || 'x'--" }, expectedStatus: 400, expectedContent: ['one SQL expression'], expectedEvents: none },
    { name: 'a using whose $ is part of a name, not a dollar quote, is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: { type: 'text', using: 'a$b$, disable row level security, x $b$' }, expectedStatus: 400, expectedEvents: none },
    { name: 'a size PostgreSQL refuses (varchar(0)) is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'zerolen', columns: [{ name: 'a', type: 'varchar(0)' }] }, expectedStatus: 400, expectedContent: ['invalid_request', 'from 1 to 10485760'], expectedEvents: none },
    { name: 'a numeric scale above its precision is 400', method: 'POST', url: () => `${base()}/todos/columns`, headers: auth, body: { name: 'ratio', type: 'numeric(5,6)' }, expectedStatus: 400, expectedContent: ['from 0 to 5'], expectedEvents: none },
    { name: 'a numeric precision above 1000 is 400', method: 'PUT', url: () => `${base()}/todos/columns/title`, headers: auth, body: { type: 'numeric(1001)', using: 'title::numeric' }, expectedStatus: 400, expectedContent: ['from 1 to 1000'], expectedEvents: none },
    { name: 'adding a column with primaryKey is 400 (API.md\'s add-column body has none)', method: 'POST', url: () => `${base()}/todos/columns`, headers: auth, body: { name: 'code', type: 'text', primaryKey: true }, expectedStatus: 400, expectedContent: ['invalid_request', 'primaryKey'], expectedEvents: none },
    { name: 'a nullable primary key column is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'x5', columns: [{ name: 'code', type: 'text', primaryKey: true, nullable: true }] }, expectedStatus: 400, expectedContent: ['invalid_request', 'column \\"code\\" is in the primary key, which is never null'], expectedEvents: none },
    { name: 'a unique json column is 400 (json has no btree operator class)', method: 'POST', url: () => base(), headers: auth, body: { name: 'x6', columns: [{ name: 'doc', type: 'json', unique: true }] }, expectedStatus: 400, expectedContent: ['invalid_request', 'use jsonb'], expectedEvents: none },
    { name: 'a json primary key column is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'x7', columns: [{ name: 'doc', type: 'json', primaryKey: true }] }, expectedStatus: 400, expectedContent: ['invalid_request'], expectedEvents: none },
    { name: 'adding a unique json column is 400', method: 'POST', url: () => `${base()}/todos/columns`, headers: auth, body: { name: 'doc', type: 'json', unique: true }, expectedStatus: 400, expectedContent: ['invalid_request'], expectedEvents: none },
    { name: 'a default for an identity column is 400', method: 'PUT', url: () => `${base()}/todos/columns/id`, headers: auth, body: { default: 5 }, expectedStatus: 400, expectedContent: ['invalid_request', 'identity column'], expectedEvents: none },
    { name: 'dropping the default of an identity column is 400', method: 'PUT', url: () => `${base()}/todos/columns/id`, headers: auth, body: { default: null }, expectedStatus: 400, expectedContent: ['identity column'], expectedEvents: none },
    { name: 'a foreign key from text to int8 is 400 (PostgreSQL compares no such types)', method: 'POST', url: () => `${base()}/todos/foreign-keys`, headers: auth, body: { columns: ['title'], references: { table: 'todos', columns: ['id'] } }, expectedStatus: 400, expectedContent: ['invalid_request', 'cannot reference'], expectedEvents: none },
    { name: 'a foreign key referencing one column twice is 400', method: 'POST', url: () => `${base()}/todos/foreign-keys`, headers: auth, body: { columns: ['id', 'id'], references: { table: 'todos', columns: ['id', 'id'] } }, expectedStatus: 400, expectedContent: ['references column \\"id\\" twice'], expectedEvents: none },
    { name: '1600 columns and the automatic id is 400', method: 'POST', url: () => base(), headers: auth, body: { name: 'x8', access: 'private', columns: Array.from({ length: 1600 }, (_, i) => ({ name: `c${i}`, type: 'int4' })) }, expectedStatus: 400, expectedContent: ['at most 1600 columns', 'the automatic id'], expectedEvents: none },
    { name: 'a foreign key to an unknown column is 400', method: 'POST', url: () => `${base()}/todos/foreign-keys`, headers: auth, body: { columns: ['nope'], references: { table: 'notes', columns: ['id'] } }, expectedStatus: 400, expectedContent: ['unknown_column'], expectedEvents: none },
    { name: 'a foreign key to an unknown table is 404', method: 'POST', url: () => `${base()}/todos/foreign-keys`, headers: auth, body: { columns: ['id'], references: { table: 'nope', columns: ['id'] } }, expectedStatus: 404, expectedEvents: none },
    { name: 'dropping an unknown foreign key is 404', method: 'DELETE', url: () => `${base()}/todos/foreign-keys/nope`, headers: auth, expectedStatus: 404, expectedEvents: none },
    { name: 'the anon key is 403 service_key_required', method: 'GET', url: () => base(), headers: () => apikey(project.anonKey), expectedStatus: 403, expectedContent: ['service_key_required'] },
    { name: 'the anon key cannot create a table', method: 'POST', url: () => base(), headers: () => apikey(project.anonKey), body: { name: 'x3', columns: [] }, expectedStatus: 403, expectedEvents: none },
    { name: 'another team’s member gets 404', method: 'POST', url: () => base(), headers: () => bearer(bob.token), body: { name: 'x4', columns: [] }, expectedStatus: 404, expectedEvents: none },
    { name: 'the service key may list tables', method: 'GET', url: () => base(), headers: () => apikey(project.serviceKey), expectedStatus: 200, expectedContent: ['todos'] },
  ]);
});

describe('names and expressions refused before anything is recorded', () => {
  it('refuses with 409 a table name taken by a view, materialized view, sequence, index or type of public', async () => {
    await asOwner('create view stats as select 1 as n');
    await asOwner('create materialized view stats_cache as select 1 as n');
    await asOwner('create sequence counter');
    await asOwner('create index todos_title_idx on todos (title)');
    await asOwner(`create type mood as enum ('ok', 'not ok')`);
    for (const [name, kind] of [['stats', 'view'], ['stats_cache', 'materialized view'], ['counter', 'sequence'], ['todos_title_idx', 'index'], ['mood', 'type']]) {
      const before = await projectEventTypes(project.id);
      const answer = await call('POST', base(), { headers: auth(), body: { name, columns: [] } });
      expect(answer.status, answer.text).toBe(409);
      expect(answer.body).toEqual({ code: 'already_exists', message: `a ${kind} named "${name}" already exists`, details: null, hint: null });
      expect((await projectEventTypes(project.id)).slice(before.length)).toEqual([]);
    }
    // The array type PostgreSQL made along with "mood" moves out of the way of a table of its name.
    const array = await call('POST', base(), { headers: auth(), body: { name: '_mood', access: 'private', columns: [] } });
    expect(array.status, array.text).toBe(201);
  });

  it('refuses with 400 a "using" that carries a second ALTER TABLE action, records nothing and leaves RLS on', async () => {
    const guarded = await call('POST', base(), { headers: auth(), body: { name: 'guarded', access: 'private', columns: [{ name: 'n', type: 'text' }] } });
    expect(guarded.status, guarded.text).toBe(201);
    await asOwner(`insert into guarded (n) values ('')`);
    for (const using of ['n, disable row level security', "E'\\'', disable row level security, ''", '(n), disable row level security, (n)']) {
      const before = await projectEventTypes(project.id);
      const answer = await call('PUT', `${base()}/guarded/columns/n`, { headers: auth(), body: { type: 'text', using } });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('"using" must be one SQL expression'), details: null });
      expect((await projectEventTypes(project.id)).slice(before.length)).toEqual([]);
    }
    const rls = await tenant.client.query(`select relrowsecurity from pg_class where oid = 'public.guarded'::regclass`);
    expect(rls.rows[0].relrowsecurity).toBe(true);
    // A comma inside parentheses or a string is part of one expression, applied in parentheses of its own.
    const retyped = await call('PUT', `${base()}/guarded/columns/n`, { headers: auth(), body: { type: 'int4', using: "coalesce(nullif(n, ''), '0, or so')::int4" } });
    expect(retyped.status, retyped.text).toBe(422);
    expect(retyped.body.details.code).toBe('22P02');
    const cast = await call('PUT', `${base()}/guarded/columns/n`, { headers: auth(), body: { type: 'int4', using: "coalesce(nullif(n, ''), '0')::int4" } });
    expect(cast.status, cast.text).toBe(200);
    expect(cast.body).toMatchObject({ name: 'n', type: 'int4' });
  });
});

describe('columns on a table with data', () => {
  it('renames, changes type with using, and changes nullability and default', async () => {
    await call('POST', base(), { headers: auth(), body: { name: 'items', columns: [{ name: 'qty', type: 'text' }, { name: 'note', type: 'text' }] } });
    await asOwner(`insert into items (qty, note) values ('1', 'a'), ('22', null)`);
    const retyped = await call('PUT', `${base()}/items/columns/qty`, { headers: auth(), body: { type: 'int4', using: 'qty::integer', name: 'quantity', nullable: false, default: 0 } });
    expect(retyped.status, retyped.text).toBe(200);
    expect(retyped.body).toMatchObject({ name: 'quantity', type: 'int4', nullable: false, default: '0' });
    expect((await asOwner('select quantity from items order by id')).rows).toEqual([{ quantity: 1 }, { quantity: 22 }]);
    const dropped = await call('PUT', `${base()}/items/columns/quantity`, { headers: auth(), body: { default: null } });
    expect(dropped.body.default).toBeNull();
  });

  it('answers 422 apply_failed with PostgreSQL’s error and leaves the table as it was', async () => {
    const before = await projectEventTypes(project.id);
    const notNull = await call('POST', `${base()}/items/columns`, { headers: auth(), body: { name: 'required', type: 'text', nullable: false } });
    expect(notNull.status, notNull.text).toBe(422);
    expect(notNull.body).toMatchObject({ code: 'apply_failed', details: { code: '23502' } });
    expect(notNull.body.details.message).toMatch(/contains null values/);
    const columns = await call('GET', `${base()}/items/columns`, { headers: auth() });
    expect(columns.body.map((c: { name: string }) => c.name)).not.toContain('required');
    expect((await projectEventTypes(project.id)).slice(before.length)).toEqual(['ColumnAdded', 'SchemaChangeFailed']);
    const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: auth() });
    expect(operations.body.at(-1)).toMatchObject({ command: 'AddColumn', status: 'failed', error: { code: '23502' } });

    const cast = await call('PUT', `${base()}/items/columns/note`, { headers: auth(), body: { type: 'jsonb', using: 'note::jsonb' } });
    expect(cast.status).toBe(422);
    expect(cast.body.details.code).toMatch(/^22/);
    const note = (await call('GET', `${base()}/items/columns`, { headers: auth() })).body.find((c: { name: string }) => c.name === 'note');
    expect(note.type).toBe('text');
  });

  it('shows columns that SQL added, because reads come from the live catalog', async () => {
    await asOwner('alter table items add column added_by_sql int8');
    const columns = await call('GET', `${base()}/items/columns`, { headers: auth() });
    expect(columns.body.map((c: { name: string }) => c.name)).toContain('added_by_sql');
  });

  it('drops a column and a table', async () => {
    expect((await call('DELETE', `${base()}/items/columns/note`, { headers: auth() })).status).toBe(200);
    expect((await call('GET', `${base()}/items/columns`, { headers: auth() })).body.map((c: { name: string }) => c.name)).not.toContain('note');
    expect((await call('DELETE', `${base()}/items`, { headers: auth() })).status).toBe(200);
    expect((await tenant.client.query(`select to_regclass('public.items') as t`)).rows[0].t).toBeNull();
  });
});

describe('a drop recorded and not applied yet', () => {
  it('holds the table\'s name: a create of it is 409 and records nothing, and the drop, refused by a foreign key, leaves the table', async () => {
    expect((await call('POST', base(), { headers: auth(), body: { name: 'parents', columns: [{ name: 'label', type: 'text' }] } })).status).toBe(201);
    expect((await call('POST', base(), { headers: auth(), body: { name: 'children', columns: [{ name: 'parent_id', type: 'int8' }] } })).status).toBe(201);
    expect((await call('POST', `${base()}/children/foreign-keys`, { headers: auth(), body: { columns: ['parent_id'], references: { table: 'parents', columns: ['id'] } } })).status).toBe(201);
    const dropped = await whileAppliesWait(project.id, async () => {
      const accepted = await call('DELETE', `${base()}/parents`, { headers: { ...auth(), prefer: 'respond-async' } });
      expect(accepted.status, accepted.text).toBe(202);
      const before = await streamVersion(project.id);
      const created = await call('POST', base(), { headers: auth(), body: { name: 'parents', columns: [{ name: 'label', type: 'text' }] } });
      expect({ status: created.status, message: created.body.message }).toEqual({ status: 409, message: 'table "parents" is being dropped' });
      expect(await streamVersion(project.id)).toBe(before);
      return accepted;
    });
    const operation = `/api/projects/${project.id}/operations/${dropped.body.operation.id}`;
    await expect.poll(async () => (await call('GET', operation, { headers: auth() })).body.status, { timeout: 30_000 }).toBe('failed');
    expect((await call('GET', operation, { headers: auth() })).body.error).toMatchObject({ code: '2BP01' });
    expect((await tenant.client.query(`select to_regclass('public.parents') as t`)).rows[0].t).toBe('parents');
  });

  it('takes the foreign key of a column being dropped with it: dropping that key then is 404 and records nothing, and the drop applies', async () => {
    expect((await call('POST', base(), { headers: auth(), body: { name: 'racks', columns: [{ name: 'label', type: 'text' }] } })).status).toBe(201);
    expect((await call('POST', base(), { headers: auth(), body: { name: 'slots', columns: [{ name: 'rack_id', type: 'int8' }, { name: 'note', type: 'text' }] } })).status).toBe(201);
    expect((await call('POST', `${base()}/slots/foreign-keys`, { headers: auth(), body: { name: 'slots_rack', columns: ['rack_id'], references: { table: 'racks', columns: ['id'] } } })).status).toBe(201);
    const dropped = await whileAppliesWait(project.id, async () => {
      const accepted = await call('DELETE', `${base()}/slots/columns/rack_id`, { headers: { ...auth(), prefer: 'respond-async' } });
      expect(accepted.status, accepted.text).toBe(202);
      const before = await streamVersion(project.id);
      const fk = await call('DELETE', `${base()}/slots/foreign-keys/slots_rack`, { headers: { ...auth(), prefer: 'respond-async' } });
      expect({ status: fk.status, code: fk.body.code }, fk.text).toEqual({ status: 404, code: 'not_found' });
      expect(await streamVersion(project.id)).toBe(before);
      return accepted;
    });
    const operation = `/api/projects/${project.id}/operations/${dropped.body.operation.id}`;
    await expect.poll(async () => (await call('GET', operation, { headers: auth() })).body.status, { timeout: 30_000 }).toBe('succeeded');
    expect((await call('GET', `${base()}/slots/foreign-keys`, { headers: auth() })).body).toEqual([]);
  });

  it('takes the name of a unique column\'s index while the column is being added: a table of that name is 409 and records nothing', async () => {
    expect((await call('POST', base(), { headers: auth(), body: { name: 'badges', columns: [{ name: 'label', type: 'text' }] } })).status).toBe(201);
    const added = await whileAppliesWait(project.id, async () => {
      const accepted = await call('POST', `${base()}/badges/columns`, { headers: { ...auth(), prefer: 'respond-async' }, body: { name: 'code', type: 'text', unique: true } });
      expect(accepted.status, accepted.text).toBe(202);
      const before = await streamVersion(project.id);
      const created = await call('POST', base(), { headers: { ...auth(), prefer: 'respond-async' }, body: { name: 'badges_code_key', columns: [{ name: 'label', type: 'text' }] } });
      expect({ status: created.status, code: created.body.code }, created.text).toEqual({ status: 409, code: 'already_exists' });
      expect(await streamVersion(project.id)).toBe(before);
      return accepted;
    });
    const operation = `/api/projects/${project.id}/operations/${added.body.operation.id}`;
    await expect.poll(async () => (await call('GET', operation, { headers: auth() })).body.status, { timeout: 30_000 }).toBe('succeeded');
    expect((await tenant.client.query(`select to_regclass('public.badges_code_key') as i`)).rows[0].i).toBe('badges_code_key');
  });
});

describe('foreign keys', () => {
  it('adds, lists and drops a foreign key; one that rows violate is 422 and not added', async () => {
    await call('POST', base(), { headers: auth(), body: { name: 'authors', columns: [{ name: 'name', type: 'text' }] } });
    await call('POST', base(), { headers: auth(), body: { name: 'books', columns: [{ name: 'author_id', type: 'int8' }] } });
    await asOwner(`insert into books (author_id) values (42)`);
    const violated = await call('POST', `${base()}/books/foreign-keys`, { headers: auth(), body: { columns: ['author_id'], references: { table: 'authors', columns: ['id'] } } });
    expect(violated.status).toBe(422);
    expect(violated.body.details.code).toBe('23503');
    expect((await call('GET', `${base()}/books/foreign-keys`, { headers: auth() })).body).toEqual([]);

    await asOwner('delete from books');
    const added = await call('POST', `${base()}/books/foreign-keys`, { headers: auth(), body: { name: 'books_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] }, onDelete: 'cascade' } });
    expect(added.status, added.text).toBe(201);
    expect(added.body).toEqual({ name: 'books_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] }, onDelete: 'cascade', onUpdate: 'no action' });
    const taken = await call('POST', `${base()}/books/foreign-keys`, { headers: auth(), body: { name: 'books_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] } } });
    expect(taken.status).toBe(409);
    expect((await call('DELETE', `${base()}/books/foreign-keys/books_author`, { headers: auth() })).status).toBe(200);
    expect((await call('GET', `${base()}/books/foreign-keys`, { headers: auth() })).body).toEqual([]);
  });

  it('answers the key a request without a name added, not another key on the same columns', async () => {
    await call('POST', base(), { headers: auth(), body: { name: 'shelves', columns: [{ name: 'author_id', type: 'int8' }] } });
    // Named so that it sorts after the generated name: the one a match on columns would answer.
    const first = await call('POST', `${base()}/shelves/foreign-keys`, { headers: auth(), body: { name: 'zz_shelf_author', columns: ['author_id'], references: { table: 'authors', columns: ['id'] } } });
    expect(first.status, first.text).toBe(201);
    const unnamed = await call('POST', `${base()}/shelves/foreign-keys`, { headers: auth(), body: { columns: ['author_id'], references: { table: 'authors', columns: ['id'] }, onDelete: 'set null' } });
    expect(unnamed.status, unnamed.text).toBe(201);
    expect(unnamed.body).toEqual({ name: 'shelves_author_id_fkey', columns: ['author_id'], references: { table: 'authors', columns: ['id'] }, onDelete: 'set null', onUpdate: 'no action' });
    const listed = await call('GET', `${base()}/shelves/foreign-keys`, { headers: auth() });
    expect(listed.body.map((fk: { name: string }) => fk.name)).toEqual(['shelves_author_id_fkey', 'zz_shelf_author']);
  });
});

describe('concurrency', () => {
  it('takes 20 concurrent add-column commands on one table: each applied or cleanly refused, the stream gap-free', async () => {
    await call('POST', base(), { headers: auth(), body: { name: 'wide', columns: [] } });
    const failedBefore = (await projectEventTypes(project.id)).filter((t) => t === 'SchemaChangeFailed').length;
    const names = Array.from({ length: 20 }, (_, i) => `c${i % 15}`);
    const answers = await Promise.all(names.map((name) => call('POST', `${base()}/wide/columns`, { headers: auth(), body: { name, type: 'int4' } })));
    // A name taken by a column still being applied is taken: 409 and nothing recorded, never a recorded change that fails when applied.
    for (const answer of answers) expect([201, 409], answer.text).toContain(answer.status);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(15);
    expect((await projectEventTypes(project.id)).filter((t) => t === 'SchemaChangeFailed')).toHaveLength(failedBefore);
    const columns = await call('GET', `${base()}/wide/columns`, { headers: auth() });
    expect(columns.body.map((c: { name: string }) => c.name).sort()).toEqual(['id', ...new Set(names)].sort());
    const events = await call('GET', `/api/projects/${project.id}/events?limit=1000`, { headers: auth() });
    const versions = events.body.events.map((e: { version: number }) => e.version);
    expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
  });
});

describe('the catalog reader', () => {
  // Its three reads used to go out at once on one connection: pg 8 queues them but prints a DeprecationWarning
  // ("will be removed in pg@9.0") into npm start's output at a user's first table or rows call.
  it('sends one query at a time on its connection', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.message);
    process.on('warning', onWarning);
    try {
      const tables = await readCatalog(tenant.client as unknown as PoolClient, 'todos');
      expect(tables.map((t) => t.name)).toEqual(['todos']);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });
});

describe('connections', () => {
  it('gives the project\'s database back the connections a command used, seconds after it', async () => {
    const held = async () => (await tenant.client.query<{ by: string; n: number }>(
      `select application_name as by, count(*)::int as n from pg_stat_activity
       where datname = current_database() and application_name in ('baseplane-control-plane', 'baseplane-worker')
       group by application_name order by 1`,
    )).rows;
    const created = await call('POST', base(), { headers: auth(), body: { name: 'short_lived', columns: [{ name: 'note', type: 'text' }] } });
    expect(created.status, created.text).toBe(201);
    // The control plane read the catalog to decide the command; the workflow's worker applied it.
    expect((await held()).map((row) => row.by)).toEqual(['baseplane-control-plane', 'baseplane-worker']);
    // Both are given back after five idle seconds (they were kept 30 s, while other projects could be refused one).
    await expect.poll(held, { timeout: 12_000, interval: 250 }).toEqual([]);
  }, 20_000);
});
