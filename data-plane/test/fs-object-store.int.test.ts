/**
 * What only the fs object store has, on real files in a temp directory: its
 * sweep of abandoned uploads, its header, its descriptors, hashing on a thread
 * of its own, and the permissions of what it writes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readlink, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createFsObjectStore } from '@baseplane/contracts/object-store';
import { BLOCK_BYTES, Sha256Digest, stopHashingThread, uploadsBeingHashed } from '../../contracts/src/object-store/sha256-thread';
import { abortedPartway, bytesOf, failingAfter, generated, MiB, rejection } from './object-bodies';

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
  it('sweeps uploads a killed process left behind, and only stale ones', () => inStoreRoot(async (root) => {
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
  }));

  it('answers with the caller\'s refusal, not its own trouble, when its temp file cannot be made and the admission refuses', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    await store.put('p/b/first', Readable.from([Buffer.from('x')]), { contentType: 'text/plain' });
    // The uploads folder turned into a file: a temp file's open now fails, and so does the mkdir that would mend it.
    await rm(path.join(root, 'uploads'), { recursive: true, force: true });
    await writeFile(path.join(root, 'uploads'), 'not a folder');
    const refusal = Object.assign(new Error('refused by a policy'), { status: 403 });
    const refused = await rejection(store.put('p/b/x', Readable.from([Buffer.from('x')]), { contentType: 'text/plain', admitted: Promise.reject(refusal) }));
    expect(refused).toBe(refusal);
    // Admitted, the store's own failure is the answer.
    const failed = await rejection(store.put('p/b/y', Readable.from([Buffer.from('y')]), { contentType: 'text/plain', admitted: Promise.resolve({}) }));
    expect(failed).not.toBe(refusal);
    expect((failed as NodeJS.ErrnoException).code).toMatch(/^E[A-Z]+$/);
  }));

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

  it('lets go of each file a put replaced, and a download in flight keeps reading its own', () => inStoreRoot(async (root) => {
    const store = createFsObjectStore(root);
    const version = (i: number) => Buffer.alloc(MiB, i);
    await store.put('p/b/x', Readable.from([version(0)]), { contentType: 'application/octet-stream' });
    const reading = await store.get('p/b/x');
    for (let i = 1; i <= 20; i += 1) await store.put('p/b/x', Readable.from([version(i)]), { contentType: 'application/octet-stream' });
    expect((await bytesOf(reading.body)).equals(version(0))).toBe(true);
    expect((await bytesOf((await store.get('p/b/x')).body)).equals(version(20))).toBe(true);
    // The storage API puts each version at a key of its own; a put over a key replaces its file by the rename. None may
    // stay held, its blocks never freed.
    const heldDeleted = async () => {
      const targets = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((target) => target.startsWith(root) && target.endsWith('(deleted)'));
    };
    await expect.poll(heldDeleted).toEqual([]);
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
        const { stream, signal } = abortedPartway(40 * MiB, 12 * MiB);
        return store.put('p/b/aborted', stream, { contentType: 'text/plain', signal });
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
  it('keeps objects to the service: folders 0700, files 0600, and a looser root made 0700 at its first write', () => inStoreRoot(async (root) => {
    // A root an earlier release left open to every local user.
    await chmod(root, 0o755);
    const store = createFsObjectStore(root);
    await store.put('p/b/folder/x.txt', Readable.from([Buffer.from('private')]), { contentType: 'text/plain' });
    const entries = [{ name: '.', info: await stat(root) }];
    for (const name of await readdir(root, { recursive: true })) entries.push({ name, info: await stat(path.join(root, name)) });
    expect(entries.filter((entry) => entry.info.isFile())).toHaveLength(1);
    const modes = entries.map(({ name, info }) => ({ name, mode: (info.mode & 0o777).toString(8) }));
    expect(modes).toEqual(entries.map(({ name, info }) => ({ name, mode: info.isFile() ? '600' : '700' })));
  }));
});
