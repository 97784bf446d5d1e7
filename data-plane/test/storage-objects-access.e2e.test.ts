/**
 * Deleting storage objects and who may touch them, end to end over HTTP
 * through the gateway: deleting many (and what the store refuses to delete),
 * end users under RLS policies on storage.objects, keys and tokens of another
 * project, operators of another team, and projects kept apart.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '@baseplane/contracts';
import { FS_STORAGE_DIR } from '@baseplane/contracts/object-store';
import { layoutOf, objectFile } from '../../contracts/src/object-store/fs-layout';
import { s3BucketsDir } from '../../deploy/local/src/s3-server';
import { bearer, call, createProject } from '../../deploy/test/http';
import { servicesBackend } from '../../control-plane/test/storage-fixtures';
import { signUpUser } from './rest-fixtures';
import {
  alice, asUser, bob, fetchBytes, objects, operator, other, p, rowOf, store, storedKeyOf, storedKeysOf, stranger, upload, useStorageApp,
} from './storage-objects-fixtures';

useStorageApp();

describe('deleting', () => {
  it('deletes many paths at once, answering those it deleted, rows and bytes gone', async () => {
    for (const path of ['trash/1.txt', 'trash/2.txt']) expect((await upload('docs', path, 'bye', operator())).status).toBe(201);
    const answer = await call('DELETE', objects('docs'), { headers: operator(), body: { paths: ['trash/1.txt', 'trash/2.txt', 'trash/never.txt'] } });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ deleted: ['trash/1.txt', 'trash/2.txt'] });
    expect(await rowOf('docs', 'trash/1.txt')).toBeUndefined();
    expect(await storedKeysOf('docs', 'trash/1.txt')).toEqual([]);
    expect(await storedKeysOf('docs', 'trash/2.txt')).toEqual([]);
  });

  // The file holding an object in the services' store: the fs store's, or the embedded versitygw's (posix backend).
  const storedFile = (key: string) => {
    const config = loadConfig(process.env);
    return config.storageBackend === 'fs'
      ? objectFile(layoutOf(path.join(inject('dataDir'), FS_STORAGE_DIR)).objects, key)
      : path.join(s3BucketsDir(inject('dataDir')), config.s3.bucket, key);
  };

  // An immutable file (chattr +i) is one the store really cannot delete: versitygw answers its key in DeleteObjects' Errors.
  // The rows go first and commit: what the store then refuses is bytes no row names, left to the storage sweep.
  it.skipIf(servicesBackend() === 's3' && loadConfig(process.env).s3.endpoint !== undefined)(
    'deletes every object asked, rows first, and leaves the bytes the store refuses to delete to the storage sweep', async () => {
      const paths = ['stuck/1.txt', 'stuck/2.txt', 'stuck/3.txt'];
      for (const path of paths) expect((await upload('docs', path, 'kept?', operator())).status).toBe(201);
      const stuck = await storedKeyOf('docs', 'stuck/2.txt');
      const file = storedFile(stuck);
      execFileSync('chattr', ['+i', file]);
      let answer;
      try {
        answer = await call('DELETE', objects('docs'), { headers: operator(), body: { paths } });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body).toEqual({ deleted: paths });
        for (const path of paths) expect(await rowOf('docs', path)).toBeUndefined();
        expect(await storedKeysOf('docs', 'stuck/1.txt')).toEqual([]);
        expect(await storedKeysOf('docs', 'stuck/3.txt')).toEqual([]);
        // The refused one's bytes stay, and are no object: not listed, not served.
        expect(await storedKeysOf('docs', 'stuck/2.txt')).toEqual([stuck]);
        const listed = await call('GET', `${objects('docs')}?prefix=stuck/`, { headers: operator() });
        expect(listed.body).toEqual({ objects: [], prefixes: [] });
        expect((await fetchBytes(`${objects('docs')}/download?path=stuck/2.txt`, operator())).status).toBe(404);
      } finally {
        execFileSync('chattr', ['-i', file]);
      }
      // What the storage sweep would do once the store lets go.
      expect(await store.deleteMany([stuck])).toEqual([stuck]);
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
  // An object in docs, put with the service key, which no policy shows anon.
  beforeAll(async () => {
    expect((await upload('docs', 'service.txt', 'from the server', p.service)).status).toBe(201);
  });

  it('lets a user upload into their own folder, recorded as theirs, and nowhere else', async () => {
    const mine = await upload('avatars', own(alice, 'me.png'), 'alice face', asUser(alice), { type: 'image/png' });
    expect(mine.status, JSON.stringify(mine.body)).toBe(201);
    expect(mine.body.owner).toBe(alice.id);
    const theirs = await upload('avatars', own(bob, 'me.png'), 'not bob', asUser(alice), { type: 'image/png' });
    expect(theirs.status).toBe(403);
    expect(theirs.body.code).toBe('42501');
    expect(await rowOf('avatars', own(bob, 'me.png'))).toBeUndefined();
    expect(await storedKeysOf('avatars', own(bob, 'me.png'))).toEqual([]);
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
