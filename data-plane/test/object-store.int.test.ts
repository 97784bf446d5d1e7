/**
 * The object stores against real storage: one suite, run on the fs store in a
 * temp directory and on the S3 store against the stack's real S3 server
 * (versitygw). Both must behave the same, down to what a failed upload leaves.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { createFsObjectStore, openS3ObjectStore, type ByteRange, type ObjectStore } from '@baseplane/contracts/object-store';
import { layoutOf, objectFile } from '../../contracts/src/object-store/fs-layout';
import { BLOCK_BYTES, Sha256Digest, stopHashingThread, uploadsBeingHashed } from '../../contracts/src/object-store/sha256-thread';
import { resolveS3ServerBin, s3BucketsDir, startS3Server } from '../../deploy/local/src/s3-server';
import { createStackLog } from '../../deploy/local/src/stack-log';
import { processWithArgument } from '../../deploy/test/processes';

const MiB = 1024 * 1024;
/** Most resident memory a 50 MiB transfer may add: well under the object, above the garbage-collection noise. */
const MEMORY_BUDGET = 32 * MiB;

/** A backend opened for this suite: the store, its clean-up, and what it still holds of failed uploads. */
interface OpenedBackend {
  store: ObjectStore;
  cleanUp: () => Promise<void>;
  /** Unfinished uploads left in the backend: temp files on fs, multipart uploads on S3. */
  leftoverUploads: () => Promise<number>;
  /** The file holding the object at `key`: the fs store's own, or versitygw's (its posix backend). */
  fileOf: (key: string) => string;
}

/**
 * Makes the file of an object immutable (`chattr +i`, root on ext4 and the like) while `work` runs, so
 * that the backend really fails to delete it: on S3, versitygw then answers the key in DeleteObjects' Errors.
 */
async function undeletable<T>(file: string, work: () => Promise<T>): Promise<T> {
  execFileSync('chattr', ['+i', file]);
  try {
    return await work();
  } finally {
    execFileSync('chattr', ['-i', file]);
  }
}

const backends: [string, () => Promise<OpenedBackend>][] = [
  [
    'fs',
    async () => {
      const root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-objects-'));
      return {
        store: createFsObjectStore(root),
        cleanUp: () => rm(root, { recursive: true, force: true }),
        leftoverUploads: async () => (await readdir(path.join(root, 'uploads')).catch(() => [])).length,
        fileOf: (key) => objectFile(layoutOf(path.resolve(root)).objects, key),
      };
    },
  ],
  [
    's3',
    async () => {
      const s3 = inject('s3');
      const bucket = `test-${randomUUID().slice(0, 8)}`;
      const store = await openS3ObjectStore({ ...s3, forcePathStyle: true, bucket });
      const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: s3 });
      return {
        store,
        cleanUp: async () => client.destroy(),
        leftoverUploads: async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0,
        fileOf: (key) => path.join(s3BucketsDir(inject('dataDir')), bucket, key),
      };
    },
  ],
];

/** Collects a stream into one buffer (small objects only). */
async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `size` deterministic pseudo-random bytes in 64 KiB chunks, made as they are read. */
function generated(size: number): { stream: Readable; md5: string } {
  const block = randomBytes(64 * 1024);
  const hash = createHash('md5');
  for (let sent = 0; sent < size; sent += block.length) hash.update(block.subarray(0, Math.min(block.length, size - sent)));
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const chunk = block.subarray(0, Math.min(block.length, size - sent));
      sent += chunk.length;
      // The same never-modified block each time: the source itself makes no garbage, so the
      // memory measured below is what the store holds.
      this.push(chunk);
    },
  });
  return { stream, md5: hash.digest('hex') };
}

/** A body that sends `bytes` and then fails, like a client connection dropped mid-upload. */
function failingAfter(bytes: number): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(Buffer.alloc(bytes, 7));
        return;
      }
      this.destroy(new Error('client went away'));
    },
  });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe.each(backends)('%s object store', (kind, open) => {
  /** The etag of a single-part object: the fs store's SHA-256 of the bytes, an S3 server's MD5. */
  const etagOf = (bytes: string) => createHash(kind === 'fs' ? 'sha256' : 'md5').update(bytes).digest('hex');
  let store: ObjectStore;
  let cleanUp: () => Promise<void>;
  let leftoverUploads: () => Promise<number>;
  let fileOf: (key: string) => string;
  // Every key of this suite lives under one prefix, removed at the end.
  const base = `${randomUUID()}/`;
  const key = (name: string) => `${base}${name}`;
  const put = (name: string, text: string, contentType = 'text/plain') =>
    store.put(key(name), Readable.from([Buffer.from(text)]), { contentType });

  beforeAll(async () => {
    ({ store, cleanUp, leftoverUploads, fileOf } = await open());
  });

  afterAll(async () => {
    await store?.deletePrefix(base);
    await store?.close();
    await cleanUp?.();
  });

  it('round-trips bytes, content type, size and etag (the SHA-256 of the bytes on fs, S3\'s MD5); head and get agree', async () => {
    const text = 'hello, object store';
    const stored = await put('round/trip.txt', text, 'text/plain; charset=utf-8');
    expect(stored).toEqual({ size: text.length, etag: etagOf(text) });

    const read = await store.get(key('round/trip.txt'));
    expect((await bytesOf(read.body)).toString()).toBe(text);
    expect(read).toMatchObject({ contentType: 'text/plain; charset=utf-8', size: text.length, etag: stored.etag });
    expect(read.range).toBeUndefined();
    expect(await store.head(key('round/trip.txt'))).toMatchObject({
      key: key('round/trip.txt'),
      size: text.length,
      etag: stored.etag,
      contentType: 'text/plain; charset=utf-8',
    });

    await put('round/trip.txt', 'replaced', 'application/json');
    const again = await store.get(key('round/trip.txt'));
    expect((await bytesOf(again.body)).toString()).toBe('replaced');
    expect(again.contentType).toBe('application/json');
  });

  it('keeps keys with spaces, non-ASCII and URL-special characters', async () => {
    const odd = 'odd names/ä ö €/#?%+&=;,@ [1].txt';
    await put(odd, 'odd');
    expect((await bytesOf((await store.get(key(odd))).body)).toString()).toBe('odd');
    expect((await store.list({ prefix: key('odd names/'), folders: true })).prefixes).toEqual([key('odd names/ä ö €/')]);
    expect((await store.list({ prefix: key('odd names/') })).objects.map((object) => object.key)).toEqual([key(odd)]);
  });

  it('answers 404 for a missing object and undefined from head', async () => {
    expect(await store.head(key('missing'))).toBeUndefined();
    const error = await rejection(store.get(key('missing')));
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('stores an empty object', async () => {
    expect(await put('empty', '')).toMatchObject({ size: 0 });
    const read = await store.get(key('empty'));
    expect((await bytesOf(read.body)).length).toBe(0);
    expect(read.size).toBe(0);
  });

  it.each<[string, ByteRange, string, { start: number; end: number }]>([
    ['start and end', { start: 2, end: 5 }, '2345', { start: 2, end: 5 }],
    ['open end', { start: 7 }, '789', { start: 7, end: 9 }],
    ['end past the object', { start: 8, end: 100 }, '89', { start: 8, end: 9 }],
    ['suffix', { suffixLength: 3 }, '789', { start: 7, end: 9 }],
    ['suffix longer than the object', { suffixLength: 50 }, '0123456789', { start: 0, end: 9 }],
  ])('reads a byte range: %s', async (_name, range, expected, resolved) => {
    await put('ranges', '0123456789');
    const read = await store.get(key('ranges'), range);
    expect((await bytesOf(read.body)).toString()).toBe(expected);
    expect(read.range).toEqual(resolved);
    expect(read.size).toBe(10);
  });

  it('refuses a range starting past the end with 416', async () => {
    await put('ranges', '0123456789');
    for (const range of [{ start: 10 }, { start: 5, end: 2 }]) {
      const error = await rejection(store.get(key('ranges'), range));
      expect(error).toMatchObject({ status: 416, code: 'range_not_satisfiable', details: { size: 10 } });
    }
  });

  it('lists by prefix, with folders, in key order, page by page', async () => {
    for (const name of ['list/a/1.txt', 'list/a/2.txt', 'list/a/sub/3.txt', 'list/ab.txt', 'list/b.txt', 'list/a-z.txt']) {
      await put(name, name);
    }
    const names = (keys: string[]) => keys.map((full) => full.slice(base.length));

    const top = await store.list({ prefix: key('list/'), folders: true });
    expect(names(top.objects.map((object) => object.key))).toEqual(['list/a-z.txt', 'list/ab.txt', 'list/b.txt']);
    expect(names(top.prefixes)).toEqual(['list/a/']);
    expect(top.nextCursor).toBeUndefined();
    expect(top.objects[2]).toMatchObject({ size: 'list/b.txt'.length, etag: etagOf('list/b.txt') });
    expect(top.objects[2]!.updatedAt).toBeInstanceOf(Date);

    const folder = await store.list({ prefix: key('list/a/'), folders: true });
    expect(names(folder.objects.map((object) => object.key))).toEqual(['list/a/1.txt', 'list/a/2.txt']);
    expect(names(folder.prefixes)).toEqual(['list/a/sub/']);

    // A prefix may end mid-name, as in S3.
    const partial = await store.list({ prefix: key('list/a'), folders: true });
    expect(names(partial.objects.map((object) => object.key))).toEqual(['list/a-z.txt', 'list/ab.txt']);
    expect(names(partial.prefixes)).toEqual(['list/a/']);

    const all = await store.list({ prefix: key('list/') });
    const everything = ['list/a-z.txt', 'list/a/1.txt', 'list/a/2.txt', 'list/a/sub/3.txt', 'list/ab.txt', 'list/b.txt'];
    expect(names(all.objects.map((object) => object.key))).toEqual(everything);
    expect(all.prefixes).toEqual([]);

    const paged: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list({ prefix: key('list/'), limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.objects.length).toBeLessThanOrEqual(2);
      paged.push(...page.objects.map((object) => object.key));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(names(paged)).toEqual(everything);

    const pagedFolders: string[] = [];
    cursor = undefined;
    do {
      const page = await store.list({ prefix: key('list/'), folders: true, limit: 1, ...(cursor ? { cursor } : {}) });
      pagedFolders.push(...page.prefixes, ...page.objects.map((object) => object.key));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(names(pagedFolders)).toEqual(['list/a-z.txt', 'list/a/', 'list/ab.txt', 'list/b.txt']);
  });

  it('deletes many keys at once; absent ones are no error', async () => {
    await put('many/1', 'one');
    await put('many/2', 'two');
    await put('many/3', 'three');
    const deleted = await store.deleteMany([key('many/1'), key('many/3'), key('many/never')]);
    expect(deleted).toEqual([key('many/1'), key('many/3'), key('many/never')]);
    expect(await store.head(key('many/1'))).toBeUndefined();
    expect(await store.head(key('many/3'))).toBeUndefined();
    expect(await store.head(key('many/2'))).toMatchObject({ size: 3 });
    const left = await store.list({ prefix: key('many/') });
    expect(left.objects.map((object) => object.key)).toEqual([key('many/2')]);
  });

  it('deletes the keys it can and leaves out of its answer one the backend refuses, which stays', async () => {
    for (const name of ['stuck/1', 'stuck/2', 'stuck/3']) await put(name, name);
    const deleted = await undeletable(fileOf(key('stuck/2')), () => store.deleteMany([key('stuck/1'), key('stuck/2'), key('stuck/3'), key('stuck/never')]));
    expect(deleted).toEqual([key('stuck/1'), key('stuck/3'), key('stuck/never')]);
    expect(await store.head(key('stuck/2'))).toMatchObject({ size: 7 });
    expect(await store.head(key('stuck/1'))).toBeUndefined();
    expect(await store.head(key('stuck/3'))).toBeUndefined();
    expect(await store.deleteMany([key('stuck/2')])).toEqual([key('stuck/2')]);
    expect(await store.head(key('stuck/2'))).toBeUndefined();
  });

  it.runIf(kind === 's3')('fails a prefix delete when a key under it is refused; a later one finishes', async () => {
    for (const name of ['held/1', 'held/2', 'held/3']) await put(name, name);
    const error = await undeletable(fileOf(key('held/2')), () => rejection(store.deletePrefix(key('held/'))));
    expect(String(error)).toMatch(/refused to delete 1 object\(s\) .*held\/2/);
    expect((await store.list({ prefix: key('held/') })).objects.map((object) => object.key)).toEqual([key('held/2')]);
    expect(await store.deletePrefix(key('held/'))).toBe(1);
  });

  it('deletes everything under a folder prefix and nothing beside it', async () => {
    await put('tree/x/1', '1');
    await put('tree/x/deep/2', '2');
    await put('tree/x-sibling', '3');
    await put('tree/y', '4');
    expect(await store.deletePrefix(key('tree/x/'))).toBe(2);
    const left = await store.list({ prefix: key('tree/') });
    expect(left.objects.map((object) => object.key)).toEqual([key('tree/x-sibling'), key('tree/y')]);
    expect(await store.deletePrefix(key('tree/nothing/'))).toBe(0);
    expect((await store.list({ prefix: key('tree/'), folders: true })).prefixes).toEqual([]);
  });

  it('stores an object and a folder of the same name, or refuses the second with 409', async () => {
    await put('clash/a', 'object');
    const outcome = await put('clash/a/b', 'below it').then(
      () => 'stored',
      (error: unknown) => error,
    );
    if (outcome === 'stored') {
      expect((await bytesOf((await store.get(key('clash/a'))).body)).toString()).toBe('object');
      expect((await bytesOf((await store.get(key('clash/a/b'))).body)).toString()).toBe('below it');
    } else {
      expect(outcome).toMatchObject({ status: 409, code: 'already_exists' });
      expect(await store.head(key('clash/a/b'))).toBeUndefined();
    }
    // The fs store keeps both (as S3 does); versitygw's posix backend maps keys to files and cannot.
    expect(outcome === 'stored').toBe(kind === 'fs');
  });

  it('refuses keys no backend can hold, and a prefix delete that is not a folder', async () => {
    for (const bad of ['', '/abs', 'a//b', 'a/../b', 'trailing/', 'nul\u0000', 'x'.repeat(251)]) {
      const error = await rejection(store.put(bad, Readable.from([Buffer.from('x')]), { contentType: 'text/plain' }));
      expect(error, JSON.stringify(bad)).toMatchObject({ status: 400, code: 'invalid_request' });
    }
    expect(await rejection(store.deletePrefix(''))).toMatchObject({ status: 400 });
    expect(await rejection(store.deletePrefix(key('no-slash')))).toMatchObject({ status: 400 });
    expect(await rejection(put('bad-type', 'x', 'not a type'))).toMatchObject({ status: 400 });
    for (const limit of [0, 1001, 1.5]) {
      expect(await rejection(store.list({ prefix: base, limit }))).toMatchObject({ status: 400 });
    }
  });

  it('refuses an upload over maxBytes with 413 and keeps what was there', async () => {
    const tooBig = () => generated(6 * MiB).stream;
    const error = await rejection(store.put(key('limit/new'), tooBig(), { contentType: 'application/octet-stream', maxBytes: MiB }));
    expect(error).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(await store.head(key('limit/new'))).toBeUndefined();

    await put('limit/existing', 'the old bytes');
    await rejection(store.put(key('limit/existing'), tooBig(), { contentType: 'text/plain', maxBytes: 5 * MiB + 1 }));
    expect((await bytesOf((await store.get(key('limit/existing'))).body)).toString()).toBe('the old bytes');
    expect((await store.list({ prefix: key('limit/') })).objects.map((object) => object.key)).toEqual([key('limit/existing')]);
    expect(await leftoverUploads()).toBe(0);
  });

  it('leaves nothing when the upload stream fails, before or after a first multipart part', async () => {
    for (const bytes of [1000, 7 * MiB]) {
      const error = await rejection(store.put(key(`broken/${bytes}`), failingAfter(bytes), { contentType: 'text/plain' }));
      expect(error).toBeInstanceOf(Error);
      expect(await store.head(key(`broken/${bytes}`))).toBeUndefined();
    }
    expect((await store.list({ prefix: key('broken/') })).objects).toEqual([]);
    expect(await leftoverUploads()).toBe(0);
  });

  it('leaves nothing when the upload is aborted through its signal', async () => {
    const controller = new AbortController();
    const { stream } = generated(20 * MiB);
    let seen = 0;
    stream.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > 6 * MiB) controller.abort();
    });
    const error = await rejection(
      store.put(key('aborted'), stream, { contentType: 'application/octet-stream', signal: controller.signal }),
    );
    expect((error as Error).name).toBe('AbortError');
    expect(await store.head(key('aborted'))).toBeUndefined();
    expect(await leftoverUploads()).toBe(0);
  });

  it.each([['of one S3 part', 1000], ['of several S3 parts', 7 * MiB]])(
    'calls publish once, when the whole body %s has arrived and before the new bytes show; a refusal fails the put with it and keeps the old bytes',
    async (_what, size) => {
      const name = `publish/${size}`;
      await put(name, 'the old bytes');
      const seen: Array<{ consumed: boolean; stored: string }> = [];
      const { stream, md5 } = generated(size);
      const stored = await store.put(key(name), stream, {
        contentType: 'application/octet-stream',
        publish: async () => {
          seen.push({ consumed: stream.readableEnded, stored: (await bytesOf((await store.get(key(name))).body)).toString() });
        },
      });
      expect(seen).toEqual([{ consumed: true, stored: 'the old bytes' }]);
      expect(stored.size).toBe(size);
      expect(createHash('md5').update(await bytesOf((await store.get(key(name))).body)).digest('hex')).toBe(md5);

      const refusal = new Error('the path was taken meanwhile');
      let calls = 0;
      const error = await rejection(store.put(key(name), generated(size).stream, {
        contentType: 'application/octet-stream',
        publish: async () => {
          calls += 1;
          throw refusal;
        },
      }));
      expect(error).toBe(refusal);
      expect(calls).toBe(1);
      expect((await store.head(key(name)))?.size).toBe(size);
      expect(createHash('md5').update(await bytesOf((await store.get(key(name))).body)).digest('hex')).toBe(md5);
      expect(await leftoverUploads()).toBe(0);
    },
  );

  it('never calls publish for an upload that fails before its end', async () => {
    let calls = 0;
    const publish = async () => { calls += 1; };
    await rejection(store.put(key('publish/broken'), failingAfter(7 * MiB), { contentType: 'text/plain', publish }));
    await rejection(store.put(key('publish/too-big'), generated(2 * MiB).stream, { contentType: 'text/plain', maxBytes: MiB, publish }));
    expect(calls).toBe(0);
    expect(await leftoverUploads()).toBe(0);
  });

  it('streams a 50 MB object in and out with flat memory', async () => {
    // A smaller multipart transfer first, so that what any first transfer costs (lazily loaded SDK
    // code, the heap's young generation growing to its working size) is not counted as the object's.
    await store.put(key('warm-up.bin'), generated(12 * MiB).stream, { contentType: 'application/octet-stream' });
    for await (const _chunk of (await store.get(key('warm-up.bin'))).body);

    const size = 50 * MiB;
    const { stream, md5 } = generated(size);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      const stored = await store.put(key('big.bin'), stream, { contentType: 'application/octet-stream' });
      expect(stored.size).toBe(size);

      const read = await store.get(key('big.bin'));
      const hash = createHash('md5');
      let received = 0;
      for await (const chunk of read.body) {
        hash.update(chunk as Buffer);
        received += (chunk as Buffer).length;
      }
      expect(received).toBe(size);
      expect(hash.digest('hex')).toBe(md5);
    } finally {
      clearInterval(sampler);
    }
    // A store that held the object would grow by 50 MiB or more. Streaming, this measured 8-21 MiB
    // here on both backends (and 20-33 MiB for 1 GiB): what is left is garbage awaiting collection.
    const growth = peak - before;
    console.log(`[${kind}] 50 MiB through: resident memory grew ${(growth / MiB).toFixed(1)} MiB at most`);
    expect(growth).toBeLessThan(MEMORY_BUDGET);
  });
});

/** Runs `work` on a fresh store root in the temp directory, removed afterwards. */
async function inStoreRoot(work: (root: string) => Promise<void>): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-objects-'));
  try {
    await work(root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

describe('fs object store on disk', () => {
  it('sweeps uploads a killed process left behind, and only stale ones', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-objects-'));
    try {
      await mkdir(path.join(root, 'uploads'));
      const stale = path.join(root, 'uploads', 'stale.part');
      const fresh = path.join(root, 'uploads', 'fresh.part');
      await writeFile(stale, 'half an upload');
      await writeFile(fresh, 'an upload in progress in another replica');
      const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
      await utimes(stale, twoHoursAgo, twoHoursAgo);

      const store = createFsObjectStore(root);
      await store.put('p/b/x', Readable.from([Buffer.from('x')]), { contentType: 'text/plain' });
      await expect.poll(() => readdir(path.join(root, 'uploads'))).toEqual(['fresh.part']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('takes an object\'s time from its header, and from the file for one an earlier release stored without it', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    const before = Date.now();
    await store.put('p/b/new', Readable.from([Buffer.from('new')]), { contentType: 'text/plain' });
    const stored = (await store.head('p/b/new'))!.updatedAt.getTime();
    expect(stored).toBeGreaterThanOrEqual(before);
    expect(stored).toBeLessThanOrEqual(Date.now());
    // The file's own time no longer says anything for it.
    const lastYear = new Date(Date.now() - 365 * 24 * 60 * 60 * 1000);
    const file = path.join(root, 'objects', 'p.d', 'b.d', 'new.o');
    await utimes(file, lastYear, lastYear);
    expect((await store.head('p/b/new'))!.updatedAt.getTime()).toBe(stored);
    const read = await store.get('p/b/new');
    read.body.resume();
    expect(read.updatedAt.getTime()).toBe(stored);

    // An object file as the release before stored it: the header without its time.
    const old = path.join(root, 'objects', 'p.d', 'b.d', 'old.o');
    const header = Buffer.alloc(1024, 0x20);
    Buffer.from(JSON.stringify({ v: 1, contentType: 'text/plain', size: 3, etag: 'abc' })).copy(header);
    await writeFile(old, Buffer.concat([header, Buffer.from('old')]));
    await utimes(old, lastYear, lastYear);
    expect((await store.head('p/b/old'))!.updatedAt.getTime()).toBe(lastYear.getTime());
    const oldRead = await store.get('p/b/old');
    expect((await bytesOf(oldRead.body)).toString()).toBe('old');
    expect(oldRead.updatedAt.getTime()).toBe(lastYear.getTime());
  }));

  it('closes every descriptor it opens: reads to the end, cut short, of ranges, of missing objects, and heads', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    await store.put('p/b/big', Readable.from([Buffer.alloc(3 * 1024 * 1024, 7)]), { contentType: 'application/octet-stream' });
    const open = async () => (await readdir('/proc/self/fd')).length;
    const baseline = await open();
    for (let i = 0; i < 20; i += 1) {
      await bytesOf((await store.get('p/b/big')).body);
      await bytesOf((await store.get('p/b/big', { start: 10, end: 20 })).body);
      const cut = await store.get('p/b/big');
      const closed = new Promise((resolve) => cut.body.once('close', resolve));
      cut.body.once('data', () => cut.body.destroy());
      await closed;
      await store.head('p/b/big');
      await expect(store.get('p/b/missing')).rejects.toMatchObject({ status: 404 });
      await expect(store.get('p/b/big', { start: 10 * 1024 * 1024 })).rejects.toMatchObject({ status: 416 });
    }
    // At most as many as before: the store's first put also started its sweep of old uploads, which may have held a
    // directory open then. A leak would show as one more descriptor for each of the 20 rounds, or more.
    expect(await open()).toBeLessThanOrEqual(baseline);
  }));
});

/** `bytes` cut into chunks of 1 byte to 3 MiB, as a socket or a form parser may hand them over. */
function randomlyChunked(bytes: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length;) {
    const length = Math.min(bytes.length - at, Math.random() < 0.2 ? 1 + Math.floor(Math.random() * 3 * MiB) : 1 + Math.floor(Math.random() * 64 * 1024));
    chunks.push(bytes.subarray(at, at + length));
    at += length;
  }
  return chunks;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('fs object store hashing', () => {
  it('gives the SHA-256 of the bytes as etag in place and on the hashing thread, however the body is cut', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    for (const size of [0, 1, BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1, 3 * BLOCK_BYTES + 17, 9 * BLOCK_BYTES]) {
      const bytes = randomBytes(size);
      const stored = await store.put(`p/b/${size}`, Readable.from(randomlyChunked(bytes)), { contentType: 'application/octet-stream' });
      expect({ size, etag: stored.etag }).toEqual({ size, etag: sha256(bytes) });
      expect(sha256(await bytesOf((await store.get(`p/b/${size}`)).body))).toBe(stored.etag);
    }
    // One chunk of several blocks at once, as a fast socket may give.
    const bytes = randomBytes(5 * BLOCK_BYTES + 3);
    expect((await store.put('p/b/one-chunk', Readable.from([bytes]), { contentType: 'application/octet-stream' })).etag).toBe(sha256(bytes));
    expect(uploadsBeingHashed()).toBe(0);
  }));

  it('hashes several uploads on the thread at once, each on its own', async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => randomBytes(2 * BLOCK_BYTES + i * 1000));
    const digests = bodies.map(() => new Sha256Digest());
    // Interleaved, a chunk of each in turn, as concurrent uploads arrive.
    const chunked = bodies.map(randomlyChunked);
    for (let i = 0; chunked.some((chunks) => i < chunks.length); i += 1) {
      await Promise.all(chunked.map((chunks, j) => (i < chunks.length ? digests[j]!.update(chunks[i]!) : undefined)));
    }
    expect(await Promise.all(digests.map((digest) => digest.digest()))).toEqual(bodies.map(sha256));
  });

  it('makes an upload wait once four of its blocks wait for the thread, rather than queue its body', async () => {
    const digest = new Sha256Digest();
    const block = randomBytes(BLOCK_BYTES);
    // Taken without waiting: the first block stays until a byte after it comes, then each goes as the next comes.
    const answers = Array.from({ length: 8 }, () => digest.update(block));
    expect(answers.map((answer) => answer !== undefined)).toEqual([false, false, false, false, true, true, true, true]);
    await Promise.all(answers);
    expect(await digest.digest()).toBe(sha256(Buffer.concat(Array.from({ length: 8 }, () => block))));
  });

  it('fails the uploads a dead hashing thread was hashing, and hashes the next ones on a new thread', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    let sent = 0;
    // The thread dies once the upload's first blocks have reached it.
    const body = new Readable({
      async read() {
        if (sent === 3) await stopHashingThread();
        if (sent === 6) return void this.push(null);
        sent += 1;
        this.push(randomBytes(BLOCK_BYTES));
      },
    });
    const error = await rejection(store.put('p/b/unhashed', body, { contentType: 'application/octet-stream' }));
    expect((error as Error).message).toBe('the upload could not be hashed');
    expect(await store.head('p/b/unhashed')).toBeUndefined();
    expect(await readdir(path.join(root, 'uploads'))).toEqual([]);
    expect(uploadsBeingHashed()).toBe(0);

    const bytes = randomBytes(3 * BLOCK_BYTES);
    expect((await store.put('p/b/hashed', Readable.from([bytes]), { contentType: 'application/octet-stream' })).etag).toBe(sha256(bytes));
  }));

  it('leaves nothing on the thread, on disk or open of an upload that fails with flushes and blocks in flight', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    await store.put('p/b/first', Readable.from([Buffer.from('x')]), { contentType: 'text/plain' });
    const openDescriptors = async () => (await readdir('/proc/self/fd')).length;
    const baseline = await openDescriptors();
    const failures = [
      // Over 8 MiB each, so that the store has started flushing what it wrote.
      () => store.put('p/b/broken', failingAfter(20 * MiB), { contentType: 'text/plain' }),
      () => store.put('p/b/too-big', generated(30 * MiB).stream, { contentType: 'text/plain', maxBytes: 17 * MiB }),
      () => {
        const controller = new AbortController();
        const { stream } = generated(40 * MiB);
        let seen = 0;
        stream.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > 12 * MiB) controller.abort();
        });
        return store.put('p/b/aborted', stream, { contentType: 'text/plain', signal: controller.signal });
      },
      () => store.put('p/b/refused', generated(20 * MiB).stream, { contentType: 'text/plain', publish: async () => { throw new Error('taken meanwhile'); } }),
    ];
    for (const fail of failures) await rejection(fail());
    expect(uploadsBeingHashed()).toBe(0);
    expect(await readdir(path.join(root, 'uploads'))).toEqual([]);
    expect(await openDescriptors()).toBeLessThanOrEqual(baseline);
    expect((await store.list({ prefix: 'p/b/' })).objects.map((object) => object.key)).toEqual(['p/b/first']);
  }));
});

describe('fs object store permissions', () => {
  it('keeps objects to the service: folders 0700, files 0600, and a looser root made 0700 at its first write', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-objects-'));
    try {
      // A root an earlier release left open to every local user.
      await chmod(root, 0o755);
      const store = createFsObjectStore(root);
      await store.put('p/b/folder/x.txt', Readable.from([Buffer.from('private')]), { contentType: 'text/plain' });
      const entries = [{ name: '.', info: await stat(root) }];
      for (const name of await readdir(root, { recursive: true })) entries.push({ name, info: await stat(path.join(root, name)) });
      expect(entries.filter((entry) => entry.info.isFile())).toHaveLength(1);
      const modes = entries.map(({ name, info }) => ({ name, mode: (info.mode & 0o777).toString(8) }));
      expect(modes).toEqual(entries.map(({ name, info }) => ({ name, mode: info.isFile() ? '600' : '700' })));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('S3 object store opening', () => {
  it('fails with one line naming the bucket and the cause on a bad secret or a dead endpoint', async () => {
    const s3 = inject('s3');
    const badSecret = await rejection(
      openS3ObjectStore({ ...s3, secretAccessKey: 'not-the-secret', forcePathStyle: true, bucket: 'baseplane-test' }),
    );
    expect((badSecret as Error).message).toMatch(/^S3 at http:\/\/127\.0\.0\.1:\d+: cannot use bucket "baseplane-test": 403 SignatureDoesNotMatch/);
    expect((badSecret as Error).message).not.toContain('\n');

    const dead = await rejection(openS3ObjectStore({ ...s3, endpoint: 'http://127.0.0.1:1', forcePathStyle: true, bucket: 'baseplane-test' }));
    expect((dead as Error).message).toMatch(/cannot use bucket "baseplane-test": .*ECONNREFUSED/);
  });
});

describe('S3 object store when its server goes away', () => {
  it('answers every call with ApiError 503 storage_unavailable, not a raw SDK error', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-s3-down-'));
    const log = createStackLog({ quiet: true, logDir: path.join(dataDir, 'logs') });
    const server = await startS3Server({ bin: resolveS3ServerBin(process.env), dataDir, log });
    let store: ObjectStore | undefined;
    try {
      store = await openS3ObjectStore({ ...server, forcePathStyle: true, bucket: 'gone-away' });
      await store.put('p/b/kept.txt', Readable.from([Buffer.from('kept')]), { contentType: 'text/plain' });
      await server.stop();
      const calls: [string, () => Promise<unknown>][] = [
        ['put', () => store!.put('p/b/new.txt', Readable.from([Buffer.from('new')]), { contentType: 'text/plain' })],
        ['get', () => store!.get('p/b/kept.txt')],
        ['get a range', () => store!.get('p/b/kept.txt', { start: 0, end: 0 })],
        ['head', () => store!.head('p/b/kept.txt')],
        ['list', () => store!.list({ prefix: 'p/' })],
        ['deleteMany', () => store!.deleteMany(['p/b/kept.txt'])],
        ['deletePrefix', () => store!.deletePrefix('p/')],
      ];
      for (const [name, call] of calls) {
        const error = await rejection(call());
        expect(error, `${name}: ${String(error)}`).toBeInstanceOf(ApiError);
        expect((error as ApiError).toBody(), name).toMatchObject({ code: 'storage_unavailable', message: expect.any(String) });
        expect((error as ApiError).status, name).toBe(503);
        // What the SDK said goes to the data plane's log as the cause, never into the answer.
        expect((error as ApiError).cause, name).toBeInstanceOf(Error);
        expect(Object.keys((error as ApiError).toBody()), name).toEqual(['code', 'message', 'details', 'hint']);
      }
    } finally {
      await store?.close();
      await server.stop();
      await log.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

/**
 * A TCP relay to the stack's S3 server that can stop answering: accepted connections
 * then get nothing back, as from a server that hangs (a stuck disk, a paused VM).
 */
async function relayTo(endpoint: string): Promise<{ endpoint: string; hang(): void; close(): Promise<void> }> {
  const target = new URL(endpoint);
  const sockets = new Set<net.Socket>();
  let hanging = false;
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (hanging) return;
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    hang() {
      hanging = true;
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('S3 object store when its server hangs', () => {
  it('gives up on a call the server does not answer with ApiError 503 storage_unavailable instead of waiting for ever', async () => {
    const relay = await relayTo(inject('s3').endpoint);
    const store = await openS3ObjectStore({ ...inject('s3'), endpoint: relay.endpoint, forcePathStyle: true, bucket: `hang-${randomUUID().slice(0, 8)}`, answerTimeoutMs: 1_000 });
    try {
      await store.put('p/b/kept.txt', Readable.from([Buffer.from('kept')]), { contentType: 'text/plain' });
      // The wait is for the answer's headers only: a download its reader pauses for longer is not cut.
      const big = generated(8 * MiB);
      await store.put('p/b/big.bin', big.stream, { contentType: 'application/octet-stream' });
      const paused = await store.get('p/b/big.bin');
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(createHash('md5').update(await bytesOf(paused.body)).digest('hex')).toBe(big.md5);
      relay.hang();
      const calls: [string, () => Promise<unknown>][] = [
        ['get', () => store.get('p/b/kept.txt')],
        ['head', () => store.head('p/b/kept.txt')],
        ['list', () => store.list({ prefix: 'p/' })],
        ['deleteMany', () => store.deleteMany(['p/b/kept.txt'])],
        ['deletePrefix', () => store.deletePrefix('p/')],
      ];
      const started = Date.now();
      const errors = await Promise.all(calls.map(([, call]) => rejection(call())));
      expect(Date.now() - started).toBeLessThan(20_000);
      errors.forEach((error, i) => {
        expect(error, `${calls[i]![0]}: ${String(error)}`).toBeInstanceOf(ApiError);
        expect((error as ApiError).toBody(), calls[i]![0]).toMatchObject({ code: 'storage_unavailable' });
      });
    } finally {
      await store.close();
      await relay.close();
    }
  }, 60_000);
});

/**
 * A TCP relay to the stack's S3 server that shapes what it takes from the store: at most
 * `bytesPerSecond`, and after `stallAfterBytes` on one connection it stops reading that
 * connection for good (its socket buffers fill and the sender's writes stop completing),
 * as a server does that stopped taking an upload. Other connections go on working.
 */
async function shapingRelayTo(
  endpoint: string,
  shape: { bytesPerSecond?: number; stallAfterBytes?: number },
): Promise<{ endpoint: string; stalled(): number; partition(cut: boolean): void; close(): Promise<void> }> {
  const target = new URL(endpoint);
  const sockets = new Set<net.Socket>();
  let stalled = 0;
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) {
      // Partitioned: the connection is taken, and nothing ever reaches the server or comes back.
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => undefined);
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    let carried = 0;
    let stopped = false;
    const began = Date.now();
    client.on('data', (chunk: Buffer) => {
      carried += chunk.length;
      upstream.write(chunk);
      if (shape.stallAfterBytes !== undefined && carried > shape.stallAfterBytes) {
        // Never resumed; and the server's own reaction (a close) is kept from the store.
        stopped = true;
        stalled += 1;
        client.pause();
        client.removeAllListeners('data');
        upstream.unpipe(client);
        return;
      }
      if (shape.bytesPerSecond !== undefined) {
        const wait = began + (carried / shape.bytesPerSecond) * 1000 - Date.now();
        if (wait > 0) {
          client.pause();
          setTimeout(() => client.resume(), wait);
        }
      }
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      if (!stopped) client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stalled: () => stalled,
    /** Cutting drops every connection and holds new ones without relaying; lifting it relays new ones again. */
    partition(on) {
      cut = on;
      if (on) for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('S3 object store when its server stops taking an upload', () => {
  const s3 = () => inject('s3');
  const direct = () => new S3Client({ endpoint: s3().endpoint, region: s3().region, forcePathStyle: true, credentials: s3() });

  it('gives the upload up after the stall timeout with ApiError 503 storage_unavailable, leaving no object and no multipart upload', async () => {
    // The first part (5 MiB) gets 1 MiB through, then the server takes nothing more.
    const relay = await shapingRelayTo(s3().endpoint, { stallAfterBytes: 1 * MiB });
    const bucket = `stall-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...s3(), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000 });
    const client = direct();
    try {
      const source = generated(12 * MiB);
      const started = Date.now();
      const error = await Promise.race([
        rejection(store.put('p/b/stalled.bin', source.stream, { contentType: 'application/octet-stream' })),
        new Promise((resolve) => setTimeout(() => resolve(new Error('still waiting after 20 s')), 20_000)),
      ]);
      expect(error, String(error)).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(503);
      expect((error as ApiError).toBody()).toMatchObject({ code: 'storage_unavailable', message: expect.stringMatching(/no progress .* for 1 s/) });
      // One stall timeout (the cut request is not sent again), not three, and no total timeout.
      expect(Date.now() - started).toBeLessThan(8_000);
      expect(relay.stalled()).toBe(1);
      // The multipart upload is aborted (after a stall, without holding up the answer).
      const multipartUploads = async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0;
      const deadline = Date.now() + 5_000;
      while ((await multipartUploads()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await multipartUploads()).toBe(0);
      expect(await store.head('p/b/stalled.bin')).toBeUndefined();
      // The source is no longer read, so its sender is not left hanging.
      expect(source.stream.destroyed).toBe(true);
    } finally {
      client.destroy();
      await store.close();
      await relay.close();
    }
  }, 60_000);

  it('does not cut an upload that takes longer than the stall timeout while its bytes move', async () => {
    // 24 MiB at 4 MiB/s: ~6 s in all against a 3 s stall timeout. (A part's 5 MiB go into the kernel's
    // socket buffers at once, which are not seen to drain: at ~1.3 s a part, that wait stays under 3 s.)
    const relay = await shapingRelayTo(s3().endpoint, { bytesPerSecond: 4 * MiB });
    const bucket = `slow-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...s3(), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 3_000 });
    try {
      const source = generated(24 * MiB);
      const started = Date.now();
      const stored = await store.put('p/b/slow.bin', source.stream, { contentType: 'application/octet-stream' });
      expect(Date.now() - started).toBeGreaterThan(5_000);
      expect(stored.size).toBe(24 * MiB);
      const read = await store.get('p/b/slow.bin');
      expect(createHash('md5').update(await bytesOf(read.body)).digest('hex')).toBe(source.md5);
    } finally {
      await store.close();
      await relay.close();
    }
  }, 60_000);
});


describe('S3 object store when its server stalls as a whole mid-upload', () => {
  it('answers 503 after the stall timeout and leaves nothing behind once the server is back', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-s3-paused-'));
    const log = createStackLog({ quiet: true, logDir: path.join(dataDir, 'logs') });
    const server = await startS3Server({ bin: resolveS3ServerBin(process.env), dataDir, log });
    const pid = processWithArgument(s3BucketsDir(dataDir));
    const bucket = 'paused';
    const store = await openS3ObjectStore({ ...server, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000, answerTimeoutMs: 1_000 });
    const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server });
    const multipartUploads = async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0;
    let paused = false;
    try {
      // 16 MiB coming in at ~16 MiB/s: the multipart upload exists for a while before the body ends.
      const block = Buffer.alloc(64 * 1024, 3);
      let sent = 0;
      const slow = new Readable({
        read() {
          if (sent >= 16 * MiB) return void this.push(null);
          sent += block.length;
          setTimeout(() => this.push(block), 4);
        },
      });
      const outcome = rejection(store.put('p/b/paused.bin', slow, { contentType: 'application/octet-stream' }));
      while ((await multipartUploads()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      process.kill(pid, 'SIGSTOP');
      paused = true;
      const started = Date.now();
      const error = await Promise.race([outcome, new Promise((resolve) => setTimeout(() => resolve(new Error('still waiting after 20 s')), 20_000))]);
      expect(error, String(error)).toBeInstanceOf(ApiError);
      expect((error as ApiError).toBody()).toMatchObject({ code: 'storage_unavailable' });
      expect(Date.now() - started).toBeLessThan(10_000);
      process.kill(pid, 'SIGCONT');
      paused = false;
      // The Upload's own abort timed out, but its bytes were in the server's socket buffer: it ran on SIGCONT
      // (the store's own later abort then finds nothing to do).
      const deadline = Date.now() + 15_000;
      while ((await multipartUploads()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await multipartUploads()).toBe(0);
      expect(await store.head('p/b/paused.bin')).toBeUndefined();
    } finally {
      if (paused) process.kill(pid, 'SIGCONT');
      client.destroy();
      await store.close();
      await server.stop();
      await log.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('S3 object store cut off from its server mid-upload', () => {
  it('answers 503 and aborts the multipart upload once the server is reachable again, the Upload\'s own abort having failed', async () => {
    const relay = await shapingRelayTo(inject('s3').endpoint, {});
    const bucket = `cut-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...inject('s3'), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000, answerTimeoutMs: 1_000 });
    const client = new S3Client({ endpoint: inject('s3').endpoint, region: inject('s3').region, forcePathStyle: true, credentials: inject('s3') });
    const multipartUploads = async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0;
    try {
      const block = Buffer.alloc(64 * 1024, 5);
      let sent = 0;
      const slow = new Readable({
        read() {
          if (sent >= 16 * MiB) return void this.push(null);
          sent += block.length;
          setTimeout(() => this.push(block), 4);
        },
      });
      const outcome = rejection(store.put('p/b/cut.bin', slow, { contentType: 'application/octet-stream' }));
      while ((await multipartUploads()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      relay.partition(true);
      const started = Date.now();
      const error = await Promise.race([outcome, new Promise((resolve) => setTimeout(() => resolve(new Error('still waiting after 20 s')), 20_000))]);
      expect(error, String(error)).toBeInstanceOf(ApiError);
      expect((error as ApiError).toBody()).toMatchObject({ code: 'storage_unavailable' });
      expect(Date.now() - started).toBeLessThan(10_000);
      // Nothing of the abort reached the server while cut off.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await multipartUploads()).toBe(1);
      relay.partition(false);
      const deadline = Date.now() + 20_000;
      while ((await multipartUploads()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await multipartUploads()).toBe(0);
      expect(await store.head('p/b/cut.bin')).toBeUndefined();
    } finally {
      client.destroy();
      await store.close();
      await relay.close();
    }
  }, 60_000);
});
