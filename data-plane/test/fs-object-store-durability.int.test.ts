/**
 * What the fs object store flushes before an upload or a delete answers, on
 * real files: the folder that holds the object's new name, after the rename,
 * and the parent of each folder the upload made; the folders deleted objects
 * were in, and the parent of a folder deleted whole. A crash can only be simulated by
 * losing what was not flushed, so the test watches the flushes themselves:
 * `node:fs` is the real module with its `fsync` observed (each call is
 * recorded, with the folder it flushes and what that folder holds, then made),
 * and so is its `fdatasync`, which must be done before the object's name is.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createFsObjectStore, type ObjectStore } from '@baseplane/contracts/object-store';
import { layoutOf, objectFile } from '../../contracts/src/object-store/fs-layout';

/** Each fsync of a folder the store made: the folder, and the names in it at that moment. */
const folderSyncs = vi.hoisted(() => [] as Array<{ folder: string; names: string[] }>);
/** Each fdatasync of an upload's file, once done: whether the object's file (the test names it) was there then. */
const dataSyncs = vi.hoisted(() => ({ objectFile: '', done: [] as Array<{ objectThere: boolean }> }));

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const fsync = (descriptor: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    const target = real.readlinkSync(`/proc/self/fd/${descriptor}`);
    if (real.statSync(target).isDirectory()) folderSyncs.push({ folder: target, names: real.readdirSync(target).sort() });
    real.fsync(descriptor, callback);
  };
  const fdatasync = (descriptor: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    real.fdatasync(descriptor, (error) => {
      dataSyncs.done.push({ objectThere: real.existsSync(dataSyncs.objectFile) });
      callback(error);
    });
  };
  return { ...real, fsync, fdatasync, default: { ...real, fsync, fdatasync } };
});

describe('fs object store durability', () => {
  let root: string;
  let store: ObjectStore;
  let objects: string;
  const put = (key: string) => store.put(key, Readable.from([Buffer.from(key)]), { contentType: 'text/plain' });

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-durable-'));
    store = createFsObjectStore(root);
    objects = layoutOf(path.resolve(root)).objects;
    folderSyncs.length = 0;
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('flushes the folder of an object once its new name is in it, before the upload answers', async () => {
    await put('p/b/first.txt');
    folderSyncs.length = 0;
    await put('p/b/second.txt');
    const folder = path.dirname(objectFile(objects, 'p/b/second.txt'));
    expect(folderSyncs).toEqual([{ folder, names: [path.basename(objectFile(objects, 'p/b/first.txt')), path.basename(objectFile(objects, 'p/b/second.txt'))] }]);

    // A replacement too: the rename over the old file is what makes the new bytes the object's.
    folderSyncs.length = 0;
    await store.put('p/b/second.txt', Readable.from([Buffer.from('replaced')]), { contentType: 'text/plain' });
    expect(folderSyncs.map((sync) => sync.folder)).toEqual([folder]);
  });

  it('has the bytes on disk before their name is the object\'s, while the caller publishes meanwhile', async () => {
    const key = 'p/b/flushed.txt';
    dataSyncs.objectFile = objectFile(objects, key);
    dataSyncs.done.length = 0;
    let publishedDuringFlush = false;
    await store.put(key, Readable.from([Buffer.from('bytes')]), {
      contentType: 'text/plain',
      publish: async () => { publishedDuringFlush = dataSyncs.done.length === 0; },
    });
    expect(dataSyncs.done).toEqual([{ objectThere: false }]);
    expect(publishedDuringFlush).toBe(true);
  });

  it('flushes the parent of every folder an upload made, so that the path to the object survives too', async () => {
    await put('p/b/x.txt');
    folderSyncs.length = 0;
    const key = 'p/b/deep/er/x.txt';
    await put(key);
    const file = objectFile(objects, key);
    const er = path.dirname(file);
    const deep = path.dirname(er);
    const bucket = path.dirname(deep);
    // The object's folder, holding it; then each made folder's parent, holding the made one.
    expect(folderSyncs).toEqual([
      { folder: er, names: [path.basename(file)] },
      { folder: deep, names: [path.basename(er)] },
      { folder: bucket, names: [path.basename(deep), path.basename(objectFile(objects, 'p/b/x.txt'))].sort() },
    ]);
  });

  it('flushes the folders of deleted objects before the delete answers, and the parent of a folder deleted whole', async () => {
    for (const key of ['p/b/keep.txt', 'p/b/gone.txt', 'p/b/dir/only.txt']) await put(key);
    const bucket = path.dirname(objectFile(objects, 'p/b/keep.txt'));
    const dir = path.dirname(objectFile(objects, 'p/b/dir/only.txt'));
    const keep = path.basename(objectFile(objects, 'p/b/keep.txt'));
    folderSyncs.length = 0;
    expect(await store.deleteMany(['p/b/gone.txt', 'p/b/dir/only.txt'])).toEqual(['p/b/gone.txt', 'p/b/dir/only.txt']);
    // Each folder once its names are gone; the emptied one is pruned only after.
    expect(folderSyncs).toEqual([{ folder: bucket, names: [keep, path.basename(dir)].sort() }, { folder: dir, names: [] }]);

    await put('p/b/dir/a.txt');
    await put('p/b/dir/sub/b.txt');
    folderSyncs.length = 0;
    expect(await store.deletePrefix('p/b/dir/')).toBe(2);
    expect(folderSyncs).toEqual([{ folder: bucket, names: [keep] }]);

    // A key whose folder is not there (never made, or pruned meanwhile): absent, so deleted, and the nearest folder flushed.
    folderSyncs.length = 0;
    expect(await store.deleteMany(['p/b/nowhere/deeper/x.txt'])).toEqual(['p/b/nowhere/deeper/x.txt']);
    expect(folderSyncs).toEqual([{ folder: bucket, names: [keep] }]);
  });

  it('only unlinks a version a newer one replaced: no folder flushed, none pruned (a crash that undoes it leaves bytes the sweep removes)', async () => {
    await put('p/b/v/x.txt\t0000000000000000000000a1');
    await put('p/b/v/x.txt\t0000000000000000000000a2');
    const folder = path.dirname(objectFile(objects, 'p/b/v/x.txt\t0000000000000000000000a1'));
    folderSyncs.length = 0;
    expect(await store.deleteMany(['p/b/v/x.txt\t0000000000000000000000a1'], { superseded: true })).toEqual(['p/b/v/x.txt\t0000000000000000000000a1']);
    expect(folderSyncs).toEqual([]);
    // Even the last one: the folder stays until a delete prunes it (listings skip empty folders).
    expect(await store.deleteMany(['p/b/v/x.txt\t0000000000000000000000a2'], { superseded: true })).toHaveLength(1);
    expect(folderSyncs).toEqual([]);
    expect(existsSync(folder)).toBe(true);
  });
});
