/**
 * The embedded object store (`STORAGE_BACKEND=fs`): objects as files under a
 * root directory (`<DATA_DIR>/storage` in the stack), laid out as
 * `fs-layout.ts` describes. Uploads stream into a temp file that is renamed
 * into place only when complete, so a failed upload leaves nothing behind.
 */
import { randomUUID } from 'node:crypto';
import fsFd, { createWriteStream } from 'node:fs';
import { promisify } from 'node:util';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { listFsObjects } from './fs-listing';
import { encodeHeader, folderDir, HEADER_BYTES, isMissing, layoutOf, objectFile, OBJECT_TAG, readHeader, type ObjectHeader } from './fs-layout';
import { assertContentType } from './content-type';
import { assertFolderPrefix, assertObjectKey, objectNotFound, resolveRange } from './object-keys';
import type { ByteRange, DeleteOptions, ListOptions, ListPage, ObjectInfo, ObjectRead, ObjectStore, PutOptions, PutResult } from './object-store';
import { admittedMeter, observeAdmission, type UploadMeter } from './upload-meter';

/** The fd calls an upload makes: on a raw descriptor, which its write stream hands back when done (a FileHandle's stays locked). */
const fd = {
  open: promisify(fsFd.open), write: promisify(fsFd.write), datasync: promisify(fsFd.fdatasync), sync: promisify(fsFd.fsync),
  close: promisify(fsFd.close), fstat: promisify(fsFd.fstat),
};

/**
 * Closes a descriptor at once, in a callback's clothes. Only for descriptors a
 * close cannot make wait: read-only ones, and an upload's once `fdatasync` has
 * flushed it. Each call through libuv's thread pool costs two thread
 * wake-ups, and on the bench's virtual machine wake-ups and task switches were
 * about a third of the data plane's CPU samples under 1-byte downloads (perf).
 * The calls that may wait on the disk (open, read, write, fdatasync, rename)
 * stay asynchronous.
 */
function closeNow(descriptor: number, callback: (error: NodeJS.ErrnoException | null) => void): void {
  try {
    fsFd.closeSync(descriptor);
  } catch (error) {
    callback(error as NodeJS.ErrnoException);
    return;
  }
  callback(null);
}

/** The file calls of a download's stream: its descriptor closed with {@link closeNow}, when no read is in flight. */
const READ_STREAM_FS = { open: fsFd.open, read: fsFd.read, close: closeNow };

/** Opens an object file for reading; undefined when there is no such object. */
async function openObject(file: string): Promise<number | undefined> {
  try {
    return await fd.open(file, 'r');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/**
 * Flushes a folder's entries to disk. A rename, or a folder made, is durable
 * only once the folder holding the new name is: until then a crash may undo
 * it, whatever was flushed of the file (PostgreSQL's durable_rename does the
 * same). The descriptor is read-only: it closes at once.
 */
async function syncFolder(dir: string): Promise<void> {
  const descriptor = await fd.open(dir, fsFd.constants.O_RDONLY | fsFd.constants.O_DIRECTORY);
  try {
    await fd.sync(descriptor);
  } finally {
    closeNow(descriptor, () => {});
  }
}

/** The header of the object file open as `descriptor`, with its time stored (from the file for objects stored before the header said it). */
async function readObjectHeader(descriptor: number): Promise<ObjectHeader & { updatedAt: Date }> {
  const header = await readHeader(descriptor);
  const updatedAt = header.storedAt === undefined ? (await fd.fstat(descriptor)).mtime : new Date(header.storedAt);
  return { contentType: header.contentType, size: header.size, etag: header.etag, updatedAt };
}

/** How much of an upload may wait in memory for the disk, and how much a download reads at once (bounds either's memory, whatever the object's size). */
const IO_BUFFER_BYTES = 1024 * 1024;

/** How much an upload writes between the flushes it starts while its bytes come. */
const FLUSH_EVERY_BYTES = 8 * 1024 * 1024;

/**
 * Objects are the service's alone: folders 0700, files 0600, whatever the
 * umask. The store's root is made 0700 at its first write, an older looser
 * one too, so what an earlier release stored is closed with it: the data
 * directory above lets every local user through (PostgreSQL's system user
 * must reach its own folder).
 */
const FOLDER_MODE = 0o700;
const FILE_MODE = 0o600;

/** Opens an object store on the directory `root` (created on first write). */
export function createFsObjectStore(root: string): ObjectStore {
  const base = path.resolve(root);
  const { objects, uploads } = layoutOf(base);
  let sweeping: Promise<void> | undefined;

  /** Removes now-empty folders from `dir` up to the objects directory; stops at the first that is not empty. */
  const pruneEmptyFolders = async (dir: string): Promise<void> => {
    for (let current = dir; current.startsWith(objects + path.sep); current = path.dirname(current)) {
      try {
        await fs.rmdir(current);
      } catch {
        return; // not empty (or already gone): its parents are not empty either
      }
    }
  };

  /**
   * Moves a finished upload into place for good, making its folder only when
   * the rename says it is missing (most uploads land in a folder that exists);
   * a concurrent prune may remove the folder between mkdir and rename. The
   * rename is flushed before the upload answers, and so is each folder it
   * made: the row committed next says the object is there. (A folder another
   * upload made a moment before is flushed by that one; on a journaled
   * filesystem this one's flush commits it too.) The storage API renames to a
   * key no file has (a new version's), so the rename unlinks nothing: freeing
   * the blocks of the version it replaces (about 1 ms for 1 MB on the bench
   * machine's ext4) is the unlink after its answer.
   */
  const moveIntoPlace = async (temp: string, target: string): Promise<void> => {
    const folder = path.dirname(target);
    // The highest folder made for this object (undefined when all were there): from it down, each folder is a new entry in its parent.
    let highestMade: string | undefined;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await fs.rename(temp, target);
        break;
      } catch (error) {
        if (!isMissing(error) || attempt >= 3) throw error;
      }
      const made = await fs.mkdir(folder, { recursive: true, mode: FOLDER_MODE });
      if (made !== undefined && (highestMade === undefined || made.length < highestMade.length)) highestMade = made;
    }
    await syncFolder(folder);
    if (highestMade === undefined) return;
    for (let made = folder; made.length >= highestMade.length; made = path.dirname(made)) await syncFolder(path.dirname(made));
  };

  /** Creates the temp file of an upload (its descriptor); the uploads directory is made (and swept) the first time, and again if it went. */
  const createUpload = async (temp: string): Promise<number> => {
    if (!sweeping) {
      await fs.mkdir(uploads, { recursive: true, mode: FOLDER_MODE });
      await fs.chmod(base, FOLDER_MODE);
      sweeping = sweepStaleUploads(uploads).then(() => {}, () => {});
    }
    try {
      return await fd.open(temp, 'wx', FILE_MODE);
    } catch (error) {
      if (!isMissing(error)) throw error;
      await fs.mkdir(uploads, { recursive: true, mode: FOLDER_MODE });
      return fd.open(temp, 'wx', FILE_MODE);
    }
  };

  /** Unlinks the files of `keys`; answers the keys whose file is gone. */
  const unlinkEach = async (keys: readonly string[]): Promise<string[]> => {
    const deleted: string[] = [];
    for (const key of keys) {
      try {
        await fs.unlink(objectFile(objects, key));
      } catch (error) {
        // A file that cannot be removed (EPERM, EACCES, EBUSY) stays: left out, as S3's Errors are.
        if (!isMissing(error)) continue;
      }
      deleted.push(key);
    }
    return deleted;
  };

  /** Flushes `dir`, or, when a prune removed it meanwhile, the nearest folder above it that is still there. */
  const syncNearestFolder = async (dir: string): Promise<void> => {
    for (let current = dir; ; current = path.dirname(current)) {
      try {
        return await syncFolder(current);
      } catch (error) {
        if (!isMissing(error) || current === base) throw error;
      }
    }
  };

  const readInfo = async (key: string): Promise<ObjectInfo | undefined> => {
    const file = await openObject(objectFile(objects, key));
    if (file === undefined) return undefined;
    try {
      return { key, ...(await readObjectHeader(file)) };
    } finally {
      closeNow(file, () => {});
    }
  };

  return {
    kind: 'fs',

    async put(key: string, body: Readable, options: PutOptions): Promise<PutResult> {
      observeAdmission(options);
      assertObjectKey(key);
      assertContentType(options.contentType);
      const temp = path.join(uploads, `${randomUUID()}.part`);
      // Every step on one descriptor: each open, close or mkdir is a trip to libuv's thread pool, and for small objects those add up.
      // Opened while the caller decides whether to admit the upload (its database round trip): not a byte is read before.
      const file = await createUpload(temp).catch(async (error: unknown) => {
        // A caller that refuses the upload (a policy, a taken path) is answered with its refusal, which says more than
        // the store's trouble does; admitted, the trouble is the answer.
        await options.admitted;
        throw error;
      });
      // The etag is the SHA-256 of the bytes (hex): content-derived, so an identical upload keeps it, and a checksum a
      // client can compare with `sha256sum`. Not MD5, S3's etag for single-part uploads: with the SHA extensions of
      // today's x86 and ARM server CPUs SHA-256 costs less than half of MD5 (0.6 against 1.4 ms per MB on the bench
      // machine). Objects an earlier release stored keep their MD5 etags: an etag is opaque.
      let meter: UploadMeter;
      try {
        meter = await admittedMeter(options, true);
      } catch (error) {
        await fd.close(file).catch(() => {});
        await fs.rm(temp, { force: true });
        throw error;
      }
      // The bytes go after the header's room; the header is written once size and digest are known.
      // A 1 MiB buffer instead of the default 16 KiB: the socket keeps flowing while the file catches up, and what
      // queued meanwhile goes to disk in one writev. Measured: 100 MB uploads 0.5 → 0.65-0.85 of a plain copy.
      const out = createWriteStream('', { fd: file, start: HEADER_BYTES, highWaterMark: IO_BUFFER_BYTES, autoClose: false });
      let closed = false;
      // What is written goes to disk while the rest comes, a flush at a time: the last one then waits for the last few
      // MiB only, not the whole object (measured: 30-60 ms of a 100 MB upload's 200-300).
      let flushing: Promise<unknown> | undefined;
      let flushedTo = 0;
      meter.on('data', () => {
        if (flushing || out.bytesWritten - flushedTo < FLUSH_EVERY_BYTES) return;
        flushedTo = out.bytesWritten;
        flushing = fd.datasync(file).then(() => { flushing = undefined; }, (error: unknown) => error);
      });
      try {
        await pipeline(body, meter, out, options.signal ? { signal: options.signal } : {});
        const result = { size: meter.bytes, etag: await meter.digest() };
        await fd.write(file, encodeHeader({ contentType: options.contentType, ...result, storedAt: Date.now() }), 0, HEADER_BYTES, 0);
        // A flush that failed fails the upload: its pages may be lost, and the last flush may not report it again.
        const failed = await flushing;
        if (failed) throw failed;
        // On disk before the rename makes it visible: after a crash, an object is whole or absent. The caller's
        // publish step (its database round trip) runs meanwhile: the flush waits on the disk, not on it.
        const [synced, published] = await Promise.allSettled([fd.datasync(file), options.publish?.({ size: result.size })]);
        if (synced.status === 'fulfilled') {
          closed = true;
          // Flushed: its close has nothing left to wait for (see closeNow).
          fsFd.closeSync(file);
        }
        // A refusal of the publish step is the caller's answer; else a failed flush fails the upload.
        if (published.status === 'rejected') throw published.reason;
        if (synced.status === 'rejected') throw synced.reason;
        await moveIntoPlace(temp, objectFile(objects, key));
        return result;
      } catch (error) {
        await flushing;
        // A destroyed stream closes the descriptor itself, once its write in flight is back; else it is closed here.
        // Only then is the file removed: removed earlier, a late write would land in a file no one removes.
        if (out.destroyed) {
          if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
        } else if (!closed) {
          await fd.close(file).catch(() => {});
        }
        await fs.rm(temp, { force: true });
        throw error;
      }
    },

    async get(key: string, range?: ByteRange): Promise<ObjectRead> {
      assertObjectKey(key);
      const file = await openObject(objectFile(objects, key));
      if (file === undefined) throw objectNotFound();
      try {
        const header = await readObjectHeader(file);
        const resolved = range ? resolveRange(range, header.size) : undefined;
        // The file is never rewritten in place (a put renames a new one over it), so this descriptor reads one version.
        // Reads of up to 1 MiB rather than 64 KiB: a small object goes out in one read, a large one in fewer trips to the thread pool.
        // With its end given, the stream stops without one more read to find the end of the file.
        const { start, end } = resolved ?? { start: 0, end: header.size - 1 };
        const body = fsFd.createReadStream('', {
          fd: file, fs: READ_STREAM_FS, highWaterMark: IO_BUFFER_BYTES,
          ...(end >= start ? { start: HEADER_BYTES + start, end: HEADER_BYTES + end } : { start: HEADER_BYTES }), // else an empty object
        });
        return { body, ...header, ...(resolved ? { range: resolved } : {}) };
      } catch (error) {
        closeNow(file, () => {});
        throw error;
      }
    },

    async head(key: string): Promise<ObjectInfo | undefined> {
      assertObjectKey(key);
      return readInfo(key);
    },

    list(options: ListOptions): Promise<ListPage> {
      return listFsObjects(objects, options, readInfo);
    },

    async deleteMany(keys: readonly string[], options: DeleteOptions = {}): Promise<string[]> {
      keys.forEach(assertObjectKey);
      const deleted = await unlinkEach(keys);
      if (options.superseded) return deleted;
      const folders = new Set(deleted.map((key) => path.dirname(objectFile(objects, key))));
      // Flushed before the delete answers: a crash must not bring back the bytes of objects deleted (the storage sweep
      // would remove them again, but only after its grace period). Then the folders left empty go, which a crash may
      // undo harmlessly.
      for (const folder of folders) await syncNearestFolder(folder);
      for (const folder of folders) await pruneEmptyFolders(folder);
      return deleted;
    },

    async deletePrefix(prefix: string): Promise<number> {
      assertFolderPrefix(prefix);
      const dir = folderDir(objects, prefix);
      // Renamed away first, so the folder disappears at once rather than file by file.
      await fs.mkdir(uploads, { recursive: true, mode: FOLDER_MODE });
      const trash = path.join(uploads, `${randomUUID()}.deleting`);
      try {
        await fs.rename(dir, trash);
      } catch (error) {
        if (isMissing(error)) return 0;
        throw error;
      }
      // Gone for good before the caller goes on: a crash must not bring the folder back (its objects' bytes, with no
      // rows, which nothing would remove). What is left in the trash, a crash may leave: the sweep removes it.
      await syncFolder(path.dirname(dir));
      const entries = await fs.readdir(trash, { recursive: true, withFileTypes: true });
      const count = entries.filter((entry) => entry.isFile() && entry.name.endsWith(OBJECT_TAG)).length;
      await fs.rm(trash, { recursive: true, force: true });
      await pruneEmptyFolders(path.dirname(dir));
      return count;
    },

    sweepUnfinished: (before) => sweepStaleUploads(uploads, before),

    async close(): Promise<void> {},
  };
}

/** Uploads untouched this long are dead: a live one writes, a live prefix delete finishes in far less. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;

/**
 * Removes what a process killed mid-upload or mid-delete left in the uploads
 * directory. Only stale entries: replicas of the data plane share the directory.
 */
async function sweepStaleUploads(uploads: string, before = new Date(Date.now() - STALE_UPLOAD_MS)): Promise<number> {
  let removed = 0;
  for (const name of await fs.readdir(uploads).catch((error: unknown) => { if (isMissing(error)) return []; throw error; })) {
    const entry = path.join(uploads, name);
    const stat = await fs.stat(entry).catch(() => undefined);
    if (stat && stat.mtimeMs < before.getTime()) {
      await fs.rm(entry, { recursive: true, force: true });
      removed += 1;
    }
  }
  return removed;
}
