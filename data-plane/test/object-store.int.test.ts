/**
 * The object stores against real storage: one suite, run on the fs store in a
 * temp directory and on the S3 store against the stack's real S3 server
 * (versitygw). Both must behave the same, down to what a failed upload leaves.
 * What only one backend has is in fs-object-store.int.test.ts and
 * s3-object-store-outages.int.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, S3Client, UploadPartCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { bucketPrefix, createFsObjectStore, newObjectVersion, objectKey, openS3ObjectStore, parseObjectKey, type ByteRange, type ObjectStore } from '@baseplane/contracts/object-store';
import { layoutOf, objectFile } from '../../contracts/src/object-store/fs-layout';
import { s3BucketsDir } from '../../deploy/local/src/s3-server';
import { abortedPartway, bytesOf, failingAfter, generated, MiB, rejection } from './object-bodies';

/**
 * Most resident memory a 128 MiB transfer may add: well under the object,
 * above the garbage-collection noise (young generations of the test's heap
 * and of the fs store's hashing thread, up to 48 MiB each on node 20, that a
 * loaded machine collects late: a 50 MiB object measured 8-35 MiB).
 */
const MEMORY_BUDGET = 64 * MiB;

/** A backend opened for this suite: the store, its clean-up, and what it still holds of failed uploads. */
interface OpenedBackend {
  store: ObjectStore;
  cleanUp: () => Promise<void>;
  /** Unfinished uploads left in the backend: temp files on fs, multipart uploads on S3. */
  leftoverUploads: () => Promise<number>;
  /** The file holding the object at `key`: the fs store's own, or versitygw's (its posix backend). */
  fileOf: (key: string) => string;
  /**
   * Leaves what an upload killed half-way leaves (a temp file with some bytes; a multipart upload with a part),
   * and answers how to make it move again (more bytes; another part).
   */
  leaveUnfinished: (key: string) => Promise<{ move: () => Promise<void> }>;
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
        leaveUnfinished: async () => {
          const temp = path.join(layoutOf(root).uploads, `${randomUUID()}.part`);
          await mkdir(path.dirname(temp), { recursive: true });
          await writeFile(temp, 'the first bytes');
          return { move: () => appendFile(temp, ', and more') };
        },
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
        leaveUnfinished: async (key) => {
          const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
          let PartNumber = 0;
          const move = async () => {
            PartNumber += 1;
            await client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber, Body: Buffer.alloc(5 * MiB, PartNumber) }));
          };
          await move();
          return { move };
        },
      };
    },
  ],
];


describe.each(backends)('%s object store', (kind, open) => {
  /** The etag of a single-part object: the fs store's SHA-256 of the bytes, an S3 server's MD5. */
  const etagOf = (bytes: string) => createHash(kind === 'fs' ? 'sha256' : 'md5').update(bytes).digest('hex');
  let store: ObjectStore;
  let cleanUp: () => Promise<void>;
  let leftoverUploads: () => Promise<number>;
  let fileOf: (key: string) => string;
  let leaveUnfinished: OpenedBackend['leaveUnfinished'];
  // Every key of this suite lives under one prefix, removed at the end.
  const base = `${randomUUID()}/`;
  const key = (name: string) => `${base}${name}`;
  const put = (name: string, text: string, contentType = 'text/plain') =>
    store.put(key(name), Readable.from([Buffer.from(text)]), { contentType });

  beforeAll(async () => {
    ({ store, cleanUp, leftoverUploads, fileOf, leaveUnfinished } = await open());
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

  it('keeps versions of an object and of objects under a folder of its name side by side, and parses each key back', async () => {
    // The keys the storage API gives versions (object-keys.ts): the object's path, a tab, the version.
    const [first, second, third] = [newObjectVersion(), newObjectVersion(), newObjectVersion()];
    const version = (name: string, v: string) => objectKey(base.slice(0, -1), 'versions', name, v);
    await store.put(version('a', first), Readable.from([Buffer.from('object a')]), { contentType: 'text/plain' });
    await store.put(version('a/b', second), Readable.from([Buffer.from('object a/b')]), { contentType: 'text/plain' });
    await store.put(version('a', third), Readable.from([Buffer.from('object a, again')]), { contentType: 'text/plain' });
    for (const [name, v, text] of [['a', first, 'object a'], ['a/b', second, 'object a/b'], ['a', third, 'object a, again']] as const) {
      expect((await bytesOf((await store.get(version(name, v))).body)).toString()).toBe(text);
    }
    const prefix = bucketPrefix(base.slice(0, -1), 'versions');
    const listed = await store.list({ prefix });
    expect(listed.objects.map((object) => parseObjectKey(object.key.slice(prefix.length))).sort((x, y) => x!.version!.localeCompare(y!.version!)))
      .toEqual([{ path: 'a', version: first }, { path: 'a/b', version: second }, { path: 'a', version: third }].sort((x, y) => x.version.localeCompare(y.version)));
    // Every version of one object, by the prefix its keys share.
    expect((await store.list({ prefix: `${prefix}a\t` })).objects.map((object) => object.key).sort()).toEqual([version('a', first), version('a', third)].sort());
    // A version another replaced goes alone; the folder beside it and the newer version stay.
    expect(await store.deleteMany([version('a', first)], { superseded: true })).toEqual([version('a', first)]);
    expect(await store.head(version('a', first))).toBeUndefined();
    expect((await store.list({ prefix })).objects.map((object) => object.key).sort()).toEqual([version('a/b', second), version('a', third)].sort());
  });

  it('refuses keys no backend can hold, and a prefix delete that is not a folder', async () => {
    for (const bad of ['', '/abs', 'a//b', 'a/../b', 'trailing/', 'nul\u0000', 'x'.repeat(251), 'tab\t', 'tab\tnot a version', 'tab\tv/below', 'a/\tv', `${'x'.repeat(230)}\t${'a'.repeat(24)}`]) {
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

  it('sweeps what uploads killed half-way left once they stopped moving before the time given, not one that moved since', async () => {
    expect(await leftoverUploads()).toBe(0);
    await leaveUnfinished(key('unfinished/stopped'));
    const moving = await leaveUnfinished(key('unfinished/moving'));
    // Timestamps of the S3 server have whole seconds.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const mark = new Date();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await moving.move();
    expect(await store.sweepUnfinished(mark)).toBe(1);
    expect(await leftoverUploads()).toBe(1);
    expect(await store.sweepUnfinished(new Date(Date.now() + 5_000))).toBe(1);
    expect(await leftoverUploads()).toBe(0);
  });

  it('leaves nothing when the upload is aborted through its signal', async () => {
    const { stream, signal } = abortedPartway(20 * MiB, 6 * MiB);
    const error = await rejection(
      store.put(key('aborted'), stream, { contentType: 'application/octet-stream', signal }),
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

  it('reads not a byte before its admission: a refusal fails the put with it, nothing stored; an admitted limit applies', async () => {
    const { stream } = generated(2 * MiB);
    let reads = 0;
    const read = stream._read.bind(stream);
    stream._read = (size) => { reads += 1; read(size); };
    let refuse!: (error: Error) => void;
    const admitted = new Promise<{ maxBytes?: number }>((_resolve, reject) => { refuse = reject; });
    const putting = rejection(store.put(key('admission/refused'), stream, { contentType: 'text/plain', admitted }));
    // Long enough for the store to make ready and, were it not waiting, to read the body through.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads).toBe(0);
    const refusal = new Error('the caller may not upload here');
    refuse(refusal);
    expect(await putting).toBe(refusal);
    expect(reads).toBe(0);
    expect(await store.head(key('admission/refused'))).toBeUndefined();
    expect(await leftoverUploads()).toBe(0);

    // The smaller of the option's limit and the admission's, whichever it is.
    for (const [maxBytes, admittedBytes] of [[5 * MiB, MiB], [MiB, 5 * MiB], [undefined, MiB]]) {
      const error = await rejection(store.put(key('admission/too-big'), generated(2 * MiB).stream, {
        contentType: 'text/plain', maxBytes, admitted: Promise.resolve({ maxBytes: admittedBytes }),
      }));
      expect(error).toMatchObject({ status: 413, details: { maxBytes: MiB } });
    }
    expect(await store.head(key('admission/too-big'))).toBeUndefined();
    expect((await store.put(key('admission/fits'), generated(MiB).stream, { contentType: 'text/plain', admitted: Promise.resolve({ maxBytes: MiB }) })).size).toBe(MiB);
    expect(await leftoverUploads()).toBe(0);
  });

  it('leaves no admission unobserved when a put fails before it waits for it', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const admitted = Promise.reject(new Error('refused as well'));
      const error = await rejection(store.put(`${base}../escape`, Readable.from([Buffer.from('x')]), { contentType: 'text/plain', admitted }));
      expect(error).toMatchObject({ status: 400 });
      // Unhandled rejections are reported once the microtasks of the turn have run.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('never calls publish for an upload that fails before its end', async () => {
    let calls = 0;
    const publish = async () => { calls += 1; };
    await rejection(store.put(key('publish/broken'), failingAfter(7 * MiB), { contentType: 'text/plain', publish }));
    await rejection(store.put(key('publish/too-big'), generated(2 * MiB).stream, { contentType: 'text/plain', maxBytes: MiB, publish }));
    expect(calls).toBe(0);
    expect(await leftoverUploads()).toBe(0);
  });

  it('streams a 128 MiB object in and out with flat memory', async () => {
    // A large transfer first, so that what any first transfer costs (lazily loaded SDK code, the heaps'
    // young generations growing to their working size) is not counted as the object's: after a 12 MiB
    // one, a 50 MiB object run alone measured 71 MiB on fs.
    await store.put(key('warm-up.bin'), generated(50 * MiB).stream, { contentType: 'application/octet-stream' });
    for await (const _chunk of (await store.get(key('warm-up.bin'))).body);

    const size = 128 * MiB;
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
    // A store that held the object would grow by 128 MiB or more. Streaming, what it grows by is
    // garbage awaiting collection, whatever the object's size (20-33 MiB for 1 GiB).
    const growth = peak - before;
    console.log(`[${kind}] 128 MiB through: resident memory grew ${(growth / MiB).toFixed(1)} MiB at most`);
    expect(growth).toBeLessThan(MEMORY_BUDGET);
  });
});
