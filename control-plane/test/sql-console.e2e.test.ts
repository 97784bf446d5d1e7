/**
 * The SQL console end to end: results of the last statement with column
 * types, the row cap and the statement timeout; one transaction per call;
 * DDL captured by the tenant's event triggers and recorded as a
 * `SqlDdlRecorded` event; who may call; and that the owner role cannot
 * escape its project's database.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { deriveSecret, ownerPasswordPurpose, tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { apikey, bearer, call, createProject, scenarios, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { EventStore } from '../src/event-store/event-store';
import { SqlConsole } from '../src/sql/sql-console';
import { TenantConnections } from '../src/tenants/tenant-connections';

let ada: Operator;
let bob: Operator;
let project: ProjectAnswer;
let bobsProject: ProjectAnswer;
let tenant: pg.Client;

const URL_ = '/api/sql/execute';
const sql = (query: string, headers: Record<string, string> = bearer(ada.token), projectId = project.id) =>
  call('POST', URL_, { headers, body: { projectId, query } });
const auth = () => bearer(ada.token);
const noEvents = { projectId: () => project.id, types: [] };
const ddlEvent = { projectId: () => project.id, types: ['SqlDdlRecorded'] };

const tableExists = async (name: string) => (await tenant.query('select to_regclass($1) is not null as present', [`public.${name}`])).rows[0].present as boolean;

/** A connection as project `owner`'s role (its derived password) to project `database`'s database. */
/** Runs `use` with a console of its own on the stack's databases, under `limits` smaller than the stack's (tests stay light and short). */
async function withOwnConsole(limits: ConstructorParameters<typeof SqlConsole>[2], use: (console_: SqlConsole) => Promise<void>): Promise<void> {
  const tenants = new TenantConnections(inject('tenantDatabaseUrl'), inject('platformSecret'));
  const platform = new pg.Pool({ connectionString: inject('databaseUrl'), max: 1 });
  try {
    await use(new SqlConsole(tenants, new EventStore(platform), limits));
  } finally {
    await tenants.closeAll();
    await platform.end();
  }
}

function ownerClient(owner: string, database: string): pg.Client {
  const url = new URL(inject('tenantDatabaseUrl'));
  url.username = tenantOwnerRole(owner);
  url.password = deriveSecret(inject('platformSecret'), ownerPasswordPurpose(owner));
  url.pathname = `/${tenantDatabaseName(database)}`;
  return new pg.Client({ connectionString: url.toString() });
}

beforeAll(async () => {
  [ada, bob] = await Promise.all([signUpOperator('Ada'), signUpOperator('Bob')]);
  [project, bobsProject] = await Promise.all([createProject(ada, 'sql app'), createProject(bob, 'bob sql app')]);
  const url = new URL(inject('tenantDatabaseUrl'));
  url.pathname = `/${tenantDatabaseName(project.id)}`;
  tenant = new pg.Client({ connectionString: url.toString() });
  await tenant.connect();
});
afterAll(async () => {
  await tenant?.end();
});

describe('results', () => {
  it('answers the columns with their types, the rows and the row count', async () => {
    const answer = await sql(`select 1 as one, 'x'::varchar(20) as label, 2.50::numeric(10,2) as price, 9007199254740993::int8 as big,
      '2024-01-02 03:04:05.123456+00'::timestamptz as at, '2024-01-02'::date as day, '{"a":1}'::jsonb as doc, array[1,2] as list, null::text as nothing`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({
      columns: [
        { name: 'one', dataType: 'integer' },
        { name: 'label', dataType: 'character varying(20)' },
        { name: 'price', dataType: 'numeric(10,2)' },
        { name: 'big', dataType: 'bigint' },
        { name: 'at', dataType: 'timestamp with time zone' },
        { name: 'day', dataType: 'date' },
        { name: 'doc', dataType: 'jsonb' },
        { name: 'list', dataType: 'integer[]' },
        { name: 'nothing', dataType: 'text' },
      ],
      rows: [{ one: 1, label: 'x', price: '2.50', big: '9007199254740993', at: '2024-01-02 03:04:05.123456+00', day: '2024-01-02', doc: { a: 1 }, list: [1, 2], nothing: null }],
      rowCount: 1,
      duration: expect.any(Number),
      truncated: false,
    });
    expect(answer.body.duration).toBeGreaterThanOrEqual(0);
  });

  it('answers NaN and infinite floats as PostgreSQL writes them, not as null', async () => {
    const answer = await sql(`select 'NaN'::float8 as nan, '-Infinity'::float4 as low, 1.5::float8 as finite, array['Infinity'::float8, 2, null] as list, null::float8 as nothing`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.rows).toEqual([{ nan: 'NaN', low: '-Infinity', finite: 1.5, list: ['Infinity', 2, null], nothing: null }]);
  });

  it('answers json and jsonb nested deeper than JSON.stringify goes, as PostgreSQL writes them, and a write returning one is answered, not refused after its commit', async () => {
    const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const answer = await sql(`select (repeat('[',6000)||repeat(']',6000))::jsonb as j, (repeat('{"a":',6000)||'1'||repeat('}',6000))::json as o,
      array[(repeat('[',6000)||repeat(']',6000))::jsonb, null, '{"k": 1.50}'] as list, '{"n": 12345678901234567890}'::jsonb as exact`);
    expect(answer.status, answer.text.slice(0, 300)).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.body.columns).toEqual([{ name: 'j', dataType: 'jsonb' }, { name: 'o', dataType: 'json' }, { name: 'list', dataType: 'jsonb[]' }, { name: 'exact', dataType: 'jsonb' }]);
    expect(answer.text).toContain(`"j":${deep(6000)}`);
    expect(answer.text).toContain(`"o":${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`);
    expect(answer.text).toContain(`"list":[${deep(6000)},null,{"k": 1.50}]`);
    // A number's digits as PostgreSQL keeps them, as the rows API answers them.
    expect(answer.text).toContain('"exact":{"n": 12345678901234567890}');

    await sql('create table deep_docs (id int primary key, doc jsonb)');
    const inserted = await sql(`insert into deep_docs values (1, (repeat('[',6000)||repeat(']',6000))::jsonb) returning id, doc`);
    expect(inserted.status, inserted.text.slice(0, 300)).toBe(200);
    expect(inserted.body).toMatchObject({ rows: [{ id: 1 }], rowCount: 1 });
    expect(inserted.text).toContain(`"doc":${deep(6000)}`);
    expect((await tenant.query('select count(*)::int as n from deep_docs')).rows[0].n).toBe(1);
  });

  it('answers the last statement of several', async () => {
    const answer = await sql(`create temporary table scratch (n int); insert into scratch values (1), (2), (3); select n, n * 10 as tenfold from scratch order by n desc`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ columns: [{ name: 'n', dataType: 'integer' }, { name: 'tenfold', dataType: 'integer' }], rows: [{ n: 3, tenfold: 30 }, { n: 2, tenfold: 20 }, { n: 1, tenfold: 10 }], rowCount: 3 });
  });

  it('answers a statement without rows with no columns and the rows it affected', async () => {
    await sql('create table counted (n int)');
    const answer = await sql('insert into counted select generate_series(1, 4)');
    expect(answer.body).toMatchObject({ columns: [], rows: [], rowCount: 4, truncated: false });
    expect((await sql('select 1; update counted set n = n + 1')).body).toMatchObject({ columns: [], rows: [], rowCount: 4 });
  });

  it('knows the project’s own types', async () => {
    const answer = await sql(`create type mood as enum ('ok', 'sad'); select 'ok'::mood as feeling`);
    expect(answer.body).toMatchObject({ columns: [{ name: 'feeling', dataType: 'mood' }], rows: [{ feeling: 'ok' }] });
  });

  it('cuts the rows at 10,000 and says so, for one statement and for the last of several', async () => {
    for (const query of ['select g from generate_series(1, 10001) g', 'select 1; select g from generate_series(1, 25000) g']) {
      const answer = await sql(query);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.rows).toHaveLength(10_000);
      expect(answer.body.rows[9_999]).toEqual({ g: 10_000 });
      expect(answer.body).toMatchObject({ rowCount: 10_000, truncated: true });
    }
    expect((await sql('select g from generate_series(1, 10000) g')).body).toMatchObject({ rowCount: 10_000, truncated: false });
  });
});

describe('huge results', () => {
  it('cuts the rows at the byte cap as well, for one statement and for the last of several, and says so', async () => {
    // The stack's cap is 64 MB; a console of its own with 1 MB keeps the test light.
    await withOwnConsole({ statementTimeoutMs: 60_000, rowCap: 10_000, resultBytes: 1_000_000 }, async (console_) => {
      for (const query of ["select g, repeat('x', 100000) as pad from generate_series(1, 50) g", "select 1; select g, repeat('x', 100000) as pad from generate_series(1, 50) g"]) {
        const answer = await console_.execute(project.id, query, 'operator:test');
        expect(answer.rows.map((row) => row.g)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(answer).toMatchObject({ rowCount: 9, truncated: true });
      }
      const small = await console_.execute(project.id, "select g, repeat('x', 1000) as pad from generate_series(1, 50) g", 'operator:test');
      expect(small).toMatchObject({ rowCount: 50, truncated: false });
    });
  });
});

describe('transactions and errors', () => {
  it('runs the query in one transaction: a failing statement leaves nothing behind', async () => {
    const answer = await sql('create table a (id int primary key); insert into a values (1); select 1/0');
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: '22012', message: 'division by zero', details: expect.objectContaining({ detail: null, position: null }), hint: null });
    expect(await tableExists('a')).toBe(false);
  });

  it('passes a SQL error through with its SQLSTATE, position and hint, and none of our SQL', async () => {
    const answer = await sql('select * from nowhere');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: '42P01', message: 'relation "nowhere" does not exist', details: { position: 15 } });
    const hinted = await sql('select lenght(1)');
    expect(hinted.body).toMatchObject({ code: '42883', details: { position: 8 }, hint: expect.stringContaining('No function matches') });
    for (const text of [answer.text, hinted.text]) {
      expect(text).not.toMatch(/baseplane_meta|statement_timeout|pg_snapshot|stack|\bat \w+ \(/);
    }
  });

  it('stops a statement at its timeout with SQLSTATE 57014', async () => {
    const answer = await sql('set local statement_timeout = 100; select pg_sleep(1)');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: '57014', message: 'canceling statement due to statement timeout' });
  });

  it('stops a query that lifted its own statement timeout soon after the limit, with SQLSTATE 57014', async () => {
    // The stack's console allows 60 s; a console of its own with 300 ms keeps the test short.
    await withOwnConsole({ statementTimeoutMs: 300, rowCap: 10, resultBytes: 1_000_000 }, async (console_) => {
      for (const query of ['set statement_timeout = 0; select pg_sleep(20)', "select set_config('statement_timeout', '0', false); select pg_sleep(20)"]) {
        const started = Date.now();
        const error = await console_.execute(project.id, query, 'operator:test').then(() => null, (e: unknown) => e);
        expect(error).toMatchObject({ status: 400, code: '57014', message: 'canceling statement due to statement timeout' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      const sleepers = await tenant.query(`select count(*)::int as n from pg_stat_activity where query like '%pg_sleep(20)%' and state = 'active' and pid <> pg_backend_pid()`);
      expect(sleepers.rows[0].n).toBe(0);
    });
  });

  it('answers a query that made its transaction or the session read-only, and records the DDL it committed before', async () => {
    const readOnly = await sql('set transaction read only; select 1 as one');
    expect(readOnly.status, readOnly.text).toBe(200);
    expect(readOnly.body.rows).toEqual([{ one: 1 }]);

    const answer = await sql('begin; create table kept_read_only (id int); commit; set default_transaction_read_only = on; select 2 as two');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.rows).toEqual([{ two: 2 }]);
    expect(await tableExists('kept_read_only')).toBe(true);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    expect(events.body.events.at(-1)).toMatchObject({ type: 'SqlDdlRecorded', data: { commands: [{ commandTag: 'CREATE TABLE', objectIdentity: 'public.kept_read_only' }] } });
  });

  it('does not carry one call’s session settings into the next', async () => {
    await sql(`set statement_timeout = 1; set search_path = nowhere`);
    const answer = await sql('select 1 as fine');
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.rows).toEqual([{ fine: 1 }]);
  });
});

describe('DDL in the history', () => {
  it('records DDL as SqlDdlRecorded, with the statement, its commands and the caller', async () => {
    const query = 'create table notes (id int8 generated by default as identity primary key, body text); create index notes_body on notes (body)';
    const answer = await sql(query);
    expect(answer.status, answer.text).toBe(200);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    const recorded = events.body.events.filter((e: { type: string }) => e.type === 'SqlDdlRecorded').at(-1);
    expect(recorded).toMatchObject({
      type: 'SqlDdlRecorded',
      data: { projectId: project.id, statement: query },
      metadata: { actor: `operator:${ada.accountId}`, correlationId: expect.any(String), causationId: null },
    });
    expect(recorded.data.commands).toEqual(expect.arrayContaining([
      { commandTag: 'CREATE TABLE', objectType: 'table', objectIdentity: 'public.notes' },
      { commandTag: 'CREATE INDEX', objectType: 'index', objectIdentity: 'public.notes_body' },
    ]));
    await expect.poll(async () => {
      const operations = await call('GET', `/api/projects/${project.id}/operations`, { headers: auth() });
      return operations.body.find((o: { id: string }) => o.id === recorded.metadata.correlationId);
    }, { timeout: 10_000 }).toMatchObject({ command: 'ExecuteSql', status: 'succeeded' });
  });

  it('enables RLS, with no policies, on a table created through SQL', async () => {
    await sql('create table open_secrets (id int)');
    const { rows } = await tenant.query(
      `select c.relrowsecurity, (select count(*)::int from pg_policy p where p.polrelid = c.oid) as policies from pg_class c where c.oid = 'public.open_secrets'::regclass`,
    );
    expect(rows[0]).toEqual({ relrowsecurity: true, policies: 0 });
  });

  it('records DDL that a COMMIT inside the query made permanent, even when a later statement fails', async () => {
    const answer = await sql('begin; create table kept (id int); commit; create table lost (id int); select 1/0');
    expect(answer.status).toBe(400);
    expect(await tableExists('kept')).toBe(true);
    expect(await tableExists('lost')).toBe(false);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    expect(events.body.events.at(-1)).toMatchObject({ type: 'SqlDdlRecorded', data: { commands: [{ commandTag: 'CREATE TABLE', objectIdentity: 'public.kept' }] } });
  });

  it('leaves what the workflow applies to the workflow’s own events', async () => {
    const created = await call('POST', `/api/projects/${project.id}/tables`, { headers: auth(), body: { name: 'managed', columns: [{ name: 'title', type: 'text' }], access: 'private' } });
    expect(created.status, created.text).toBe(201);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    expect(events.body.events.slice(-2).map((e: { type: string }) => e.type)).toEqual(['TableCreated', 'SchemaChangeApplied']);
  });

  it('leaves no captured rows behind in the tenant', async () => {
    expect((await tenant.query('select count(*)::int as n from baseplane_meta.ddl_log')).rows[0].n).toBe(0);
  });

  scenarios([
    { name: 'DROP TABLE is recorded', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'create table doomed (id int); drop table doomed' }, expectedStatus: 200, expectedEvents: ddlEvent },
    { name: 'a statement that refuses a transaction block runs on its own, and is recorded', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'create index concurrently counted_n on counted (n)' }, expectedStatus: 200, expectedEvents: ddlEvent },
    { name: 'a query without DDL records nothing', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'select * from notes' }, expectedStatus: 200, expectedEvents: noEvents },
    { name: 'DDL on temporary objects records nothing', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'create temp table t (x int)' }, expectedStatus: 200, expectedEvents: noEvents },
    { name: 'a failed query records nothing', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'create table b (id int); select 1/0' }, expectedStatus: 400, expectedContent: ['"22012"'], expectedEvents: noEvents },
    { name: 'claiming to be the workflow does not hide DDL', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: `set baseplane.source = 'workflow'; create table sneaky (id int)` }, expectedStatus: 200, expectedEvents: ddlEvent },
    { name: 'the query cannot take the DDL log itself', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: `create table hidden (id int); select * from baseplane_meta.take_ddl_log('0', gen_random_uuid(), 'someone')` }, expectedStatus: 400, expectedContent: ['"42501"'], expectedEvents: noEvents },
    { name: 'the query cannot remove DDL waiting to be recorded', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: `select baseplane_meta.ack_ddl_log(gen_random_uuid())` }, expectedStatus: 400, expectedContent: ['"42501"'], expectedEvents: noEvents },
  ]);

  it('gave the table created by a self-proclaimed workflow RLS as well', async () => {
    expect((await tenant.query(`select relrowsecurity from pg_class where oid = 'public.sneaky'::regclass`)).rows[0].relrowsecurity).toBe(true);
  });
});

describe('DDL whose event the platform database could not take', () => {
  let platform: pg.Client;
  /** The platform database refuses this project's SqlDdlRecorded events while `refusing` (a trigger, as a failing disk would). */
  const refuseDdlEvents = (refusing: boolean) => platform.query(refusing
    ? `create or replace function test_refuse_ddl_events() returns trigger language plpgsql as $$
         begin
           if new.type = 'SqlDdlRecorded' and new.stream_id like '%' || ${pg.escapeLiteral(project.id)} then raise exception 'the platform database refuses (test)'; end if;
           return new;
         end $$;
       create or replace trigger test_refuse_ddl_events before insert on events for each row execute function test_refuse_ddl_events()`
    : 'drop trigger if exists test_refuse_ddl_events on events; drop function if exists test_refuse_ddl_events()');
  const ddlEvents = async () => {
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    return (events.body.events as Array<{ type: string; data: { commands: Array<{ objectIdentity: string }> }; metadata: { actor: string; correlationId: string } }>)
      .filter((event) => event.type === 'SqlDdlRecorded');
  };
  const recordedFor = async (table: string) => (await ddlEvents()).filter((event) => event.data.commands.some((c) => c.objectIdentity === `public.${table}`));
  const pending = async () => (await tenant.query('select count(*)::int as n from baseplane_meta.ddl_log')).rows[0].n as number;

  beforeAll(async () => {
    platform = new pg.Client({ connectionString: inject('databaseUrl') });
    await platform.connect();
  });
  afterAll(async () => {
    await refuseDdlEvents(false);
    await platform?.end();
  });

  it('keeps it in the tenant\'s log, answers the query, and records it once, before the next call\'s DDL', async () => {
    await refuseDdlEvents(true);
    try {
      const answer = await sql('create table outboxed (id int)');
      expect(answer.status, answer.text).toBe(200);
      expect(await tableExists('outboxed')).toBe(true);
      expect(await recordedFor('outboxed')).toEqual([]);
      expect(await pending()).toBeGreaterThan(0);
      // While it cannot be recorded, no further query runs: the history would lose the order the DDL ran in.
      const held = await sql('create table behind_outboxed (id int)');
      expect(held.status, held.text).toBe(503);
      expect(held.body.code).toBe('project_unavailable');
      expect(await tableExists('behind_outboxed')).toBe(false);
    } finally {
      await refuseDdlEvents(false);
    }
    expect((await sql('create table after_outboxed (id int)')).status).toBe(200);
    const [kept] = await recordedFor('outboxed');
    expect(await recordedFor('outboxed')).toHaveLength(1);
    expect(kept).toMatchObject({ data: { statement: 'create table outboxed (id int)' }, metadata: { actor: `operator:${ada.accountId}` } });
    const order = (await ddlEvents()).map((event) => event.metadata.correlationId);
    expect(order.indexOf(kept!.metadata.correlationId)).toBeLessThan(order.indexOf((await recordedFor('after_outboxed'))[0]!.metadata.correlationId));
    expect(await pending()).toBe(0);
  });

  it('goes into the history before a schema or bucket command, which waits for it: 503 while it cannot, then recorded after it', async () => {
    const columns = `/api/projects/${project.id}/tables/under_command/columns`;
    await refuseDdlEvents(true);
    try {
      expect((await sql('create table under_command (id int primary key)')).status).toBe(200);
      // The column's event would come before the DDL that made its table: a replay would alter a table not made yet.
      const held = await call('POST', columns, { headers: auth(), body: { name: 'c', type: 'text' } });
      expect({ status: held.status, code: held.body.code }).toEqual({ status: 503, code: 'project_unavailable' });
      const bucket = await call('POST', `/api/projects/${project.id}/storage/buckets`, { headers: auth(), body: { name: 'behind-ddl' } });
      expect(bucket.status, bucket.text).toBe(503);
    } finally {
      await refuseDdlEvents(false);
    }
    const added = await call('POST', columns, { headers: auth(), body: { name: 'c', type: 'text' } });
    expect(added.status, added.text).toBe(201);
    const events = (await call('GET', `/api/projects/${project.id}/events`, { headers: auth() })).body.events as Array<{ type: string; data: { table?: string; commands?: Array<{ objectIdentity: string }> } }>;
    const made = events.findIndex((e) => e.type === 'SqlDdlRecorded' && e.data.commands!.some((c) => c.objectIdentity === 'public.under_command'));
    const altered = events.findIndex((e) => e.type === 'ColumnAdded' && e.data.table === 'under_command');
    expect(made).toBeGreaterThanOrEqual(0);
    expect(made).toBeLessThan(altered);
  });

  it('records it once the platform database takes it again, with no further call', async () => {
    await refuseDdlEvents(true);
    try {
      expect((await sql('create table retried (id int)')).status).toBe(200);
      expect(await recordedFor('retried')).toEqual([]);
    } finally {
      await refuseDdlEvents(false);
    }
    await expect.poll(async () => (await recordedFor('retried')).length, { timeout: 10_000, interval: 200 }).toBe(1);
    await expect.poll(pending, { timeout: 5_000 }).toBe(0);
  });

  it('records a batch once when it is in the history already and still in the tenant\'s log (a stop between the two)', async () => {
    expect((await sql('create table twice (id int)')).status).toBe(200);
    const [event] = await recordedFor('twice');
    await tenant.query(
      `insert into baseplane_meta.ddl_log (command_tag, object_type, object_identity, statement, batch, actor)
       values ('CREATE TABLE', 'table', 'public.twice', 'create table twice (id int)', $1, $2)`,
      [event!.metadata.correlationId, event!.metadata.actor],
    );
    expect((await sql('select 1')).status).toBe(200);
    expect(await recordedFor('twice')).toHaveLength(1);
    expect(await pending()).toBe(0);
  });
});

describe('who may call', () => {
  const body = (query = 'select 1 as ok') => ({ get projectId() { return project.id; }, query });
  scenarios([
    { name: 'a member of the project’s team', method: 'POST', url: URL_, headers: auth, body: body(), expectedStatus: 200, expectedContent: ['"ok":1'] },
    { name: 'the project’s service key', method: 'POST', url: URL_, headers: () => apikey(project.serviceKey), body: body(), expectedStatus: 200, expectedContent: ['"ok":1'] },
    { name: 'the anon key is 403 service_key_required', method: 'POST', url: URL_, headers: () => apikey(project.anonKey), body: body(), expectedStatus: 403, expectedContent: ['service_key_required'] },
    { name: 'another team’s member is told 404', method: 'POST', url: URL_, headers: () => bearer(bob.token), body: body(), expectedStatus: 404, expectedContent: ['not_found'] },
    { name: 'another project’s service key is 401', method: 'POST', url: URL_, headers: () => apikey(bobsProject.serviceKey), body: body(), expectedStatus: 401, expectedContent: ['invalid_api_key'] },
    { name: 'no credentials is 401', method: 'POST', url: URL_, body: body(), expectedStatus: 401 },
    { name: 'an unknown project is 404', method: 'POST', url: URL_, headers: auth, body: { projectId: '00000000-0000-4000-8000-000000000000', query: 'select 1' }, expectedStatus: 404, expectedContent: ['not_found'] },
    { name: 'a malformed project id is 400', method: 'POST', url: URL_, headers: auth, body: { projectId: 'nope', query: 'select 1' }, expectedStatus: 400, expectedContent: ['invalid_request'] },
    { name: 'an empty query is 400', method: 'POST', url: URL_, headers: auth, body: body(''), expectedStatus: 400, expectedContent: ['invalid_request'] },
    { name: 'an unknown field is 400', method: 'POST', url: URL_, headers: auth, body: { get projectId() { return project.id; }, query: 'select 1', role: 'postgres' }, expectedStatus: 400, expectedContent: ['invalid_request'] },
  ]);

  it('the service key’s DDL is recorded with the service key as actor', async () => {
    const answer = await sql('create table by_key (id int)', apikey(project.serviceKey));
    expect(answer.status, answer.text).toBe(200);
    const events = await call('GET', `/api/projects/${project.id}/events`, { headers: auth() });
    expect(events.body.events.at(-1)).toMatchObject({ type: 'SqlDdlRecorded', metadata: { actor: `service-key:${project.id}` } });
  });

  it('a project that is not active is 503 project_unavailable', async () => {
    const gone = await createProject(ada, 'short-lived');
    expect((await call('DELETE', `/api/projects/${gone.id}`, { headers: auth() })).status).toBe(200);
    const answer = await sql('select 1', auth(), gone.id);
    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe('project_unavailable');
  });
});

describe('the owner role stays in its project', () => {
  const refused = (name: string, query: string | (() => string), code = '42501') => ({
    name,
    method: 'POST',
    url: URL_,
    headers: auth,
    body: { get projectId() { return project.id; }, get query() { return typeof query === 'function' ? query() : query; } },
    expectedStatus: 400,
    expectedContent: [`"code":"${code}"`],
    expectedEvents: noEvents,
  });
  const superuser = () => new URL(inject('tenantDatabaseUrl')).username;
  scenarios([
    refused('create role', 'create role intruder login superuser'),
    refused('alter its own role into a superuser', () => `alter role ${tenantOwnerRole(project.id)} superuser`),
    refused('copy to a program', `copy (select 1) to program 'id'`),
    refused('copy from a program', `create table victim (line text); copy victim from program 'id'`),
    refused('copy to a server file', `copy (select 1) to '/tmp/baseplane-escape'`),
    refused('read a server file', `select pg_read_file('/etc/passwd')`),
    refused('alter system', `alter system set work_mem = '1MB'`),
    refused('read pg_authid', 'select * from pg_authid'),
    refused('set role to the superuser', () => `set role ${superuser()}`),
    refused('set session authorization', () => `set session authorization ${superuser()}`),
    refused('create an untrusted extension', 'create extension dblink'),
    refused('create a C function', `create function escape() returns int language c as 'libc', 'getpid'`),
    refused('drop the DDL capture', 'drop event trigger baseplane_capture_ddl_commands'),
    refused('read the DDL log', 'select * from baseplane_meta.ddl_log'),
  ]);

  it('connects to its own database with its credentials', async () => {
    const own = ownerClient(project.id, project.id);
    await own.connect();
    try {
      expect((await own.query('select current_user as who')).rows[0].who).toBe(tenantOwnerRole(project.id));
    } finally {
      await own.end();
    }
  });

  it('cannot connect to another project’s database with them', async () => {
    const intruder = ownerClient(project.id, bobsProject.id);
    const error = await intruder.connect().then(() => null, (e: { code?: string; message?: string }) => e);
    await intruder.end().catch(() => undefined);
    expect(error).toMatchObject({ code: '42501', message: expect.stringContaining('permission denied for database') });
  });
});
