/**
 * Who may see and change what through the data API: the role each key and
 * token maps to, tokens refused with 401 and never taken as anon, RLS presets
 * (owner, public-read, private) for two users and anon, and SQL-injection
 * attempts at every place a name or a value enters.
 */
import { generateKeyPair, decodeJwt, SignJWT, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../deploy/test/http';
import { blogSchema, createTable, resignToken, restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let other: RestProject;
let ada: { token: string; id: string; email: string };
let bob: { token: string; id: string; email: string };
let stranger: { token: string; id: string; email: string };

const rest = (method: string, path: string, headers: Record<string, string>, body?: unknown) => call(method, `/rest/v1/${path}`, { headers, body });
const as = (user: { token: string }) => ({ ...p.anon, authorization: `Bearer ${user.token}` });

beforeAll(async () => {
  [p, other] = await Promise.all([restProject('rest security'), restProject('rest security other')]);
  await blogSchema(p);
  await createTable(p, { name: 'notes', access: 'owner', columns: [{ name: 'body', type: 'text' }] });
  await createTable(p, { name: 'secrets', access: 'private', columns: [{ name: 'body', type: 'text' }] });
  await createTable(p, { name: 'board', access: 'authenticated', columns: [{ name: 'body', type: 'text' }] });
  [ada, bob, stranger] = await Promise.all([signUpUser(p), signUpUser(p), signUpUser(other)]);
});

describe('roles', () => {
  it('maps the anon key to anon, a user token to authenticated with its claims, the service key to service_role', async () => {
    expect((await rest('POST', 'rpc/whoami', p.anon, {})).body).toEqual({ uid: null, role: 'anon', email: null });
    expect((await rest('POST', 'rpc/whoami', as(ada), {})).body).toEqual({ uid: ada.id, role: 'authenticated', email: ada.email });
    expect((await rest('POST', 'rpc/whoami', p.service, {})).body).toMatchObject({ role: 'service_role' });
  });

  it('sets request.jwt.claims to a JSON object for every caller, the role alone without a token (as PostgREST)', async () => {
    await sql(p, `
      create function my_claims() returns jsonb language sql stable as $$ select current_setting('request.jwt.claims', true)::jsonb $$;
      create function my_sub() returns text language sql stable as $$ select current_setting('request.jwt.claims', true)::jsonb ->> 'sub' $$;
    `);
    const anon = await rest('POST', 'rpc/my_claims', p.anon, {});
    expect(anon.status, anon.text).toBe(200);
    expect(anon.body).toEqual({ role: 'anon' });
    expect((await rest('POST', 'rpc/my_claims', { ...p.anon, authorization: `Bearer ${p.project.anonKey}` }, {})).body).toEqual({ role: 'anon' });
    expect((await rest('POST', 'rpc/my_claims', p.service, {})).body).toEqual({ role: 'service_role' });
    expect((await rest('POST', 'rpc/my_claims', as(ada), {})).body).toMatchObject({ role: 'authenticated', sub: ada.id });
    const sub = await rest('POST', 'rpc/my_sub', p.anon, {});
    expect(sub.status, sub.text).toBe(200);
    expect(sub.body).toBeNull();
    expect((await rest('POST', 'rpc/my_sub', as(ada), {})).body).toBe(ada.id);
  });

  it('sets request.method, request.path, request.headers (all but Cookie, by lower-case name) and request.cookies, as PostgREST', async () => {
    await sql(p, `
      create function my_request() returns json language sql stable as $$ select json_build_object(
        'method', current_setting('request.method', true), 'path', current_setting('request.path', true),
        'headers', current_setting('request.headers', true)::json, 'cookies', current_setting('request.cookies', true)::json) $$;
    `);
    const withCookies = { ...as(ada), 'user-agent': 'guc-test/1', 'X-Tenant': 'acme', cookie: 'sid=abc; theme=dark' };
    const post = await rest('POST', 'rpc/my_request', withCookies, {});
    expect(post.status, post.text).toBe(200);
    expect(post.body).toMatchObject({ method: 'POST', path: '/rpc/my_request', cookies: { sid: 'abc', theme: 'dark' } });
    // The caller's own credentials are theirs to read back, as PostgREST passes them; the gateway's X-Forwarded-For names the client.
    expect(post.body.headers).toMatchObject({ 'user-agent': 'guc-test/1', 'x-tenant': 'acme', apikey: p.anon.apikey, authorization: `Bearer ${ada.token}`, 'x-forwarded-for': expect.any(String) });
    expect(post.body.headers).not.toHaveProperty('cookie');
    expect(Object.keys(post.body.headers).filter((name) => name !== name.toLowerCase())).toEqual([]);
    // Each request's own: none of the last one's cookies, and the path under either prefix the API is served at.
    const get = await call('GET', '/api/rest/v1/rpc/my_request', { headers: p.anon });
    expect(get.status, get.text).toBe(200);
    expect(get.body).toMatchObject({ method: 'GET', path: '/rpc/my_request', cookies: {} });
    expect(get.body.headers).not.toHaveProperty('authorization');
  });

  it('lets policies and triggers read request.headers and request.method', async () => {
    await sql(p, `
      create table tenant_notes (id int generated always as identity primary key, tenant text, body text, written_by text);
      alter table tenant_notes enable row level security;
      create policy "own tenant" on tenant_notes for all using (tenant = current_setting('request.headers', true)::json->>'x-tenant')
        with check (tenant = current_setting('request.headers', true)::json->>'x-tenant');
      grant select, insert on tenant_notes to anon;
      create function stamp_writer() returns trigger language plpgsql as $$ begin
        new.written_by := current_setting('request.method', true) || ' ' || current_setting('request.path', true) || ' ' ||
          coalesce(current_setting('request.headers', true)::json->>'user-agent', '');
        return new;
      end $$;
      create trigger stamp_writer before insert on tenant_notes for each row execute function stamp_writer();
    `);
    const write = (tenant: string, body: string) => rest('POST', 'tenant_notes', { ...p.anon, 'x-tenant': tenant, 'user-agent': 'notes-app/2', prefer: 'return=representation' }, { tenant, body });
    expect((await write('acme', 'a1')).status).toBe(201);
    expect((await write('globex', 'g1')).status).toBe(201);
    const refused = await rest('POST', 'tenant_notes', { ...p.anon, 'x-tenant': 'acme' }, { tenant: 'globex', body: 'sneaky' });
    expect(refused.status, refused.text).toBe(401);
    const acme = await rest('GET', 'tenant_notes?select=tenant,body,written_by', { ...p.anon, 'x-tenant': 'acme' });
    expect(acme.body).toEqual([{ tenant: 'acme', body: 'a1', written_by: 'POST /tenant_notes notes-app/2' }]);
    expect((await rest('GET', 'tenant_notes?select=body', p.anon)).body).toEqual([]);
  });

  it('takes a Bearer equal to the API key (what Supabase clients send signed out) as no user', async () => {
    const answer = await rest('POST', 'rpc/whoami', { ...p.anon, authorization: `Bearer ${p.project.anonKey}` }, {});
    expect(answer.body).toMatchObject({ role: 'anon' });
  });
});

describe('tokens are refused with 401, never read as anon', () => {
  const refused = (name: string, token: () => Promise<string> | string, headers: () => Record<string, string> = () => p.anon) =>
    it(name, async () => {
      const answer = await rest('GET', 'posts?select=id', { ...headers(), authorization: `Bearer ${await token()}` });
      expect(answer.status, answer.text).toBe(401);
      expect(['invalid_token', 'token_expired']).toContain(answer.body.code);
      expect(Object.keys(answer.body).sort()).toEqual(['code', 'details', 'hint', 'message']);
    });

  refused('an expired token', () => resignToken(p, ada.token, { exp: Math.floor(Date.now() / 1000) - 60, iat: Math.floor(Date.now() / 1000) - 3700 }));
  refused('a tampered token', () => {
    const [header, payload, signature] = ada.token.split('.');
    const claims = { ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), sub: bob.id };
    return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
  });
  refused('an alg:none token', () => `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${ada.token.split('.')[1]}.`);
  refused('a token signed by another key under the same kid', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const header = JSON.parse(Buffer.from(ada.token.split('.')[0]!, 'base64url').toString());
    return new SignJWT(decodeJwt(ada.token)).setProtectedHeader({ alg: 'ES256', kid: header.kid }).sign(privateKey);
  });
  refused('a token of another project', () => stranger.token);
  refused('garbage', () => 'not-a-token');
  refused('a valid token with the service key still has to be valid', () => 'not-a-token', () => p.service);

  it('refuses a token whose ref names another project even when signed with this project’s key', async () => {
    const forged = await resignToken(p, ada.token, { ref: other.project.id });
    expect((await rest('GET', 'posts', { ...p.anon, authorization: `Bearer ${forged}` })).status).toBe(401);
  });

  it('refuses a token signed with the project’s key whose sub or session_id is not a UUID, on the auth routes too (was a 500)', async () => {
    for (const changes of [{ sub: 'x'.repeat(64) }, { session_id: 'not-a-uuid' }, { sub: 42 }, { sub: ada.id.toUpperCase() }] as JWTPayload[]) {
      const forged = await resignToken(p, ada.token, changes);
      for (const [method, path] of [['GET', 'auth/me'], ['POST', 'auth/logout'], ['PATCH', 'auth/me'], ['GET', 'posts?select=id']] as const) {
        const answer = await rest(method, path, { ...p.anon, authorization: `Bearer ${forged}` }, method === 'GET' ? undefined : {});
        expect(answer.status, `${method} ${path} ${JSON.stringify(changes)}: ${answer.text}`).toBe(401);
        expect(answer.body.code).toBe('invalid_token');
      }
    }
  });

  it('accepts the same claims re-signed with the project’s key (the forging helper is sound)', async () => {
    const fine = await resignToken(p, ada.token, {});
    expect((await rest('POST', 'rpc/whoami', { ...p.anon, authorization: `Bearer ${fine}` }, {})).body).toMatchObject({ uid: ada.id });
  });
});

describe('RLS: owner preset', () => {
  let adaNote: number;
  it('lets each user insert rows owned by them (owner_id defaults to auth.uid())', async () => {
    const a = await rest('POST', 'notes', { ...as(ada), prefer: 'return=representation' }, { body: 'ada’s' });
    expect(a.status, a.text).toBe(201);
    expect(a.body[0].owner_id).toBe(ada.id);
    adaNote = a.body[0].id;
    expect((await rest('POST', 'notes', as(bob), { body: 'bob’s' })).status).toBe(201);
  });

  it('shows each user only their own rows, and anon nothing', async () => {
    expect((await rest('GET', 'notes?select=body', as(ada))).body).toEqual([{ body: 'ada’s' }]);
    expect((await rest('GET', 'notes?select=body', as(bob))).body).toEqual([{ body: 'bob’s' }]);
    expect((await rest('GET', 'notes', p.anon)).body).toEqual([]);
    expect((await rest('GET', 'notes', p.service)).body).toHaveLength(2);
  });

  it('does not let a user update or delete another user’s row', async () => {
    const update = await rest('PATCH', `notes?id=eq.${adaNote}`, { ...as(bob), prefer: 'return=representation' }, { body: 'hijacked' });
    expect(update.status).toBe(200);
    expect(update.body).toEqual([]);
    const remove = await rest('DELETE', `notes?id=eq.${adaNote}`, { ...as(bob), prefer: 'return=representation' });
    expect(remove.body).toEqual([]);
    expect((await rest('GET', 'notes?select=body', as(ada))).body).toEqual([{ body: 'ada’s' }]);
  });

  it('refuses a row claiming another owner (403 for a user) and any anon write (401)', async () => {
    const forged = await rest('POST', 'notes', as(bob), { body: 'x', owner_id: ada.id });
    expect(forged.status, forged.text).toBe(403);
    expect(forged.body.code).toBe('42501');
    const anon = await rest('POST', 'notes', p.anon, { body: 'x' });
    expect(anon.status, anon.text).toBe(401);
    expect(anon.body.code).toBe('42501');
  });

  it('lets the owner change their own row', async () => {
    const update = await rest('PATCH', `notes?id=eq.${adaNote}`, { ...as(ada), prefer: 'return=representation' }, { body: 'edited' });
    expect(update.body).toEqual([expect.objectContaining({ body: 'edited' })]);
  });
});

describe('RLS: public-read, authenticated and private presets', () => {
  it('lets anon read a public-read table but not write it', async () => {
    expect((await rest('GET', 'posts?select=id&id=eq.1', p.anon)).body).toEqual([{ id: 1 }]);
    const insert = await rest('POST', 'posts', p.anon, { title: 'anon' });
    expect(insert.status).toBe(401);
    expect((await rest('POST', 'posts', as(ada), { title: 'user' })).status).toBe(403);
    const patch = await rest('PATCH', 'posts?id=eq.1', { ...p.anon, prefer: 'return=representation' }, { title: 'defaced' });
    expect(patch.body).toEqual([]);
    expect((await rest('GET', 'posts?select=title&id=eq.1', p.anon)).body).toEqual([{ title: 'Hello world' }]);
  });

  it('lets signed-in users, not anon, use an authenticated table', async () => {
    expect((await rest('POST', 'board', as(ada), { body: 'hi' })).status).toBe(201);
    expect((await rest('GET', 'board?select=body', as(bob))).body).toEqual([{ body: 'hi' }]);
    expect((await rest('GET', 'board', p.anon)).body).toEqual([]);
  });

  it('keeps a private table to the service key', async () => {
    expect((await rest('POST', 'secrets', p.service, { body: 's' })).status).toBe(201);
    expect((await rest('GET', 'secrets', p.anon)).body).toEqual([]);
    expect((await rest('GET', 'secrets', as(ada))).body).toEqual([]);
    expect((await rest('GET', 'secrets?select=body', p.service)).body).toEqual([{ body: 's' }]);
  });
});

describe('SQL injection attempts are refused or harmless', () => {
  const attempts: Array<[string, string, string, unknown?, Record<string, string>?]> = [
    ['table name', 'GET', 'posts;drop%20table%20posts--'],
    ['quoted table name', 'GET', 'posts%22;drop%20table%20posts;--'],
    ['select column', 'GET', 'posts?select=id,(select%20pg_sleep(1))'],
    ['select cast', 'GET', 'posts?select=id::int);drop%20table%20posts;--'],
    ['cast words', 'GET', 'posts?select=id::int%20is%20null%20or%20true'],
    ['cast modifiers', 'GET', 'posts?select=id::numeric(1)%20or%20(select%201)'],
    ['cast with quotes', 'GET', 'posts?select=id::%22int%22;drop%20table%20posts;--'],
    ['quoted embedding name', 'GET', 'posts?select=id,%22authors%22%22;drop%20table%20posts;--%22(*)'],
    ['quoted embedding hint', 'GET', 'posts?select=id,authors!%22x%22%22)%20or%201=1;--%22(*)'],
    ['embedding name', 'GET', 'posts?select=id,authors;drop%20table%20posts(*)'],
    ['filter column', 'GET', 'posts?id;drop%20table%20posts=eq.1'],
    ['in list', 'GET', "posts?id=in.(1)%20or%201=1;drop%20table%20posts;--)"],
    ['logic tree', 'GET', 'posts?or=(id.eq.1,id.eq.1);drop%20table%20posts;--)'],
    ['text search config', 'GET', "posts?title=fts(english');drop%20table%20posts;--).x"],
    ['order', 'GET', 'posts?order=id;drop%20table%20posts'],
    ['order modifier', 'GET', 'posts?order=id.desc;drop%20table%20posts'],
    ['limit', 'GET', 'posts?limit=1;drop%20table%20posts'],
    ['on_conflict', 'POST', 'authors?on_conflict=id);drop%20table%20posts;--', { name: 'x' }, { prefer: 'resolution=merge-duplicates' }],
    ['columns', 'POST', 'authors?columns=name);drop%20table%20posts;--', { name: 'x' }],
    ['body key', 'POST', 'authors', { 'name") values (1); drop table posts; --': 'x' }],
    ['rpc name', 'POST', 'rpc/add_numbers(1);drop%20table%20posts;--', {}],
    ['rpc argument name', 'POST', 'rpc/add_numbers', { 'a => 1); drop table posts; --': 1 }],
    ['rpc argument value', 'POST', 'rpc/add_numbers', { a: '1); drop table posts; --' }],
  ];
  for (const [place, method, path, body, headers] of attempts) {
    it(`in the ${place}`, async () => {
      const answer = await call(method, `/rest/v1/${path}`, { headers: { ...p.service, ...headers }, body });
      expect(answer.status, answer.text).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(Object.keys(answer.body).sort()).toEqual(['code', 'details', 'hint', 'message']);
      expect(answer.text).not.toMatch(/_t0|json_agg|pgrst_/);
    });
  }

  it('an alias that looks like SQL is just the key of the answer', async () => {
    const answer = await rest('GET', 'posts?select=%22x%22%22%20from%20posts;drop%20table%20posts;--%22:id&id=eq.1', p.anon);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([{ 'x"" from posts;drop table posts;--': 1 }]);
  });

  it('a filter value that looks like SQL is just a value', async () => {
    const answer = await rest('GET', "posts?title=eq.'%20or%201=1;drop%20table%20posts;--", p.anon);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual([]);
  });

  it('a value that looks like SQL is just a value', async () => {
    const answer = await rest('GET', `posts?title=eq.${encodeURIComponent("x' or '1'='1")}`, p.anon);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([]);
    const stored = await rest('POST', 'authors?select=name', { ...p.service, prefer: 'return=representation' }, { name: "Robert'); drop table posts; --" });
    expect(stored.body).toEqual([{ name: "Robert'); drop table posts; --" }]);
  });

  it('a NUL character in an alias or a JSON key is refused with 400 before it reaches PostgreSQL, whose protocol ends a statement’s text at one', async () => {
    for (const query of ['posts?select=id-%3E%00', 'posts?select=x%00y:id', 'posts?select=id&title=eq.%00']) {
      const answer = await rest('GET', query, p.anon);
      expect([answer.status, answer.body.code], query).toEqual([400, 'invalid_request']);
    }
    expect((await rest('GET', 'posts?select=id&id=eq.1', p.anon)).body).toEqual([{ id: 1 }]);
  });

  it('left every table in place', async () => {
    expect((await rest('GET', 'posts?select=id&order=id', p.service)).body.map((r: { id: number }) => r.id)).toEqual([1, 2, 3, 4]);
  });
});

describe('a session setting owner code changes for the whole connection', () => {
  it('does not carry the lifted statement timeout over to the next request on that connection', async () => {
    await sql(p, `
      create function lift_timeout() returns text language sql as $$ select set_config('statement_timeout', '0', false) $$;
      create function request_timeout() returns text language sql as $$ select current_setting('statement_timeout') $$;
    `);
    await expect.poll(async () => (await rest('POST', 'rpc/request_timeout', p.anon, {})).status, { timeout: 5000 }).toBe(200);
    const seen: string[] = [];
    // In turns, so that each request takes the connection the last one gave back, on each replica.
    for (let i = 0; i < 8; i++) {
      expect((await rest('POST', 'rpc/lift_timeout', p.anon, {})).status).toBe(200);
      seen.push((await rest('POST', 'rpc/request_timeout', p.anon, {})).body);
      seen.push((await rest('GET', 'rpc/request_timeout', p.anon)).body);
    }
    expect(new Set(seen)).toEqual(new Set(['15s']));
  });
});
