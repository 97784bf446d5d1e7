/**
 * One cluster's max_connections for all a replica's tenant connections: the
 * data API's, auth's and storage's, of every project. With the cluster full
 * (this test holds every slot left) and the replica's only idle connections
 * those of one part, another part's request on a project it has no
 * connection to must still be answered: the replica gives back its idle
 * connections, whoever keeps them, and tries again.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tenantDatabaseName } from '@baseplane/contracts';
import { bearer, call, createProject, dataPlanesCaughtUp, type ProjectAnswer } from '../../deploy/test/http';
import { restProject, type RestProject } from './rest-fixtures';

const replica = (index: number) => `http://127.0.0.1:${inject('servicePorts').dataPlanes[index]}`;
const objects = (projectId: string) => `/api/projects/${projectId}/storage/buckets/docs/objects?prefix=`;

let p: RestProject;
/** The project whose idle connections hold the room. */
let busy: ProjectAnswer;
/** Projects the replicas have no connection to until a test asks: one per test, more when a try is made again. */
const fresh: ProjectAnswer[] = [];
const deleted = new Set<string>();

async function deleteProject(project: ProjectAnswer): Promise<void> {
  expect((await call('DELETE', `/api/projects/${project.id}`, { headers: bearer(p.operator.token) })).status).toBe(200);
  deleted.add(project.id);
}

async function prepare(project: ProjectAnswer): Promise<void> {
  const made = await call('POST', '/api/sql/execute', { headers: bearer(p.operator.token), body: { projectId: project.id, query: 'create table items (id int generated always as identity primary key, note text)' } });
  expect(made.status, made.text).toBe(200);
  const bucket = await call('POST', `/api/projects/${project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'docs' } });
  expect(bucket.status, bucket.text).toBe(201);
}

/** `count` requests at once, each answered `status`: the replica opens several connections for them, idle after. */
async function burst(count: number, status: number, request: (i: number) => Promise<Response>): Promise<void> {
  const answers = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const response = await request(i);
    return `${response.status} ${await response.text()}`;
  }));
  for (const answer of answers) expect(answer.slice(0, 3), answer).toBe(String(status));
}

const dataApiWrites = (base: string, project: ProjectAnswer) => burst(20, 201, () =>
  fetch(`${base}/rest/v1/items`, { method: 'POST', headers: { apikey: project.serviceKey, 'content-type': 'application/json' }, body: JSON.stringify({ note: 'x' }) }));
const storageLists = (base: string, project: ProjectAnswer) => burst(20, 200, () => fetch(base + objects(project.id), { headers: { apikey: project.serviceKey } }));
const signUps = (base: string, project: ProjectAnswer) => burst(5, 201, () => signUp(base, project));

function signUp(base: string, project: ProjectAnswer): Promise<Response> {
  return fetch(`${base}/rest/v1/auth/signup`, {
    method: 'POST',
    headers: { apikey: project.anonKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `user-${randomUUID()}@example.com`, password: 'correct horse battery' }),
  });
}

/**
 * The login that fills the cluster: not a superuser, so it holds exactly the slots the replicas' logins may
 * use and leaves the superuser-reserved ones. Held as the superuser, those would have to be freed too before
 * any login got a slot: a replica giving back fewer idle connections than superuser_reserved_connections
 * (3) would still be refused, which made the test depend on how many connections a burst happened to open.
 */
const holder = { role: `cluster_full_holder_${randomUUID().slice(0, 8)}`, password: randomUUID() };
const holderUrl = () => {
  const url = new URL(inject('tenantDatabaseUrl'));
  url.username = holder.role;
  url.password = holder.password;
  return url.toString();
};

async function asSuperuser(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** Idle connections to `project`'s database, every replica's: what the room gives back when the cluster is full. */
async function idleConnections(project: ProjectAnswer): Promise<number> {
  const admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = $1 and state = 'idle'", [tenantDatabaseName(project.id)]);
    return rows[0]!.n;
  } finally {
    await admin.end();
  }
}

/** A project the replicas have no connection to yet, made for a try that must be repeated (deleted after the tests). */
async function freshProject(): Promise<ProjectAnswer> {
  const project = await createProject(p.operator, `cluster full ${fresh.length}`);
  fresh.push(project);
  await prepare(project);
  await dataPlanesCaughtUp(10_000);
  return project;
}

/**
 * Leaves `busy` idle connections on a replica (`burst`), fills the cluster and sends `request` for a project the
 * replica has no connection to; answers its status and body once the answer came on the room the replica made
 * by giving those idle connections back (they are gone after it; the pools' own idle timeout is 30 s). When
 * another service freed a slot first (its pools close idle connections too), the replica was never refused and
 * the room went untested: the try is made again on a new project, up to five times. Also answers the projects
 * it sent requests for, which now have connections on that replica.
 */
async function onRoomMade(burst: () => Promise<void>, first: ProjectAnswer, request: (target: ProjectAnswer) => Promise<Response>): Promise<{ answer: string; targets: ProjectAnswer[] }> {
  const targets: ProjectAnswer[] = [];
  for (let attempt = 1; attempt <= 5; attempt++) {
    const target = attempt === 1 ? first : await freshProject();
    targets.push(target);
    await burst();
    const before = await idleConnections(busy);
    expect(before, 'the burst left idle connections').toBeGreaterThan(0);
    const answer = await whileFull(async () => answered(await request(target)));
    if (!answer.startsWith('2') || (await idleConnections(busy)) < before) return { answer, targets };
  }
  throw new Error('five tries were all answered on a slot another service freed before the replica was refused: the room went untested');
}

/** Runs `act` while this test holds every connection the cluster has left for non-superusers, then lets them go. */
async function whileFull<T>(act: () => Promise<T>): Promise<T> {
  const held: pg.Client[] = [];
  try {
    for (let full = false; !full;) {
      const opened = await Promise.allSettled(Array.from({ length: 10 }, async () => {
        const client = new pg.Client({ connectionString: holderUrl() });
        client.on('error', () => undefined);
        await client.connect();
        return client;
      }));
      for (const result of opened) {
        if (result.status === 'fulfilled') held.push(result.value);
        else if ((result.reason as { code?: string }).code === '53300') full = true;
        else throw result.reason;
      }
    }
    return await act();
  } finally {
    await Promise.all(held.map((client) => client.end().catch(() => undefined)));
  }
}

/** The status and body of `response`, for one expectation that shows both. */
const answered = async (response: Response) => `${response.status} ${await response.text()}`;

beforeAll(async () => {
  await asSuperuser(`create role ${holder.role} login password '${holder.password}'`);
  p = await restProject('cluster full');
  busy = p.project;
  for (let i = 0; i < 4; i++) fresh.push(await createProject(p.operator, `cluster full ${i}`));
  for (const project of [busy, ...fresh]) await prepare(project);
  await dataPlanesCaughtUp(10_000);
});

afterAll(async () => {
  // Their connections go with them, rather than holding the cluster for the tests after these.
  for (const project of [busy, ...fresh]) if (!deleted.has(project.id)) await deleteProject(project);
  await asSuperuser(`drop role if exists ${holder.role}`);
});

describe('a full cluster, idle connections of the data API', () => {
  it('signs a user up on a project auth has no connection to', async () => {
    const { answer } = await onRoomMade(() => dataApiWrites(replica(0), busy), fresh[0]!, (target) => signUp(replica(0), target));
    expect(answer.slice(0, 3), answer).toBe('201');
  });

  it('lists objects of a project storage has no connection to', async () => {
    const { answer } = await onRoomMade(() => dataApiWrites(replica(0), busy), fresh[1]!,
      (target) => fetch(replica(0) + objects(target.id), { headers: { apikey: target.serviceKey } }));
    expect(answer, answer).toBe('200 {"objects":[],"prefixes":[]}');
  });
});

describe("a full cluster, idle connections of auth or storage (the other replica, whose data API has none)", () => {
  const dataApiRead = (target: ProjectAnswer) => fetch(`${replica(1)}/rest/v1/items?select=id&limit=1`, { headers: { apikey: target.serviceKey } });
  /** Projects the data API now has connections to on replica 1. */
  let dataApiTargets: ProjectAnswer[] = [];

  it("answers the data API on storage's", async () => {
    const { answer, targets } = await onRoomMade(() => storageLists(replica(1), busy), fresh[2]!, dataApiRead);
    dataApiTargets = targets;
    expect(answer, answer).toBe('200 []');
  });

  it("answers the data API on auth's", async () => {
    // The test before left the data API connections on this replica: their projects go, and the connections with them.
    for (const project of dataApiTargets) await deleteProject(project);
    await dataPlanesCaughtUp(10_000);
    const { answer } = await onRoomMade(() => signUps(replica(1), busy), fresh[3]!, dataApiRead);
    expect(answer, answer).toBe('200 []');
  });
});
