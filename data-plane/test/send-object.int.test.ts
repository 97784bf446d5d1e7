/**
 * sendObject against a real fs store in a temp directory, through a Fastify
 * route: a download reads the version its object's row named, and when an
 * upload replaced it meanwhile and deleted its bytes after answering, the
 * download reads the row again and serves the version it names now.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { createFsObjectStore, newObjectVersion, objectKey, objectNotFound, type ObjectStore } from '@baseplane/contracts/object-store';
import { sendObject } from '../src/storage/send-object';

let root: string;
let store: ObjectStore;
let app: FastifyInstance;
/** What the route serves: the key read first, and what reading the row again answers (undefined: the row is gone). */
let route: { read: string; again: string | undefined; relocations: number };

const keyOf = (version: string) => objectKey('project', 'bucket', 'photo.png', version);
const put = (key: string, text: string) => store.put(key, Readable.from([Buffer.from(text)]), { contentType: 'image/png' });

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'baseplane-send-'));
  store = createFsObjectStore(root);
  app = Fastify();
  app.get('/photo', (request, reply) => sendObject(store, route.read, request, reply, 'no-cache', async () => {
    route.relocations += 1;
    if (route.again === undefined) throw objectNotFound();
    return route.again;
  }));
  app.setErrorHandler((error, _request, reply) => {
    const status = error instanceof ApiError ? error.status : 500;
    void reply.status(status).send({ code: error instanceof ApiError ? error.code : 'internal' });
  });
});
afterAll(async () => {
  await app.close();
  await rm(root, { recursive: true, force: true });
});

describe('sendObject', () => {
  it('serves the version the row names now when the one it read is gone, and that one only', async () => {
    const [gone, now] = [keyOf(newObjectVersion()), keyOf(newObjectVersion())];
    const { etag } = await put(now, 'the new photo');
    route = { read: gone, again: now, relocations: 0 };
    const answer = await app.inject({ method: 'GET', url: '/photo' });
    expect([answer.statusCode, answer.body, answer.headers.etag]).toEqual([200, 'the new photo', `"${etag}"`]);
    // Conditional: the caller's copy is the new version.
    const current = await app.inject({ method: 'GET', url: '/photo', headers: { 'if-none-match': `"${etag}"` } });
    expect(current.statusCode).toBe(304);
    expect(route.relocations).toBe(2);
  });

  it('answers 404 when the row is gone, or still names the version that is gone, and reads it once', async () => {
    const gone = keyOf(newObjectVersion());
    route = { read: gone, again: undefined, relocations: 0 };
    expect((await app.inject({ method: 'GET', url: '/photo' })).statusCode).toBe(404);
    route = { read: gone, again: gone, relocations: 0 };
    expect((await app.inject({ method: 'GET', url: '/photo' })).statusCode).toBe(404);
    expect(route.relocations).toBe(1);
  });

  it('does not read the row again when the version it read is there', async () => {
    const there = keyOf(newObjectVersion());
    await put(there, 'the photo');
    route = { read: there, again: undefined, relocations: 0 };
    const answer = await app.inject({ method: 'GET', url: '/photo', headers: { range: 'bytes=4-8' } });
    expect([answer.statusCode, answer.body, route.relocations]).toEqual([206, 'photo', 0]);
  });
});
