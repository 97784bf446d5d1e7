/**
 * What a project's own code reaches of other projects when it runs in a data
 * API request: an invoker function may `reset role` (or `set role`) to the
 * login the data plane connected with, so that login must be the project's
 * own, with no right on another project's database, its connections or the
 * queries they run.
 */
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantApplyRole, tenantAuthenticatorRole, tenantDatabaseName, tenantOwnerRole } from '@baseplane/contracts';
import { call } from '../../deploy/test/http';
import { restProject, sql, type RestProject } from './rest-fixtures';

let mine: RestProject;
let theirs: RestProject;

const rest = (method: string, path: string, headers: Record<string, string>, body?: unknown) => call(method, `/rest/v1/${path}`, { headers, body });

beforeAll(async () => {
  [mine, theirs] = await Promise.all([restProject('isolation mine'), restProject('isolation theirs')]);
  // Owner code, called through the data API as anon: it drops the request's role and looks around as the login.
  await sql(mine, `
    create function escape_probe(other_db text) returns json language plpgsql as $$
    begin
      reset role;
      return json_build_object(
        'login', session_user,
        'connectsToOther', has_database_privilege(session_user, other_db, 'connect'),
        'otherQueriesSeen', (select count(*) from pg_stat_activity a where a.datname = other_db and a.query is distinct from '<insufficient privilege>'),
        'otherBackendsItMayEnd', (select count(*) from pg_stat_activity a where a.datname = other_db and a.usesysid is not null and pg_has_role(current_user, a.usesysid, 'usage')));
    end $$;
  `);
});

describe('owner code that resets its role in a data API request', () => {
  it('lands on a login of its own project, which can neither connect to another project’s database nor see or end its connections', async () => {
    // The other project's data API holds connections open (and shows its last query) while this runs.
    expect((await rest('GET', '', theirs.anon)).status).toBe(200);
    const answer = await rest('POST', 'rpc/escape_probe', mine.anon, { other_db: tenantDatabaseName(theirs.project.id) });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ connectsToOther: false, otherQueriesSeen: 0, otherBackendsItMayEnd: 0 });
    expect(answer.body.login).toContain(tenantDatabaseName(mine.project.id));
  });

  it('may change its own login’s settings, and the other project’s data API goes on answering', async () => {
    await sql(mine, `
      create function spoil_login() returns text language plpgsql as $$
      begin
        reset role;
        execute format('alter role %I set statement_timeout = 1', session_user);
        raise exception 'spoiled %', session_user;
      end $$;
    `);
    // The raise rolls the ALTER back: what counts is whose login it could alter.
    const answer = await rest('POST', 'rpc/spoil_login', mine.anon, {});
    expect(answer.body.message).not.toBe('spoiled authenticator');
    expect((await rest('GET', '', theirs.anon)).status).toBe(200);
  });

  it('holds no right to connect to the platform database, nor do the project’s owner and apply logins', async () => {
    const platform = new pg.Client({ connectionString: inject('databaseUrl') });
    await platform.connect();
    try {
      const id = mine.project.id;
      const { rows } = await platform.query(
        `select r.rolname, has_database_privilege(r.oid, current_database(), 'connect') as connect, has_database_privilege(r.oid, current_database(), 'temporary') as temporary
           from pg_roles r where r.rolname = any($1::text[]) order by r.rolname`,
        [[tenantOwnerRole(id), tenantApplyRole(id), tenantAuthenticatorRole(id)]],
      );
      // The apply login is made at the project's first change through the workflow, if any came yet.
      expect(rows.map((row) => row.rolname)).toEqual(expect.arrayContaining([tenantAuthenticatorRole(id), tenantOwnerRole(id)]));
      expect(rows.filter((row) => row.connect || row.temporary)).toEqual([]);
    } finally {
      await platform.end();
    }
  });
});
