/**
 * How the fs object store lays objects out on disk, under its root:
 *
 *   objects/<segment>.d/…/<name>.o   one file per object: a 1 KiB JSON header
 *                                    (content type, size, etag, time stored),
 *                                    then the bytes
 *   uploads/<uuid>.part              uploads in progress, renamed into place
 *
 * Folders and objects carry different tags (`.d`, `.o`) so that `a` and `a/b`
 * can both exist, as they can in S3. A version's key names its file
 * `<name>\t<version>.o` (object-keys.ts), beside the object's other versions. Header and bytes share one file so that a
 * rename replaces both at once: a reader never sees new bytes with old metadata.
 */
import { read as readCallback } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const read = promisify(readCallback);

export const HEADER_BYTES = 1024;
export const OBJECT_TAG = '.o';
export const FOLDER_TAG = '.d';

/** What the header of an object file says. */
export interface ObjectHeader {
  contentType: string;
  size: number;
  etag: string;
  /**
   * When the object was stored, in milliseconds since the epoch: a download then needs no `fstat` for its
   * Last-Modified. Objects stored before it was recorded have none; their file's mtime says the same.
   */
  storedAt?: number;
}

/** Paths of the store's parts under `root`. */
export function layoutOf(root: string): { objects: string; uploads: string } {
  return { objects: path.join(root, 'objects'), uploads: path.join(root, 'uploads') };
}

/** File of the object `key` (already validated) under the objects directory. */
export function objectFile(objectsDir: string, key: string): string {
  const parts = key.split('/');
  const name = parts.pop()!;
  return path.join(objectsDir, ...parts.map((part) => part + FOLDER_TAG), name + OBJECT_TAG);
}

/** Directory of the folder `prefix` (`""` or ending in `/`) under the objects directory. */
export function folderDir(objectsDir: string, prefix: string): string {
  const parts = prefix.split('/').slice(0, -1);
  return path.join(objectsDir, ...parts.map((part) => part + FOLDER_TAG));
}

/** The header bytes: JSON padded with spaces to exactly {@link HEADER_BYTES}. */
export function encodeHeader(header: ObjectHeader): Buffer {
  const json = Buffer.from(JSON.stringify({ v: 1, ...header }), 'utf8');
  if (json.length > HEADER_BYTES) throw new Error('object header does not fit in 1 KiB');
  const bytes = Buffer.alloc(HEADER_BYTES, 0x20);
  json.copy(bytes);
  return bytes;
}

/** Reads and parses the header of an object file open as `fd`. */
export async function readHeader(fd: number): Promise<ObjectHeader> {
  const bytes = Buffer.alloc(HEADER_BYTES);
  const { bytesRead } = await read(fd, bytes, 0, HEADER_BYTES, 0);
  const parsed = JSON.parse(bytes.subarray(0, bytesRead).toString('utf8').trimEnd()) as ObjectHeader & { v: number };
  if (parsed.v !== 1) throw new Error(`object header version ${String(parsed.v)} is not known`);
  const header: ObjectHeader = { contentType: parsed.contentType, size: parsed.size, etag: parsed.etag };
  if (typeof parsed.storedAt === 'number') header.storedAt = parsed.storedAt;
  return header;
}

/** True for the errors that mean "no such object" when opening its file. */
export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
