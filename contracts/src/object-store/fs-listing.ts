/**
 * Listing of the fs object store with S3's semantics: keys in UTF-8 byte
 * order, a prefix that may end mid-segment, folders grouped at the next `/`,
 * and a cursor that resumes after the last entry of the previous page.
 */
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { folderDir, FOLDER_TAG, isMissing, OBJECT_TAG } from './fs-layout';
import { assertListPrefix, listLimit } from './object-keys';
import type { ListedObject, ListOptions, ListPage, ObjectInfo } from './object-store';

/** One entry of a directory: an object's key or a folder's prefix (ending in `/`). */
interface Entry {
  name: string;
  folder: boolean;
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** The entries of `dir` in key order: a folder sorts as its name plus `/`, which is where its keys fall. */
async function readEntries(dir: string): Promise<Entry[]> {
  let dirents: Dirent[];
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
  const entries: Entry[] = [];
  for (const dirent of dirents) {
    if (dirent.isDirectory() && dirent.name.endsWith(FOLDER_TAG)) {
      entries.push({ name: dirent.name.slice(0, -FOLDER_TAG.length), folder: true });
    } else if (dirent.isFile() && dirent.name.endsWith(OBJECT_TAG)) {
      entries.push({ name: dirent.name.slice(0, -OBJECT_TAG.length), folder: false });
    }
  }
  const sortKey = (entry: Entry) => (entry.folder ? `${entry.name}/` : entry.name);
  return entries.sort((a, b) => byteOrder(sortKey(a), sortKey(b)));
}

/**
 * Keys under `dir` (whose folder prefix is `base`) in key order, skipping every
 * key at or before `after`; whole folders that sort before it are not entered.
 */
async function* keysUnder(dir: string, base: string, after: string | undefined): AsyncGenerator<string> {
  for (const entry of await readEntries(dir)) {
    const key = base + entry.name + (entry.folder ? '/' : '');
    if (after !== undefined && byteOrder(key, after) <= 0 && !(entry.folder && after.startsWith(key))) continue;
    if (entry.folder) yield* keysUnder(path.join(dir, entry.name + FOLDER_TAG), key, after);
    else yield key;
  }
}

/** The entries a listing walks, in order: keys, or with `folders` keys and folder prefixes of the top level. */
async function* listingEntries(objectsDir: string, prefix: string, folders: boolean, cursor: string | undefined) {
  const base = prefix.slice(0, prefix.lastIndexOf('/') + 1);
  const dir = folderDir(objectsDir, base);
  const namePrefix = prefix.slice(base.length);
  for (const entry of await readEntries(dir)) {
    if (!entry.name.startsWith(namePrefix)) continue;
    const key = base + entry.name + (entry.folder ? '/' : '');
    if (!entry.folder) {
      if (cursor === undefined || byteOrder(key, cursor) > 0) yield { key, folder: false };
    } else if (folders) {
      // A folder counts only while it holds an object (S3 has no empty folders; a prune may lag).
      if (cursor !== undefined && byteOrder(key, cursor) <= 0) continue;
      const first = await keysUnder(path.join(dir, entry.name + FOLDER_TAG), key, undefined).next();
      if (!first.done) yield { key, folder: true };
    } else {
      for await (const nested of keysUnder(path.join(dir, entry.name + FOLDER_TAG), key, cursor)) {
        yield { key: nested, folder: false };
      }
    }
  }
}

/** One page of {@link ObjectStore.list} on the fs store; `readInfo` reads an object's header. */
export async function listFsObjects(
  objectsDir: string,
  options: ListOptions,
  readInfo: (key: string) => Promise<ObjectInfo | undefined>,
): Promise<ListPage> {
  assertListPrefix(options.prefix);
  const limit = listLimit(options);
  const page: ListPage = { objects: [], prefixes: [] };
  let taken = 0;
  for await (const entry of listingEntries(objectsDir, options.prefix, options.folders ?? false, options.cursor)) {
    if (taken === limit) {
      // One more exists: the cursor is the last entry returned (a key, or a folder prefix that skips its keys).
      page.nextCursor = lastEntry(page);
      break;
    }
    if (entry.folder) {
      page.prefixes.push(entry.key);
      taken += 1;
      continue;
    }
    const info = await readInfo(entry.key);
    if (info === undefined) continue; // deleted while listing
    const { contentType: _contentType, ...listed } = info;
    page.objects.push(listed satisfies ListedObject);
    taken += 1;
  }
  return page;
}

/** The greatest entry of a page (objects and prefixes are interleaved in key order). */
function lastEntry(page: ListPage): string {
  const lastObject = page.objects.at(-1)?.key;
  const lastPrefix = page.prefixes.at(-1);
  if (lastObject === undefined) return lastPrefix!;
  if (lastPrefix === undefined) return lastObject;
  return byteOrder(lastObject, lastPrefix) > 0 ? lastObject : lastPrefix;
}
