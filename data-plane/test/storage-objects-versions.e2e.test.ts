/**
 * Each stored version of an object has a key of its own, end to end over HTTP
 * through the gateway, on the store the services use: an upload's bytes go to
 * a new version and the one it replaced goes after its answer; a COMMIT that
 * fails (an upload's, a delete's) leaves the object exactly as it was; an
 * object and a folder of the same name both exist, on versitygw's posix
 * backend too; and objects stored before versions (their rows have none,
 * their bytes are at the path's own key) are read, listed, replaced, deleted
 * and served at public and signed URLs as before.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { objectKey } from '@baseplane/contracts/object-store';
import { call } from '../../deploy/test/http';
import { putObject, servicesBackend } from '../../control-plane/test/storage-fixtures';
import {
  createBucket, etagOf, fetchBytes, local, objects, operator, p, rowOf, store, storedKeyOf, storedKeysOf, tenant, upload, useStorageApp,
} from './storage-objects-fixtures';

useStorageApp();

/** The object as a download serves it: status and bytes. */
const download = async (bucket: string, path: string) => {
  const answer = await fetchBytes(`${objects(bucket)}/download?path=${encodeURIComponent(path)}`, operator());
  return { status: answer.status, text: answer.bytes.toString() };
};

beforeAll(async () => {
  await createBucket(p, { name: 'versioned' });
  await createBucket(p, { name: 'open', public: true });
});

describe(`versions (services on ${servicesBackend()})`, () => {
  it('stores each upload as a version of its own, and deletes the version it replaced once it has answered', async () => {
    expect((await upload('versioned', 'v/one.txt', 'first', operator())).status).toBe(201);
    const first = await rowOf('versioned', 'v/one.txt');
    expect(first.version).toMatch(/^[0-9a-f]{24}$/);
    expect(await storedKeysOf('versioned', 'v/one.txt')).toEqual([objectKey(p.project.id, 'versioned', 'v/one.txt', first.version)]);

    const replaced = await upload('versioned', 'v/one.txt', 'second', operator(), { upsert: true });
    expect(replaced.status).toBe(201);
    const second = await rowOf('versioned', 'v/one.txt');
    expect(second.version).not.toBe(first.version);
    await expect.poll(() => storedKeysOf('versioned', 'v/one.txt')).toEqual([objectKey(p.project.id, 'versioned', 'v/one.txt', second.version)]);
    expect(await download('versioned', 'v/one.txt')).toEqual({ status: 200, text: 'second' });
    // Versions are the store's: a path, or a listing's prefix, holding the tab that parts a key's version is refused.
    for (const url of [`${objects('versioned')}?prefix=${encodeURIComponent('v/one.txt\t')}`, `${objects('versioned')}/download?path=${encodeURIComponent(`v/one.txt\t${second.version}`)}`]) {
      const refused = await call('GET', url, { headers: operator() });
      expect({ status: refused.status, code: refused.body.code }, url).toEqual({ status: 400, code: 'invalid_request' });
    }

    // A name of 225 bytes leaves its version room in the store's 250-byte segments.
    const longest = `v/${'n'.repeat(225)}`;
    expect((await upload('versioned', longest, 'long name', operator())).status).toBe(201);
    expect(await download('versioned', longest)).toEqual({ status: 200, text: 'long name' });
  });

  it('keeps an object and objects under a folder of its name, in either order', async () => {
    // On versitygw's posix backend a key is a file: `a/b` and `a/b/c` as keys would make a/b a file and a folder.
    for (const [first, second] of [['clash/a', 'clash/a/b'], ['other/x/y', 'other/x']]) {
      expect((await upload('versioned', first!, `object ${first}`, operator())).status).toBe(201);
      const answer = await upload('versioned', second!, `object ${second}`, operator());
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      expect(await download('versioned', first!)).toEqual({ status: 200, text: `object ${first}` });
      expect(await download('versioned', second!)).toEqual({ status: 200, text: `object ${second}` });
    }
    const listed = await call('GET', `${objects('versioned')}?prefix=clash/`, { headers: operator() });
    expect(listed.body.objects.map((object: { path: string }) => object.path)).toEqual(['clash/a']);
    expect(listed.body.prefixes).toEqual(['clash/a/']);
    // Replacing the object keeps the folder's objects.
    expect((await upload('versioned', 'clash/a', 'object clash/a, again', operator(), { upsert: true })).status).toBe(201);
    expect(await download('versioned', 'clash/a/b')).toEqual({ status: 200, text: 'object clash/a/b' });
  });

  it('serves, lists, replaces and deletes objects stored before versions, whose bytes are at their path\'s own key', async () => {
    // Rows without a version and bytes at the path's key: what an earlier release stored.
    for (const path of ['legacy/a.txt', 'legacy/b.txt']) await putObject(store, tenant, p.project.id, 'open', path, `legacy ${path}`);
    expect((await rowOf('open', 'legacy/a.txt')).version).toBeNull();
    expect(await download('open', 'legacy/a.txt')).toEqual({ status: 200, text: 'legacy legacy/a.txt' });
    const ranged = await fetchBytes(`${objects('open')}/download?path=legacy/a.txt`, { ...operator(), range: 'bytes=0-5' });
    expect([ranged.status, ranged.bytes.toString()]).toEqual([206, 'legacy']);
    const current = await fetchBytes(`${objects('open')}/download?path=legacy/a.txt`, { ...operator(), 'if-none-match': `"${etagOf('legacy legacy/a.txt')}"` });
    expect(current.status).toBe(304);
    const listed = await call('GET', `${objects('open')}?prefix=legacy/`, { headers: operator() });
    expect(listed.body.objects.map((object: { path: string; size: number }) => [object.path, object.size])).toEqual([['legacy/a.txt', 19], ['legacy/b.txt', 19]]);
    const atPublic = await fetchBytes(`/storage/v1/object/public/${p.project.id}/open/legacy/a.txt`);
    expect([atPublic.status, atPublic.bytes.toString()]).toEqual([200, 'legacy legacy/a.txt']);
    const signed = await call('GET', `${objects('open')}/url?path=legacy/b.txt`, { headers: operator() });
    const atSigned = await fetchBytes(local(signed.body.url));
    expect([atSigned.status, atSigned.bytes.toString()]).toEqual([200, 'legacy legacy/b.txt']);

    // Replaced, it becomes a version like any other, and its old bytes go.
    expect((await upload('open', 'legacy/a.txt', 'a version now', operator(), { upsert: true })).status).toBe(201);
    const row = await rowOf('open', 'legacy/a.txt');
    expect(row.version).toMatch(/^[0-9a-f]{24}$/);
    await expect.poll(() => storedKeysOf('open', 'legacy/a.txt')).toEqual([objectKey(p.project.id, 'open', 'legacy/a.txt', row.version)]);
    expect(await download('open', 'legacy/a.txt')).toEqual({ status: 200, text: 'a version now' });
    expect((await fetchBytes(`/storage/v1/object/public/${p.project.id}/open/legacy/a.txt`)).bytes.toString()).toBe('a version now');

    // Deleted, its row and its bytes go.
    const deleted = await call('DELETE', objects('open'), { headers: operator(), body: { paths: ['legacy/b.txt'] } });
    expect(deleted.body).toEqual({ deleted: ['legacy/b.txt'] });
    expect(await rowOf('open', 'legacy/b.txt')).toBeUndefined();
    expect(await storedKeysOf('open', 'legacy/b.txt')).toEqual([]);
    expect((await call('GET', local(signed.body.url))).status).toBe(404);
  });
});

describe('a COMMIT that fails', () => {
  // Deferred constraint triggers fire at COMMIT: the statements before it pass, and PostgreSQL refuses the COMMIT itself.
  beforeAll(async () => {
    await tenant.client.query(`
      create function public.refuse_at_commit() returns trigger language plpgsql as $$
      begin
        if tg_op <> 'DELETE' and new.content_type = 'application/x-refused-at-commit' then
          raise exception 'the test refuses this upload at COMMIT';
        end if;
        if tg_op = 'DELETE' and old.path like 'sticky/%' then
          raise exception 'the test refuses this delete at COMMIT';
        end if;
        return null;
      end $$;
      create constraint trigger refuse_at_commit after insert or update or delete on storage.objects
        deferrable initially deferred for each row execute function public.refuse_at_commit();
      -- The connection lost during the COMMIT, before its answer: the data plane cannot tell whether it committed.
      create function public.lose_at_commit() returns trigger language plpgsql security definer as $$
      begin
        if new.content_type = 'application/x-lost-at-commit' then
          perform pg_terminate_backend(pg_backend_pid());
          perform pg_sleep(5);
        end if;
        return null;
      end $$;
      create constraint trigger lose_at_commit after insert or update on storage.objects
        deferrable initially deferred for each row execute function public.lose_at_commit();
    `);
  });

  it('leaves a replaced object exactly as it was, old row over old bytes, and keeps none of the new bytes', async () => {
    const before = await upload('versioned', 'doomed/kept.txt', 'the old bytes', operator());
    expect(before.status).toBe(201);
    const row = await rowOf('versioned', 'doomed/kept.txt');
    const keys = await storedKeysOf('versioned', 'doomed/kept.txt');

    const refused = await upload('versioned', 'doomed/kept.txt', 'the new bytes, longer', operator(), { upsert: true, type: 'application/x-refused-at-commit' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.message).toBe('the test refuses this upload at COMMIT');
    expect(await rowOf('versioned', 'doomed/kept.txt')).toEqual(row);
    expect(row).toMatchObject({ size: '13', content_type: 'text/plain', etag: before.body.etag });
    expect(await download('versioned', 'doomed/kept.txt')).toEqual({ status: 200, text: 'the old bytes' });
    expect(await storedKeysOf('versioned', 'doomed/kept.txt')).toEqual(keys);

    // A new path: nothing at all.
    const fresh = await upload('versioned', 'doomed/new.txt', 'never', operator(), { type: 'application/x-refused-at-commit' });
    expect(fresh.status).toBe(400);
    expect(await rowOf('versioned', 'doomed/new.txt')).toBeUndefined();
    expect(await storedKeysOf('versioned', 'doomed/new.txt')).toEqual([]);
  });

  it('leaves the new bytes to the storage sweep when the COMMIT\'s outcome is unknown, its connection lost before the answer', async () => {
    expect((await upload('versioned', 'lost/kept.txt', 'the old bytes', operator())).status).toBe(201);
    const row = await rowOf('versioned', 'lost/kept.txt');
    const lost = await upload('versioned', 'lost/kept.txt', 'the new bytes', operator(), { upsert: true, type: 'application/x-lost-at-commit' });
    expect(lost.status, JSON.stringify(lost.body)).toBeGreaterThanOrEqual(500);
    // It did not commit (the backend ended before it could), but the data plane could not know: had it committed, these
    // bytes would be the object's. The sweep reads the rows under the path's lock, and will remove them.
    expect(await rowOf('versioned', 'lost/kept.txt')).toEqual(row);
    expect(await download('versioned', 'lost/kept.txt')).toEqual({ status: 200, text: 'the old bytes' });
    const keys = await storedKeysOf('versioned', 'lost/kept.txt');
    expect(keys).toHaveLength(2);
    expect(keys).toContain(objectKey(p.project.id, 'versioned', 'lost/kept.txt', row.version));
  });

  it('keeps the rows and the bytes of a delete: the bytes go only once the rows\' removal has committed', async () => {
    for (const path of ['sticky/a.txt', 'sticky/b.txt']) expect((await upload('versioned', path, `still ${path}`, operator())).status).toBe(201);
    const key = await storedKeyOf('versioned', 'sticky/a.txt');
    const refused = await call('DELETE', objects('versioned'), { headers: operator(), body: { paths: ['sticky/a.txt', 'sticky/b.txt'] } });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.message).toBe('the test refuses this delete at COMMIT');
    for (const path of ['sticky/a.txt', 'sticky/b.txt']) {
      expect(await rowOf('versioned', path)).toBeDefined();
      expect(await download('versioned', path)).toEqual({ status: 200, text: `still ${path}` });
    }
    expect(await storedKeysOf('versioned', 'sticky/a.txt')).toEqual([key]);
  });
});
