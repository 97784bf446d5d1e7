/**
 * Shared set-up for the data API tests: a project with tables made through
 * the management API (authors ← posts ← comments, with foreign keys), rows
 * and functions made through the SQL console, and end users signed up.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, decodeJwt, importJWK, type JWTPayload } from 'jose';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { SecretBox } from '@baseplane/contracts';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

export interface RestProject {
  operator: Operator;
  project: ProjectAnswer;
  anon: Record<string, string>;
  service: Record<string, string>;
}

export async function restProject(name: string): Promise<RestProject> {
  const operator = await signUpOperator(name);
  const project = await createProject(operator, name);
  return { operator, project, anon: { apikey: project.anonKey }, service: { apikey: project.serviceKey } };
}

/** Creates a table through the management API (API.md → Tables). */
export async function createTable(p: RestProject, body: { name: string; access?: string; columns: Array<Record<string, unknown>> }): Promise<void> {
  const answer = await call('POST', `/api/projects/${p.project.id}/tables`, { headers: bearer(p.operator.token), body });
  expect(answer.status, answer.text).toBe(201);
}

export async function addForeignKey(p: RestProject, table: string, body: { name?: string; columns: string[]; references: { table: string; columns: string[] } }): Promise<void> {
  const answer = await call('POST', `/api/projects/${p.project.id}/tables/${table}/foreign-keys`, { headers: bearer(p.operator.token), body });
  expect(answer.status, answer.text).toBe(201);
}

/** Runs SQL through the console as the project owner. */
export async function sql(p: RestProject, query: string): Promise<any> {
  const answer = await call('POST', '/api/sql/execute', { headers: bearer(p.operator.token), body: { projectId: p.project.id, query } });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/** A table `name` of int4range spans anyone may read: 1 [1,3), 2 [5,9), 3 [10,12). */
export async function rangesTable(p: RestProject, name: string): Promise<void> {
  await sql(p, `
    create table ${name} (id int primary key, during int4range);
    create policy "read" on ${name} for select using (true);
    insert into ${name} values (1, '[1,3)'), (2, '[5,9)'), (3, '[10,12)');
  `);
}

/** Signs an end user up on the project; returns the access token and user id. */
export async function signUpUser(p: RestProject): Promise<{ token: string; id: string; email: string }> {
  const email = `user-${randomUUID()}@example.com`;
  const answer = await call('POST', '/rest/v1/auth/signup', { headers: p.anon, body: { email, password: 'correct horse battery' } });
  expect(answer.status, answer.text).toBe(201);
  return { token: answer.body.accessToken, id: answer.body.user.id, email };
}

/** authors ← posts ← comments, public-read, with rows and two functions. */
export async function blogSchema(p: RestProject): Promise<void> {
  await createTable(p, { name: 'authors', columns: [{ name: 'name', type: 'text', nullable: false }, { name: 'email', type: 'text', unique: true }] });
  await createTable(p, {
    name: 'posts',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'author_id', type: 'int8' },
      { name: 'published', type: 'bool', default: false },
      { name: 'score', type: 'int4' },
      { name: 'tags', type: 'text[]' },
      { name: 'meta', type: 'jsonb' },
    ],
  });
  await createTable(p, { name: 'comments', columns: [{ name: 'post_id', type: 'int8', nullable: false }, { name: 'body', type: 'text' }] });
  await addForeignKey(p, 'posts', { columns: ['author_id'], references: { table: 'authors', columns: ['id'] } });
  await addForeignKey(p, 'comments', { columns: ['post_id'], references: { table: 'posts', columns: ['id'] } });
  await sql(p, `
    insert into authors (id, name, email) overriding system value values (1, 'Ada', 'ada@example.com'), (2, 'Bob', 'bob@example.com'), (3, 'Cy', null);
    insert into posts (id, title, author_id, published, score, tags, meta) overriding system value values
      (1, 'Hello world', 1, true, 10, '{intro,hello}', '{"lang":"en"}'),
      (2, 'Second post', 1, false, null, '{misc}', null),
      (3, 'Bob writes', 2, true, 5, '{hello}', '{"lang":"fr"}'),
      (4, 'Orphan, with comma', null, true, 7, '{}', null);
    insert into comments (id, post_id, body) overriding system value values (1, 1, 'first!'), (2, 1, 'nice'), (3, 3, 'ok');
    select setval(pg_get_serial_sequence('authors', 'id'), 100), setval(pg_get_serial_sequence('posts', 'id'), 100), setval(pg_get_serial_sequence('comments', 'id'), 100);
  `);
  await sql(p, `
    create function add_numbers(a int, b int default 1) returns int language sql immutable as $$ select a + b $$;
    create function posts_by_author(author bigint) returns setof posts language sql stable as $$ select * from posts where author_id = author order by id $$;
    create function whoami() returns json language sql stable as $$ select json_build_object('uid', auth.uid(), 'role', auth.role(), 'email', auth.jwt() ->> 'email') $$;
    create function touch_nothing() returns void language sql as $$ select $$;
  `);
}

/** A deterministic spread of `values` for the `i`th fixture row (`salt` varies it per column), nulls among them. */
export function pick<T>(values: readonly T[], i: number, salt: number): T | null {
  const k = (i * 7 + salt * 13 + ((i * i) % 11)) % (values.length + 2);
  return k < values.length ? values[k]! : null;
}

/**
 * A value in an `in` list or a logic tree as a query string writes it:
 * double-quoted (backslash escapes) where PostgREST's syntax needs it (its
 * punctuation, braces, the empty string, spaces at an end), or when asked.
 */
export function listValue(value: string, quote: boolean): string {
  const needs = value === '' || /[,()"\\{}]/.test(value) || value.trim() !== value;
  return needs || quote ? `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : value;
}

/**
 * `token`'s claims changed by `changes` (an `undefined` drops a claim),
 * signed with the project's newest key, opened from its `SigningKeyIssued`
 * event with PLATFORM_SECRET as the data plane opens it: a token only the
 * platform could have made.
 */
export async function resignToken(p: RestProject, token: string, changes: JWTPayload | Record<string, unknown>): Promise<string> {
  const db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  try {
    const { rows } = await db.query(`select data from events where stream_id = $1 and type = 'SigningKeyIssued' order by stream_version desc limit 1`, [`project-${p.project.id}`]);
    const key = rows[0].data.key as { kid: string; privateJwkCipher: string };
    const privateKey = await importJWK(JSON.parse(new SecretBox(inject('platformSecret')).open(key.privateJwkCipher)), 'ES256');
    return await new SignJWT({ ...decodeJwt(token), ...changes }).setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'JWT' }).sign(privateKey);
  } finally {
    await db.end();
  }
}
