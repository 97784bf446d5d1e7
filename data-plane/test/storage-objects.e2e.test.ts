/**
 * Storage objects end to end over HTTP through the gateway: upload, list,
 * download with ranges, signed and public URLs, delete; the bucket's size
 * limit and MIME allow-list; operators, the service key, and end users under
 * RLS policies on storage.objects. Bytes are checked in the store the
 * services write to (STORAGE_BACKEND: fs in the main pass, the embedded S3
 * server in the second), rows in the tenant database.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '@baseplane/contracts';
import { FS_STORAGE_DIR, objectKey, type ObjectStore } from '@baseplane/contracts/object-store';
import { layoutOf, objectFile } from '../../contracts/src/object-store/fs-layout';
import { s3BucketsDir } from '../../deploy/local/src/s3-server';
import { processWithArgument } from '../../deploy/test/processes';
import { bearer, call, createProject, signUpOperator, type Operator } from '../../deploy/test/http';
import { serviceLogLines } from '../../deploy/test/logs';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { servicesBackend, servicesStore } from '../../control-plane/test/storage-fixtures';
import { restProject, signUpUser, sql, type RestProject } from './rest-fixtures';

let p: RestProject;
let other: RestProject;
let stranger: Operator;
let tenant: TenantDatabase;
let store: ObjectStore;
let alice: { token: string; id: string };
let bob: { token: string; id: string };

const objects = (bucket: string, projectId = p.project.id) => `/api/projects/${projectId}/storage/buckets/${bucket}/objects`;
const operator = () => bearer(p.operator.token);
const asUser = (user: { token: string }) => ({ ...p.anon, ...bearer(user.token) });
const md5 = (bytes: Buffer | string) => createHash('md5').update(bytes).digest('hex');
/** The etag of a single-part object: on fs the SHA-256 of its bytes, on S3 the server's own (the MD5). */
const etagOf = (bytes: Buffer | string) => createHash(servicesBackend() === 'fs' ? 'sha256' : 'md5').update(bytes).digest('hex');

interface Uploaded {
  status: number;
  body: any;
}

/** Uploads `bytes` as multipart field `file` (what API.md pins). */
async function upload(bucket: string, path: string, bytes: Buffer | string, headers: Record<string, string>, options: { type?: string; upsert?: boolean; field?: string } = {}): Promise<Uploaded> {
  const form = new FormData();
  form.append(options.field ?? 'file', new Blob([bytes], { type: options.type ?? 'text/plain' }), path.split('/').pop());
  const query = `?path=${encodeURIComponent(path)}${options.upsert ? '&upsert=true' : ''}`;
  const response = await fetch(new URL(objects(bucket) + query, inject('baseUrl')), { method: 'POST', headers, body: form });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** GETs a URL of the gateway and answers the bytes. */
async function fetchBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(new URL(url, inject('baseUrl')), { headers });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** The path and query of a URL the service handed out (its host is PUBLIC_URL). */
const local = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

/** How many multipart uploads the stack's own S3 server holds under `key`. */
async function s3MultipartUploads(key: string): Promise<number> {
  const s3 = inject('s3');
  const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: s3 });
  try {
    return (await client.send(new ListMultipartUploadsCommand({ Bucket: loadConfig(process.env).s3.bucket, Prefix: key }))).Uploads?.length ?? 0;
  } finally {
    client.destroy();
  }
}

/** True when the services store on the stack's own S3 server (not on one S3_ENDPOINT names). */
const onStackS3 = () => servicesBackend() === 's3' && loadConfig(process.env).s3.endpoint === undefined;

async function rowOf(bucket: string, path: string) {
  return (await tenant.client.query('select size, content_type, etag, owner from storage.objects where bucket = $1 and path = $2', [bucket, path])).rows[0];
}

async function createBucket(project: RestProject, body: Record<string, unknown>): Promise<void> {
  const answer = await call('POST', `/api/projects/${project.project.id}/storage/buckets`, { headers: bearer(project.operator.token), body });
  expect(answer.status, answer.text).toBe(201);
}

beforeAll(async () => {
  [p, other, stranger] = await Promise.all([restProject('objects app'), restProject('other app'), signUpOperator('Stranger')]);
  tenant = await connectTenant(p.project.id);
  store = await servicesStore();
  await createBucket(p, { name: 'docs' });
  await createBucket(p, { name: 'pics', public: true, fileSizeLimit: 1024, allowedMimeTypes: ['image/*'] });
  await createBucket(p, { name: 'avatars' });
  await createBucket(other, { name: 'docs' });
  // The policies an app writes: each user reads and writes only under avatars/<their id>/.
  await sql(p, `
    create policy avatars_insert on storage.objects for insert to authenticated
      with check (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
    create policy avatars_select on storage.objects for select to authenticated
      using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
    create policy avatars_update on storage.objects for update to authenticated
      using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
    create policy avatars_delete on storage.objects for delete to authenticated
      using (bucket = 'avatars' and (storage.foldername(path))[1] = auth.uid()::text);
  `);
  [alice, bob] = await Promise.all([signUpUser(p), signUpUser(p)]);
});
afterAll(async () => {
  await tenant?.end();
  await store?.close();
});

describe(`uploading (services on ${servicesBackend()})`, () => {
  it('stores an operator upload: 201 with the object, its row and its bytes', async () => {
    const answer = await upload('docs', 'reports/q1.txt', 'quarterly numbers', operator());
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    expect(answer.body).toEqual({ path: 'reports/q1.txt', size: 17, contentType: 'text/plain', etag: expect.any(String), updatedAt: expect.any(String), owner: null });
    expect(await rowOf('docs', 'reports/q1.txt')).toMatchObject({ size: '17', content_type: 'text/plain', owner: null, etag: answer.body.etag });
    const head = await store.head(objectKey(p.project.id, 'docs', 'reports/q1.txt'));
    expect(head?.size).toBe(17);
    expect(answer.body.etag).toBe(etagOf('quarterly numbers'));
  });

  it('takes the service key', async () => {
    const answer = await upload('docs', 'service.txt', 'from the server', p.service);
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  });

  it('refuses an existing path with 409, and replaces it with upsert=true', async () => {
    await upload('docs', 'notes.txt', 'first', operator());
    const again = await upload('docs', 'notes.txt', 'second', operator());
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'already_exists', hint: expect.stringContaining('upsert') });
    expect((await fetchBytes(`${objects('docs')}/download?path=notes.txt`, operator())).bytes.toString()).toBe('first');
    const replaced = await upload('docs', 'notes.txt', 'second, longer', operator(), { upsert: true });
    expect(replaced.status).toBe(201);
    expect(replaced.body.size).toBe(14);
    expect((await fetchBytes(`${objects('docs')}/download?path=notes.txt`, operator())).bytes.toString()).toBe('second, longer');
  });

  it('refuses an object over the bucket size limit with 413, leaving neither row nor bytes', async () => {
    const answer = await upload('pics', 'big.png', Buffer.alloc(5000, 7), operator(), { type: 'image/png' });
    expect(answer.status).toBe(413);
    expect(answer.body.code).toBe('payload_too_large');
    expect(await rowOf('pics', 'big.png')).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'pics', 'big.png'))).toBeUndefined();
    // At the limit is fine.
    expect((await upload('pics', 'exact.png', Buffer.alloc(1024, 1), operator(), { type: 'image/png' })).status).toBe(201);
  });

  it('reads and drops the rest of a body refused with 413 mid-way, so the connection serves the next uploads', async () => {
    await createBucket(p, { name: 'capped', fileSizeLimit: 1024 * 1024 });
    const seen: string[] = [];
    // Each upload well past the limit leaves megabytes unread when the store gives up; the next ones (on the same
    // kept-alive connections, through the gateway and straight to a replica) hung until the client gave up.
    for (const base of [inject('baseUrl'), `http://127.0.0.1:${inject('servicePorts').dataPlanes[0]}`]) {
      for (let i = 0; i < 4; i++) {
        for (const [what, size] of [['over', 4 * 1024 * 1024], ['small', 10]] as const) {
          const form = new FormData();
          form.append('file', new Blob([Buffer.alloc(size, 1)]), 'x.bin');
          const url = new URL(`${objects('capped')}?path=${what}-${i}.bin&upsert=true`, base);
          const status = await fetch(url, { method: 'POST', headers: operator(), body: form, signal: AbortSignal.timeout(10_000) })
            .then(async (answer) => (await answer.text(), answer.status), (error: Error) => error.name);
          seen.push(`${what} ${status}`);
        }
      }
    }
    expect(seen).toEqual(Array.from({ length: 8 }, () => ['over 413', 'small 201']).flat());
  });

  it('refuses a content type outside the bucket allow-list with 400', async () => {
    const answer = await upload('pics', 'note.txt', 'words', operator(), { type: 'text/plain' });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'mime_type_not_allowed', details: { allowedMimeTypes: ['image/*'] } });
    expect(await rowOf('pics', 'note.txt')).toBeUndefined();
  });

  it('leaves nothing behind when the client goes away half-way through an upload', async () => {
    const boundary = 'halfway-boundary';
    const url = new URL(`${objects('docs')}?path=half.bin`, inject('baseUrl'));
    await new Promise<void>((resolve) => {
      const request = http.request(url, { method: 'POST', headers: { ...operator(), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(10 * 1024 * 1024) } });
      request.on('error', () => resolve());
      request.on('close', () => resolve());
      request.write(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="half.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`);
      request.write(Buffer.alloc(256 * 1024, 1), () => setTimeout(() => request.destroy(), 300));
    });
    // The upload was admitted (its row tried and rolled back) and streamed; cut off, it never publishes.
    expect(await rowOf('docs', 'half.bin')).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'docs', 'half.bin'))).toBeUndefined();
  });

  // Over 5 MiB the S3 store sends multipart parts and publishes with CompleteMultipartUpload; under, with one PutObject.
  const sizesToPublish: Array<[string, number]> = [['larger than an S3 part', 6 * 1024 * 1024], ['of one S3 part', 64 * 1024]];

  it.each(sizesToPublish)('takes concurrent upserts of one path %s, each 201, publishing in turn: the row and the bytes agree after', async (_what, size) => {
    const path = `contended-${size}.bin`;
    const bodies = [1, 2, 3].map((n) => Buffer.alloc(size + n, n));
    const answers = await Promise.all(bodies.map((bytes) => upload('docs', path, bytes, operator(), { type: 'application/octet-stream', upsert: true })));
    expect(answers.map((answer) => answer.status), JSON.stringify(answers.map((answer) => answer.body))).toEqual([201, 201, 201]);
    const row = await rowOf('docs', path);
    const head = await store.head(objectKey(p.project.id, 'docs', path));
    expect({ size: Number(row.size), etag: row.etag }).toEqual({ size: head?.size, etag: head?.etag });
    expect(answers.map((answer) => answer.body.etag)).toContain(row.etag);
  });

  it.each(sizesToPublish)('takes one of concurrent uploads of a new path %s without upsert (201) and refuses the others with 409, their bytes never shown', async (_what, size) => {
    const path = `raced-${size}.bin`;
    const bodies = [1, 2, 3].map((n) => Buffer.alloc(size + n, n));
    const answers = await Promise.all(bodies.map((bytes) => upload('docs', path, bytes, operator(), { type: 'application/octet-stream' })));
    expect(answers.map((answer) => answer.status).sort(), JSON.stringify(answers.map((answer) => answer.body))).toEqual([201, 409, 409]);
    const winner = answers.findIndex((answer) => answer.status === 201);
    expect(answers.filter((answer) => answer.status === 409).map((answer) => answer.body.code)).toEqual(['already_exists', 'already_exists']);
    const row = await rowOf('docs', path);
    expect({ size: Number(row.size), etag: row.etag }).toEqual({ size: bodies[winner]!.length, etag: answers[winner]!.body.etag });
    const stored = await fetchBytes(`${objects('docs')}/download?path=${path}`, operator());
    expect(stored.bytes.equals(bodies[winner]!)).toBe(true);
    // The refused ones' multipart uploads are aborted before they answer.
    if (onStackS3()) expect(await s3MultipartUploads(objectKey(p.project.id, 'docs', path))).toBe(0);
  });

  it.each([
    ['a path with a ".." segment', '../escape.txt', 400],
    ['a path with an empty segment', 'a//b.txt', 400],
    ['a path ending in "/"', 'folder/', 400],
  ])('refuses %s with 400', async (_what, path, status) => {
    const answer = await upload('docs', path, 'x', operator());
    expect(answer.status).toBe(status);
    expect(Object.keys(answer.body).sort()).toEqual(['code', 'details', 'hint', 'message']);
  });

  it('refuses a body that is not multipart (415), a missing path (400), a missing file field (400) and an unknown bucket (404)', async () => {
    const raw = await call('POST', `${objects('docs')}?path=raw.txt`, { headers: { ...operator(), 'content-type': 'text/plain' }, raw: 'bytes' });
    expect(raw.status).toBe(415);
    expect(raw.body.code).toBe('unsupported_media_type');
    expect((await call('POST', objects('docs'), { headers: operator() })).status).toBe(400);
    const noFile = await upload('docs', 'nofile.txt', 'x', operator(), { field: 'attachment' });
    expect(noFile.status).toBe(400);
    expect(noFile.body.message).toContain('"file"');
    const missing = await upload('nope', 'x.txt', 'x', operator());
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('bucket not found');
  });

  // busboy takes a part without a filename for a text field (held in memory, cut at 1 MB) unless its type is
  // application/octet-stream; the part named "file" is the object whatever it carries, and streams like any file.
  it.each([
    ['a text part', 'content-type: text/plain\r\n', 'text/plain', Buffer.from('no filename here')],
    ['a part with no content type', '', 'text/plain', Buffer.from('bare part')],
    ['an image part', 'content-type: image/png\r\n', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2])],
    ['a 2 MB part (over busboy\'s 1 MB field limit)', 'content-type: text/plain\r\n', 'text/plain', Buffer.alloc(2 * 1024 * 1024, 'a')],
  ])('stores a "file" part without a filename: %s', async (_what, typeLine, contentType, bytes) => {
    const path = `no-filename-${bytes.length}-${contentType.replace('/', '-')}.bin`;
    const raw = Buffer.concat([
      Buffer.from(`--b\r\ncontent-disposition: form-data; name="note"\r\n\r\nnot the file\r\n--b\r\ncontent-disposition: form-data; name="file"\r\n${typeLine}\r\n`),
      bytes,
      Buffer.from('\r\n--b--\r\n'),
    ]);
    const response = await fetch(new URL(`${objects('docs')}?path=${path}`, inject('baseUrl')), {
      method: 'POST', headers: { ...operator(), 'content-type': 'multipart/form-data; boundary=b' }, body: raw,
    });
    const text = await response.text();
    expect(response.status, text).toBe(201);
    expect(JSON.parse(text)).toMatchObject({ path, size: bytes.length, contentType });
    const stored = await fetchBytes(`${objects('docs')}/download?path=${path}`, operator());
    expect([stored.status, stored.headers.get('content-type'), md5(stored.bytes)]).toEqual([200, contentType, md5(bytes)]);
  });

  it.each([
    ['no boundary', 'multipart/form-data', 'cut'],
    ['a boundary its parts do not use', 'multipart/form-data; boundary=other', 'whole'],
    ['the file part cut short', 'multipart/form-data; boundary=b', 'cut'],
  ])('refuses a multipart body with %s with 400, leaving neither row nor bytes', async (_what, contentType, shape) => {
    const path = `unreadable-${shape}-${contentType.length}.txt`;
    const part = '--b\r\ncontent-disposition: form-data; name="file"; filename="x.txt"\r\ncontent-type: text/plain\r\n\r\nhello wor';
    const answer = await call('POST', `${objects('docs')}?path=${path}`, { headers: { ...operator(), 'content-type': contentType }, raw: shape === 'whole' ? `${part}ld\r\n--b--\r\n` : part });
    expect(answer.status, answer.text).toBe(400);
    expect(answer.body).toMatchObject({ code: 'invalid_request', message: 'the multipart body could not be read' });
    expect(await rowOf('docs', path)).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'docs', path))).toBeUndefined();
  });

  it('refuses a multipart body with more fields than an upload takes with 413 saying so, leaving neither row nor bytes', async () => {
    const fields = Array.from({ length: 25 }, (_, i) => `--b\r\ncontent-disposition: form-data; name="f${i}"\r\n\r\nv\r\n`).join('');
    const file = '--b\r\ncontent-disposition: form-data; name="file"; filename="x.txt"\r\ncontent-type: text/plain\r\n\r\nhello\r\n--b--\r\n';
    const answer = await call('POST', `${objects('docs')}?path=many-fields.txt`, { headers: { ...operator(), 'content-type': 'multipart/form-data; boundary=b' }, raw: fields + file });
    expect(answer.status, answer.text).toBe(413);
    expect(answer.body).toMatchObject({ code: 'payload_too_large', message: 'the multipart body has more parts than an upload takes' });
    expect(await rowOf('docs', 'many-fields.txt')).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'docs', 'many-fields.txt'))).toBeUndefined();
  });

  // The bucket's rules are read in the same round trip as the caller's claim of the path, which fails too in these
  // cases (no policy lets anon or alice insert there; the path is taken): the bucket's answer must still come first.
  it('answers a missing bucket (404) and a refused content type (400) before the caller\'s policies or a taken path', async () => {
    for (const headers of [p.anon, asUser(alice)]) {
      const missing = await upload('nope', 'x.txt', 'x', headers);
      expect([missing.status, missing.body.message]).toEqual([404, 'bucket not found']);
      const refusedType = await upload('pics', 'refused.txt', 'x', headers, { type: 'text/plain' });
      expect([refusedType.status, refusedType.body.code]).toEqual([400, 'mime_type_not_allowed']);
      expect((await call('GET', objects('nope'), { headers })).status).toBe(404);
      expect((await call('DELETE', objects('nope'), { headers, body: { paths: ['x.txt'] } })).status).toBe(404);
    }
    expect((await upload('pics', 'taken.png', 'x', operator(), { type: 'image/png' })).status).toBe(201);
    const takenAndRefused = await upload('pics', 'taken.png', 'x', operator(), { type: 'text/plain' });
    expect([takenAndRefused.status, takenAndRefused.body.code]).toEqual([400, 'mime_type_not_allowed']);
    // And the refusals left the policies' verdict where it was: anon still may not write to a bucket that exists.
    expect((await upload('docs', 'anon.txt', 'x', p.anon)).status).toBe(401);
  });
});


const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


describe('the bucket\'s rules as an upload publishes', () => {
  it('are read again: a size limit lowered while the bytes came refuses them (413), nothing kept, the old object whole', async () => {
    await createBucket(p, { name: 'shrinking' });
    const before = await upload('shrinking', 'grow.txt', 'the old bytes', operator());
    expect(before.status).toBe(201);
    const boundary = `shrink${Date.now()}`;
    const encoder = new TextEncoder();
    let lowered!: () => void;
    const loweredYet = new Promise<void>((resolve) => { lowered = resolve; });
    let step = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (step === 0) controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="grow.txt"\r\nContent-Type: text/plain\r\n\r\n${'x'.repeat(500)}`));
        else {
          await loweredYet;
          controller.enqueue(encoder.encode(`${'y'.repeat(500)}\r\n--${boundary}--\r\n`));
          controller.close();
        }
        step += 1;
      },
    });
    const answer = fetch(new URL(`${objects('shrinking')}?path=grow.txt&upsert=true`, inject('baseUrl')), {
      method: 'POST', headers: { ...operator(), 'content-type': `multipart/form-data; boundary=${boundary}` }, body, duplex: 'half',
    } as RequestInit);
    await sleep(300);
    // The product changes a bucket's limit only by deleting and creating it again; the test sets it in place.
    await tenant.client.query("update storage.buckets set file_size_limit = 800 where name = 'shrinking'");
    lowered();
    const response = await answer;
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 'payload_too_large', details: { maxBytes: 800 } });
    expect(await rowOf('shrinking', 'grow.txt')).toMatchObject({ size: String('the old bytes'.length), etag: before.body.etag });
    const stored = await fetchBytes(`${objects('shrinking')}/download?path=grow.txt`, operator());
    expect(stored.bytes.toString()).toBe('the old bytes');
  });
});

describe('an object\'s time', () => {
  it('is when its bytes were stored, not when its upload began', async () => {
    const boundary = `slow${Date.now()}`;
    const encoder = new TextEncoder();
    let lastChunkAt = 0;
    let step = 0;
    // Five parts of the body a quarter of a second apart: the upload takes about a second.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (step === 0) controller.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`));
        else if (step <= 4) {
          await sleep(250);
          controller.enqueue(encoder.encode(`part ${step}\n`));
        } else {
          lastChunkAt = Date.now();
          controller.enqueue(encoder.encode(`\r\n--${boundary}--\r\n`));
          controller.close();
        }
        step += 1;
      },
    });
    const began = Date.now();
    const response = await fetch(new URL(`${objects('docs')}?path=slow.txt&upsert=true`, inject('baseUrl')), {
      method: 'POST', headers: { ...operator(), 'content-type': `multipart/form-data; boundary=${boundary}` }, body, duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(201);
    const stored = Date.parse(((await response.json()) as { updatedAt: string }).updatedAt);
    expect(lastChunkAt - began).toBeGreaterThanOrEqual(900);
    // The database's clock is this machine's; a few milliseconds of rounding aside, the time follows the last byte.
    expect(stored).toBeGreaterThanOrEqual(lastChunkAt - 5);
    const listed = await call<{ objects: Array<{ path: string; updatedAt: string }> }>('GET', objects('docs'), { headers: operator() });
    expect(Date.parse(listed.body.objects.find((o) => o.path === 'slow.txt')!.updatedAt)).toBe(stored);
  });
});

describe('uploading to an S3 server that stops taking the bytes', () => {
  // The stack's own versitygw, paused with SIGSTOP mid-upload; the tests' stack gives up a stalled upload after 8 s (global-setup.ts).
  it.runIf(onStackS3())(
    'answers 503 storage_unavailable after the stall timeout, keeps no row, and leaves no object nor multipart upload', async () => {
      const objectPath = 'stalled/big.bin';
      const key = objectKey(p.project.id, 'docs', objectPath);
      const multipartUploads = () => s3MultipartUploads(key);
      const pid = processWithArgument(s3BucketsDir(inject('dataDir')));
      // A 16 MiB file part sent at ~16 MiB/s, so that the multipart upload exists well before its end.
      const boundary = `stall${Date.now()}`;
      const block = new Uint8Array(64 * 1024).fill(9);
      let sent = -1;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent < 0) {
            controller.enqueue(new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`));
            sent = 0;
          } else if (sent >= 16 * 1024 * 1024) {
            controller.enqueue(new TextEncoder().encode(`\r\n--${boundary}--\r\n`));
            controller.close();
          } else {
            await sleep(4);
            controller.enqueue(block);
            sent += block.length;
          }
        },
      });
      const answer = fetch(new URL(`${objects('docs')}?path=${encodeURIComponent(objectPath)}`, inject('baseUrl')), {
        method: 'POST',
        headers: { ...operator(), 'content-type': `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: 'half',
      } as RequestInit);
      while ((await multipartUploads()) === 0) await sleep(20);
      process.kill(pid, 'SIGSTOP');
      try {
        const started = Date.now();
        const response = await answer;
        expect(response.status).toBe(503);
        expect(await response.json()).toEqual({
          code: 'storage_unavailable', message: 'the object store made no progress on the upload for 8 s', details: null, hint: 'try again shortly',
        });
        // The stall timeout, plus the 3 s the SDK waits before it arms a socket timeout of 6 s or more (11-19 s seen).
        expect(Date.now() - started).toBeLessThan(30_000);
        expect(await rowOf('docs', objectPath)).toBeUndefined();
        // And an operator watching the logs hears of it: a warning naming the code and the route, no query. The line
        // reaches the log file through the stack's pipe, which may lag behind the answer (expect.poll waits 1 s unless told).
        await expect.poll(async () => (await serviceLogLines('data-plane')).filter((line) => /"level":40/.test(line) && line.includes('"code":"storage_unavailable"')
          && line.includes('made no progress on the upload') && line.includes('"route":"/api/projects/:projectId/storage/buckets/:bucket/objects"')).length,
        { timeout: 10_000 }).toBeGreaterThan(0);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      const deadline = Date.now() + 20_000;
      while ((await multipartUploads()) > 0 && Date.now() < deadline) await sleep(200);
      expect(await multipartUploads()).toBe(0);
      expect(await store.head(key)).toBeUndefined();
    },
    60_000,
  );
});

describe('listing', () => {
  beforeAll(async () => {
    for (const path of ['tree/a.txt', 'tree/sub/b.txt', 'tree/sub/c.txt', 'tree/z.txt', 'tree/other/d.txt', 'treetop.txt']) {
      const answer = await upload('docs', path, path, operator());
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    }
  });

  it('shows the objects directly under a prefix and the folders below it', async () => {
    const answer = await call('GET', `${objects('docs')}?prefix=tree/`, { headers: operator() });
    expect(answer.status).toBe(200);
    expect(answer.body.objects.map((o: any) => o.path)).toEqual(['tree/a.txt', 'tree/z.txt']);
    expect(answer.body.prefixes).toEqual(['tree/other/', 'tree/sub/']);
    expect(answer.body.objects[0]).toEqual({ path: 'tree/a.txt', size: 10, contentType: 'text/plain', etag: expect.any(String), updatedAt: expect.any(String), owner: null });
  });

  it('takes a prefix that ends mid-name, as S3 does', async () => {
    const answer = await call('GET', `${objects('docs')}?prefix=tree`, { headers: operator() });
    expect(answer.body.objects.map((o: any) => o.path)).toEqual(['treetop.txt']);
    expect(answer.body.prefixes).toEqual(['tree/']);
  });

  it('pages folders and objects together with limit and offset', async () => {
    const first = await call('GET', `${objects('docs')}?prefix=tree/&limit=3`, { headers: operator() });
    const rest = await call('GET', `${objects('docs')}?prefix=tree/&limit=3&offset=3`, { headers: operator() });
    const names = (page: any) => [...page.objects.map((o: any) => o.path), ...page.prefixes].sort();
    expect(names(first.body)).toEqual(['tree/a.txt', 'tree/other/', 'tree/sub/']);
    expect(names(rest.body)).toEqual(['tree/z.txt']);
  });

  it('refuses a bad limit and an unknown bucket', async () => {
    expect((await call('GET', `${objects('docs')}?limit=5000`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}?limit=abc`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', objects('nope'), { headers: operator() })).status).toBe(404);
  });
});

describe('downloading', () => {
  const body = '0123456789abcdefghij';
  beforeAll(async () => {
    expect((await upload('docs', 'digits.txt', body, operator(), { type: 'text/plain; charset=utf-8' })).status).toBe(201);
  });

  it('answers the bytes with their stored content type and etag', async () => {
    const answer = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, operator());
    expect(answer.status).toBe(200);
    expect(answer.bytes.toString()).toBe(body);
    // The multipart parser (busboy) reads the part's type without its parameters.
    expect(answer.headers.get('content-type')).toBe('text/plain');
    expect(answer.headers.get('accept-ranges')).toBe('bytes');
    expect(answer.headers.get('etag')).toMatch(/^".+"$/);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('honours Range: a span, an open end and a suffix (206), and one past the end (416)', async () => {
    const span = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=2-5' });
    expect(span.status).toBe(206);
    expect(span.bytes.toString()).toBe('2345');
    expect(span.headers.get('content-range')).toBe('bytes 2-5/20');
    const open = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=15-' });
    expect(open.bytes.toString()).toBe('fghij');
    const suffix = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=-3' });
    expect(suffix.bytes.toString()).toBe('hij');
    const past = await fetchBytes(`${objects('docs')}/download?path=digits.txt`, { ...operator(), range: 'bytes=50-60' });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */20');
  });

  it('answers HEAD with the headers a GET has (its length too) and no body, at the download, public and signed URLs', async () => {
    const signed = await call('GET', `${objects('docs')}/url?path=digits.txt`, { headers: operator() });
    expect((await upload('pics', 'head.png', Buffer.alloc(7, 1), operator(), { type: 'image/png' })).status).toBe(201);
    for (const [url, headers, length] of [
      [`${objects('docs')}/download?path=digits.txt`, operator(), '20'],
      [local(signed.body.url), {}, '20'],
      [`/storage/v1/object/public/${p.project.id}/pics/head.png`, {}, '7'],
    ] as const) {
      const response = await fetch(new URL(url, inject('baseUrl')), { method: 'HEAD', headers });
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-length'), url).toBe(length);
      expect(response.headers.get('etag'), url).toMatch(/^".+"$/);
      expect((await response.arrayBuffer()).byteLength).toBe(0);
    }
    const ranged = await fetch(new URL(`${objects('docs')}/download?path=digits.txt`, inject('baseUrl')), { method: 'HEAD', headers: { ...operator(), range: 'bytes=2-5' } });
    expect([ranged.status, ranged.headers.get('content-length'), ranged.headers.get('content-range')]).toEqual([206, '4', 'bytes 2-5/20']);
  });

  it('answers a conditional GET whose copy is current with 304 and no body, and a changed object whole', async () => {
    expect((await upload('docs', 'cached.txt', 'first', operator())).status).toBe(201);
    const url = `${objects('docs')}/download?path=cached.txt`;
    const first = await fetchBytes(url, operator());
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    const validatorSets: Record<string, string>[] = [{ 'if-none-match': etag }, { 'if-none-match': `"other", W/${etag}` }, { 'if-none-match': '*' }, { 'if-modified-since': lastModified }];
    for (const validators of validatorSets) {
      const again = await fetchBytes(url, { ...operator(), ...validators });
      expect([again.status, again.bytes.length, again.headers.get('etag')], JSON.stringify(validators)).toEqual([304, 0, etag]);
      expect(again.headers.get('cache-control')).toBe('private, no-cache');
    }
    // If-None-Match decides when both are sent.
    expect((await fetchBytes(url, { ...operator(), 'if-none-match': '"other"', 'if-modified-since': lastModified })).status).toBe(200);
    expect((await fetchBytes(url, { ...operator(), 'if-modified-since': new Date(Date.parse(lastModified) - 1000).toUTCString() })).status).toBe(200);
    expect((await upload('docs', 'cached.txt', 'second', operator(), { upsert: true })).status).toBe(201);
    const changed = await fetchBytes(url, { ...operator(), 'if-none-match': etag });
    expect([changed.status, changed.bytes.toString()]).toEqual([200, 'second']);
    // The caller's rights are checked first: a stranger learns nothing from a matching tag.
    expect((await fetchBytes(url, { ...p.anon, 'if-none-match': '*' })).status).toBe(404);
  });

  it('honours If-Range at the download, signed and public URLs: the range for the current tag or date, the whole object otherwise', async () => {
    expect((await upload('docs', 'resumed.txt', body, operator())).status).toBe(201);
    expect((await upload('pics', 'resumed.png', body, operator(), { type: 'image/png' })).status).toBe(201);
    const signed = await call('GET', `${objects('docs')}/url?path=resumed.txt`, { headers: operator() });
    for (const [url, headers] of [
      [`${objects('docs')}/download?path=resumed.txt`, operator()],
      [local(signed.body.url), {}],
      [`/storage/v1/object/public/${p.project.id}/pics/resumed.png`, {}],
    ] as const) {
      const first = await fetchBytes(url, headers);
      const etag = first.headers.get('etag')!;
      const lastModified = first.headers.get('last-modified')!;
      const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
      const answers = async (validators: Record<string, string>) => {
        const answer = await fetchBytes(url, { ...headers, ...validators });
        return [answer.status, answer.bytes.toString(), answer.headers.get('content-range')];
      };
      const span = [206, '2345', 'bytes 2-5/20'];
      const whole = [200, body, null];
      const cases: [Record<string, string>, unknown[]][] = [
        [{ range: 'bytes=2-5', 'if-range': etag }, span],
        [{ range: 'bytes=2-5', 'if-range': lastModified }, span],
        // A weak tag never matches, even of this very object; another tag or an earlier date names another version.
        [{ range: 'bytes=2-5', 'if-range': `W/${etag}` }, whole],
        [{ range: 'bytes=2-5', 'if-range': '"other"' }, whole],
        [{ range: 'bytes=2-5', 'if-range': earlier }, whole],
        // A range that cannot be satisfied is set aside too when If-Range does not hold: 200, not 416.
        [{ range: 'bytes=50-60', 'if-range': '"other"' }, whole],
        [{ range: 'bytes=50-60', 'if-range': etag }, [416, expect.any(String), 'bytes */20']],
        // If-None-Match is evaluated first (RFC 9110 §13.2.2): a current copy is 304 whatever If-Range says.
        [{ range: 'bytes=2-5', 'if-range': '"other"', 'if-none-match': etag }, [304, '', null]],
        [{ range: 'bytes=2-5', 'if-range': etag, 'if-none-match': '"other"' }, span],
        // Without a Range, If-Range means nothing.
        [{ 'if-range': '"other"' }, whole],
      ];
      for (const [validators, expected] of cases) {
        expect(await answers(validators), `${url} ${JSON.stringify(validators)}`).toEqual(expected);
      }
    }
    // Replaced, the object no longer answers a range to its old tag: the new bytes come whole.
    const url = `${objects('docs')}/download?path=resumed.txt`;
    const oldTag = (await fetchBytes(url, operator())).headers.get('etag')!;
    expect((await upload('docs', 'resumed.txt', 'replaced, twenty byt', operator(), { upsert: true })).status).toBe(201);
    const replaced = await fetchBytes(url, { ...operator(), range: 'bytes=2-5', 'if-range': oldTag });
    expect([replaced.status, replaced.bytes.toString()]).toEqual([200, 'replaced, twenty byt']);
  });

  it('answers 404 for an object that does not exist', async () => {
    const answer = await call('GET', `${objects('docs')}/download?path=missing.txt`, { headers: operator() });
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe('not_found');
  });
});

describe('signed and public URLs', () => {
  beforeAll(async () => {
    expect((await upload('docs', 'secret/plan.txt', 'the plan', operator())).status).toBe(201);
    expect((await upload('pics', 'cat.png', Buffer.from([1, 2, 3]), operator(), { type: 'image/png' })).status).toBe(201);
  });

  it('hands out a signed URL that reads the object without any key, until it expires', async () => {
    const signed = await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=60`, { headers: operator() });
    expect(signed.status).toBe(200);
    expect(signed.body.url).toContain(`/storage/v1/object/sign/${p.project.id}/docs/secret/plan.txt?token=`);
    expect(Date.parse(signed.body.expiresAt) - Date.now()).toBeGreaterThan(50_000);
    const read = await fetchBytes(local(signed.body.url));
    expect(read.status).toBe(200);
    expect(read.bytes.toString()).toBe('the plan');
    const ranged = await fetchBytes(local(signed.body.url), { range: 'bytes=4-' });
    expect(ranged.bytes.toString()).toBe('plan');
  });

  it('refuses a tampered token, a token used for another object, and an expired one', async () => {
    // Four seconds: the refusals below must come before it expires, on a slow machine too (one second was not always enough).
    const signed = await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=4`, { headers: operator() });
    const url = local(signed.body.url);
    const token = new URL(signed.body.url).searchParams.get('token')!;
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    const tampered = await call('GET', url.replace(token, flipped));
    expect(tampered.status).toBe(403);
    expect(tampered.body.code).toBe('invalid_signature');
    const elsewhere = await call('GET', url.replace('secret/plan.txt', 'notes.txt'));
    expect(elsewhere.status).toBe(403);
    expect((await call('GET', url.split('?')[0]!)).status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(signed.body.expiresAt) - Date.now()) + 1100));
    const expired = await call('GET', url);
    expect(expired.status).toBe(400);
    expect(expired.body.code).toBe('url_expired');
  });

  it('refuses expiresIn outside 1 s to 7 days, and a signed URL for an object that does not exist', async () => {
    expect((await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=0`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}/url?path=secret/plan.txt&expiresIn=604801`, { headers: operator() })).status).toBe(400);
    expect((await call('GET', `${objects('docs')}/url?path=nothing.txt`, { headers: operator() })).status).toBe(404);
  });

  it('serves a public bucket at the public URL to anyone, and never a private one', async () => {
    const cat = await fetchBytes(`/storage/v1/object/public/${p.project.id}/pics/cat.png`);
    expect(cat.status).toBe(200);
    expect([...cat.bytes]).toEqual([1, 2, 3]);
    expect(cat.headers.get('content-type')).toBe('image/png');
    const privateOne = await call('GET', `/storage/v1/object/public/${p.project.id}/docs/secret/plan.txt`);
    expect(privateOne.status).toBe(404);
    expect(privateOne.text).not.toContain('the plan');
    expect((await call('GET', `/storage/v1/object/public/${p.project.id}/pics/missing.png`)).status).toBe(404);
  });

  it('follows the bucket toggle: made public the bucket is served, made private again it is not', async () => {
    const url = `/storage/v1/object/public/${p.project.id}/docs/secret/plan.txt`;
    expect((await call('PATCH', `/api/projects/${p.project.id}/storage/buckets/docs`, { headers: operator(), body: { public: true } })).status).toBe(200);
    expect((await fetchBytes(url)).bytes.toString()).toBe('the plan');
    expect((await call('PATCH', `/api/projects/${p.project.id}/storage/buckets/docs`, { headers: operator(), body: { public: false } })).status).toBe(200);
    expect((await call('GET', url)).status).toBe(404);
  });
});

describe('deleting', () => {
  it('deletes many paths at once, answering those it deleted, rows and bytes gone', async () => {
    for (const path of ['trash/1.txt', 'trash/2.txt']) expect((await upload('docs', path, 'bye', operator())).status).toBe(201);
    const answer = await call('DELETE', objects('docs'), { headers: operator(), body: { paths: ['trash/1.txt', 'trash/2.txt', 'trash/never.txt'] } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ deleted: ['trash/1.txt', 'trash/2.txt'] });
    expect(await rowOf('docs', 'trash/1.txt')).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'docs', 'trash/2.txt'))).toBeUndefined();
  });

  // The file holding an object in the services' store: the fs store's, or the embedded versitygw's (posix backend).
  const storedFile = (key: string) => {
    const config = loadConfig(process.env);
    return config.storageBackend === 'fs'
      ? objectFile(layoutOf(path.join(inject('dataDir'), FS_STORAGE_DIR)).objects, key)
      : path.join(s3BucketsDir(inject('dataDir')), config.s3.bucket, key);
  };

  // An immutable file (chattr +i) is one the store really cannot delete: versitygw answers its key in DeleteObjects' Errors.
  it.skipIf(servicesBackend() === 's3' && loadConfig(process.env).s3.endpoint !== undefined)(
    'keeps the row and bytes of an object the store refuses to delete, deletes the others and answers only those', async () => {
      const paths = ['stuck/1.txt', 'stuck/2.txt', 'stuck/3.txt'];
      for (const path of paths) expect((await upload('docs', path, 'kept?', operator())).status).toBe(201);
      const file = storedFile(objectKey(p.project.id, 'docs', 'stuck/2.txt'));
      execFileSync('chattr', ['+i', file]);
      let answer;
      try {
        answer = await call('DELETE', objects('docs'), { headers: operator(), body: { paths } });
      } finally {
        execFileSync('chattr', ['-i', file]);
      }
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toEqual({ deleted: ['stuck/1.txt', 'stuck/3.txt'] });
      expect(await rowOf('docs', 'stuck/1.txt')).toBeUndefined();
      expect(await rowOf('docs', 'stuck/3.txt')).toBeUndefined();
      expect(await store.head(objectKey(p.project.id, 'docs', 'stuck/1.txt'))).toBeUndefined();
      expect(await store.head(objectKey(p.project.id, 'docs', 'stuck/3.txt'))).toBeUndefined();
      // The refused one is still whole: row, bytes, listing, download.
      expect(await rowOf('docs', 'stuck/2.txt')).toMatchObject({ size: '5', etag: etagOf('kept?') });
      const listed = await call('GET', `${objects('docs')}?prefix=stuck/`, { headers: operator() });
      expect(listed.body.objects.map((object: { path: string }) => object.path)).toEqual(['stuck/2.txt']);
      const download = await fetchBytes(`${objects('docs')}/download?path=stuck/2.txt`, operator());
      expect([download.status, download.bytes.toString()]).toEqual([200, 'kept?']);
      // Once the store lets go, deleting it again finishes the job.
      const again = await call('DELETE', objects('docs'), { headers: operator(), body: { paths: ['stuck/2.txt'] } });
      expect(again.body).toEqual({ deleted: ['stuck/2.txt'] });
      expect(await rowOf('docs', 'stuck/2.txt')).toBeUndefined();
      expect(await store.head(objectKey(p.project.id, 'docs', 'stuck/2.txt'))).toBeUndefined();
    },
  );

  it('refuses an empty or malformed body', async () => {
    expect((await call('DELETE', objects('docs'), { headers: operator(), body: { paths: [] } })).status).toBe(400);
    expect((await call('DELETE', objects('docs'), { headers: operator(), body: { path: 'x' } })).status).toBe(400);
    expect((await call('DELETE', objects('docs'), { headers: operator(), body: { paths: ['../x'] } })).status).toBe(400);
  });
});

describe('access under RLS', () => {
  const own = (user: { id: string }, name: string) => `${user.id}/${name}`;

  it('lets a user upload into their own folder, recorded as theirs, and nowhere else', async () => {
    const mine = await upload('avatars', own(alice, 'me.png'), 'alice face', asUser(alice), { type: 'image/png' });
    expect(mine.status, JSON.stringify(mine.body)).toBe(201);
    expect(mine.body.owner).toBe(alice.id);
    const theirs = await upload('avatars', own(bob, 'me.png'), 'not bob', asUser(alice), { type: 'image/png' });
    expect(theirs.status).toBe(403);
    expect(theirs.body.code).toBe('42501');
    expect(await rowOf('avatars', own(bob, 'me.png'))).toBeUndefined();
    expect(await store.head(objectKey(p.project.id, 'avatars', own(bob, 'me.png')))).toBeUndefined();
  });

  it('refuses anon writes (401) and shows anon nothing where no policy lets it', async () => {
    const anon = await upload('avatars', 'anon.png', 'x', p.anon, { type: 'image/png' });
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe('42501');
    const list = await call('GET', `${objects('docs')}?prefix=`, { headers: p.anon });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ objects: [], prefixes: [] });
    expect((await call('GET', `${objects('docs')}/download?path=service.txt`, { headers: p.anon })).status).toBe(404);
  });

  it("keeps a user out of another's objects: list, download, signed URL, overwrite and delete", async () => {
    const prefix = `${alice.id}/`;
    const bobsView = await call('GET', `${objects('avatars')}?prefix=${prefix}`, { headers: asUser(bob) });
    expect(bobsView.body.objects).toEqual([]);
    const alicesView = await call('GET', `${objects('avatars')}?prefix=${prefix}`, { headers: asUser(alice) });
    expect(alicesView.body.objects.map((o: any) => o.path)).toEqual([own(alice, 'me.png')]);
    expect((await call('GET', `${objects('avatars')}/download?path=${own(alice, 'me.png')}`, { headers: asUser(bob) })).status).toBe(404);
    expect((await call('GET', `${objects('avatars')}/url?path=${own(alice, 'me.png')}`, { headers: asUser(bob) })).status).toBe(404);
    const overwrite = await upload('avatars', own(alice, 'me.png'), 'bob was here', asUser(bob), { type: 'image/png', upsert: true });
    expect(overwrite.status).toBeGreaterThanOrEqual(400);
    const removed = await call('DELETE', objects('avatars'), { headers: asUser(bob), body: { paths: [own(alice, 'me.png')] } });
    expect(removed.body).toEqual({ deleted: [] });
    const still = await fetchBytes(`${objects('avatars')}/download?path=${own(alice, 'me.png')}`, asUser(alice));
    expect(still.bytes.toString()).toBe('alice face');
  });

  it('lets the owner replace and delete their own object', async () => {
    const replaced = await upload('avatars', own(alice, 'me.png'), 'new face', asUser(alice), { type: 'image/png', upsert: true });
    expect(replaced.status).toBe(201);
    const removed = await call('DELETE', objects('avatars'), { headers: asUser(alice), body: { paths: [own(alice, 'me.png')] } });
    expect(removed.body).toEqual({ deleted: [own(alice, 'me.png')] });
  });

  it('refuses keys and tokens of another project, tampered tokens and operators of another team', async () => {
    const otherUser = await signUpUser(other);
    expect((await call('GET', objects('docs'), { headers: other.anon })).body.code).toBe('invalid_api_key');
    expect((await call('GET', objects('docs'), { headers: other.service })).status).toBe(401);
    const foreignToken = await call('GET', objects('docs'), { headers: { ...p.anon, ...bearer(otherUser.token) } });
    expect(foreignToken.status).toBe(401);
    expect(foreignToken.body.code).toBe('invalid_token');
    const tampered = await call('GET', objects('docs'), { headers: { ...p.anon, ...bearer(`${alice.token.slice(0, -4)}AAAA`) } });
    expect(tampered.status).toBe(401);
    const outsider = await call('GET', objects('docs'), { headers: bearer(stranger.token) });
    expect(outsider.status).toBe(404);
    expect((await call('GET', objects('docs'), {})).status).toBe(401);
    expect((await call('GET', objects('docs', 'not-a-uuid'), { headers: operator() })).status).toBe(400);
  });

  it("isolates projects' objects: the same bucket name and path in another project is another object", async () => {
    expect((await upload('docs', 'shared-name.txt', 'mine', operator())).status).toBe(201);
    const theirs = await call('GET', `${objects('docs', other.project.id)}/download?path=shared-name.txt`, { headers: bearer(other.operator.token) });
    expect(theirs.status).toBe(404);
    expect((await call('GET', `${objects('docs', other.project.id)}/download?path=shared-name.txt`, { headers: operator() })).status).toBe(404);
  });
});

describe('operator scope', () => {
  it('a second project of the same team is reachable by its operator', async () => {
    const second = await createProject(p.operator, 'second');
    const answer = await call('POST', `/api/projects/${second.id}/storage/buckets`, { headers: operator(), body: { name: 'files' } });
    expect(answer.status).toBe(201);
    expect((await call('GET', objects('files', second.id), { headers: operator() })).body).toEqual({ objects: [], prefixes: [] });
  });
});
