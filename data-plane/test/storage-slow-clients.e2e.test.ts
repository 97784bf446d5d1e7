/**
 * Storage against clients that upload slowly, through the gateway: an
 * upload's transaction (its row claimed, the row lock held) stays open while
 * its bytes come, so clients trickling uploads hold tenant connections. They
 * must not keep the project's other storage calls from being served, nor
 * make them wait for ever.
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
  it('clients trickling uploads into every transaction connection leave listings served, and a further upload answers 503 instead of waiting for ever', async () => {
    const replicas = inject('servicePorts').dataPlanes.length;
    // Ten transaction connections per replica, the gateway taking the replicas in turn: two more each.
    const slow = Array.from({ length: 12 * replicas }, (_, i) => tricklingUpload(`slow/${i}.txt`));
    await expect.poll(uploadsHeld, { timeout: 5_000, interval: 100 }).toBeGreaterThanOrEqual(10 * replicas);

    // Before, listings, downloads and uploads shared the ten connections and waited for one for as long as the slow uploads lasted.
    for (let i = 0; i < replicas; i++) {
      const listed = await fetch(new URL(`${objects()}?prefix=`, inject('baseUrl')), { headers: { apikey: p.project.serviceKey }, signal: AbortSignal.timeout(5_000) });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual({ objects: [], prefixes: [] });
    }

    const form = new FormData();
    form.append('file', new Blob(['fast'], { type: 'text/plain' }), 'fast.txt');
    const started = Date.now();
    const refused = await fetch(new URL(`${objects()}?path=fast.txt`, inject('baseUrl')), { method: 'POST', headers: { apikey: p.project.serviceKey }, body: form, signal: AbortSignal.timeout(15_000) });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({ code: 'project_unavailable', message: expect.stringContaining('in use'), details: null, hint: null });
    expect(Date.now() - started).toBeLessThan(13_000);

    // The slow clients gone, their rows go with their transactions and uploads are taken again.
    for (const socket of slow) socket.destroy();
    await expect.poll(uploadsHeld, { timeout: 5_000, interval: 100 }).toBe(0);
    const again = new FormData();
    again.append('file', new Blob(['fast'], { type: 'text/plain' }), 'fast.txt');
    const taken = await fetch(new URL(`${objects()}?path=fast.txt`, inject('baseUrl')), { method: 'POST', headers: { apikey: p.project.serviceKey }, body: again });
    expect(taken.status).toBe(201);
    const listed = await call('GET', `${objects()}?prefix=`, { headers: { apikey: p.project.serviceKey } });
    expect(listed.body.objects.map((object: { path: string }) => object.path)).toEqual(['fast.txt']);
  }, 30_000);
});
