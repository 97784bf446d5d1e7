/**
 * Storage against clients that upload slowly, through the gateway: an
 * upload's row is tried and rolled back before its bytes come, and claimed
 * only as they are published, so clients trickling uploads hold no tenant
 * connection, and the project's other storage calls, uploads too, are served
 * meanwhile.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer, call } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { restProject, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let tenant: TenantDatabase;
const sockets: net.Socket[] = [];
const objects = () => `/api/projects/${p.project.id}/storage/buckets/drop/objects`;

/** An upload of `path` with the anon key whose multipart body then comes a byte every 500 ms. */
function tricklingUpload(path: string): net.Socket {
  const { port } = new URL(inject('baseUrl'));
  const socket = net.connect(Number(port), '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  const part = '--XX\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\ncontent-type: text/plain\r\n\r\nhello';
  socket.write(
    `POST ${objects()}?path=${path} HTTP/1.1\r\nhost: localhost\r\napikey: ${p.project.anonKey}\r\n` +
      `content-type: multipart/form-data; boundary=XX\r\ncontent-length: 100000\r\n\r\n${part}`,
  );
  const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write('x')), 500);
  socket.on('close', () => clearInterval(timer));
  return socket;
}

/** Storage connections of the project waiting, inside a transaction, for an upload's bytes. */
async function uploadsHeld(): Promise<number> {
  const { rows } = await tenant.client.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'baseplane-storage' and state = 'idle in transaction'",
  );
  return rows[0]!.n;
}

beforeAll(async () => {
  p = await restProject('slow uploads');
  tenant = await connectTenant(p.project.id);
  const bucket = await call('POST', `/api/projects/${p.project.id}/storage/buckets`, { headers: bearer(p.operator.token), body: { name: 'drop' } });
  expect(bucket.status, bucket.text).toBe(201);
  await sql(p, `create policy drop_insert on storage.objects for insert to anon with check (bucket = 'drop');
    create policy drop_select on storage.objects for select to anon using (bucket = 'drop');`);
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await tenant?.client.end();
});

describe('slow uploads', () => {
  it('clients trickling uploads hold no tenant connection: while they trickle, listings and as many further uploads are served', async () => {
    const replicas = inject('servicePorts').dataPlanes.length;
    // More than the ten transaction connections per replica, the gateway taking the replicas in turn.
    const slow = Array.from({ length: 12 * replicas }, (_, i) => tricklingUpload(`slow/${i}.txt`));
    // Before, each held a transaction (its row claimed) from its first byte: 10 per replica within a second.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await uploadsHeld()).toBe(0);

    for (let i = 0; i < replicas; i++) {
      const listed = await fetch(new URL(`${objects()}?prefix=`, inject('baseUrl')), { headers: { apikey: p.project.serviceKey }, signal: AbortSignal.timeout(5_000) });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual({ objects: [], prefixes: [] });
    }
    const fast = await Promise.all(Array.from({ length: 12 * replicas }, async (_, i) => {
      const form = new FormData();
      form.append('file', new Blob([`fast ${i}`], { type: 'text/plain' }), 'fast.txt');
      const answer = await fetch(new URL(`${objects()}?path=fast/${i}.txt`, inject('baseUrl')), { method: 'POST', headers: { apikey: p.project.serviceKey }, body: form, signal: AbortSignal.timeout(5_000) });
      return answer.status;
    }));
    expect(fast).toEqual(Array(12 * replicas).fill(201));
    expect(slow.filter((socket) => socket.destroyed)).toEqual([]);

    // The slow clients gone, nothing of theirs is kept.
    for (const socket of slow) socket.destroy();
    const listed = await call('GET', `${objects()}?prefix=slow/`, { headers: { apikey: p.project.serviceKey } });
    expect(listed.body).toEqual({ objects: [], prefixes: [] });
    const fastListed = await call('GET', `${objects()}?prefix=fast/`, { headers: { apikey: p.project.serviceKey } });
    expect(fastListed.body.objects).toHaveLength(12 * replicas);
  }, 30_000);
});
