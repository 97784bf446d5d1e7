/**
 * The S3 object store when its server misbehaves: a bad secret, a server gone,
 * hanging, stalling mid-upload, cut off, or storing a part after its upload was
 * aborted. Every call answers 503 storage_unavailable in bounded time, and no
 * object or multipart upload is left behind once the server is back.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListPartsCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, inject, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { openS3ObjectStore, type ObjectStore } from '@baseplane/contracts/object-store';
import { resolveS3ServerBin, s3BucketsDir, startS3Server, type S3Coordinates } from '../../deploy/local/src/s3-server';
import { createStackLog } from '../../deploy/local/src/stack-log';
import { processWithArgument } from '../../deploy/test/processes';
import { bytesOf, generated, MiB, rejection, trickled } from './object-bodies';
import { partHoldingRelayTo, relayTo, shapingRelayTo } from './s3-relays';

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

/** A client straight to `server`, past any relay the store goes through, and how many multipart uploads `bucket` has there. */
function directTo(server: S3Coordinates, bucket: string): { client: S3Client; multipartUploads: () => Promise<number> } {
  const client = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server });
  return { client, multipartUploads: async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0 };
}

/** An S3 server of the test's own, which it may stop or pause, in a temp directory that `stop` removes with it. */
async function ownS3Server(name: string) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `baseplane-s3-${name}-`));
  const log = createStackLog({ quiet: true, logDir: path.join(dataDir, 'logs') });
  const server = await startS3Server({ bin: resolveS3ServerBin(process.env), dataDir, log });
  return {
    server,
    dataDir,
    async stop() {
      await server.stop();
      await log.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe('S3 object store when its server goes away', () => {
  it('answers every call with ApiError 503 storage_unavailable, not a raw SDK error', async () => {
    const { server, stop } = await ownS3Server('down');
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
      await stop();
    }
  }, 60_000);
});

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

describe('S3 object store when its server stops taking an upload', () => {
  const s3 = () => inject('s3');

  it('gives the upload up after the stall timeout with ApiError 503 storage_unavailable, leaving no object and no multipart upload', async () => {
    // The first part (5 MiB) gets 1 MiB through, then the server takes nothing more.
    const relay = await shapingRelayTo(s3().endpoint, { stallAfterBytes: 1 * MiB });
    const bucket = `stall-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...s3(), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000 });
    const { client, multipartUploads } = directTo(s3(), bucket);
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
    const { server, dataDir, stop } = await ownS3Server('paused');
    const pid = processWithArgument(s3BucketsDir(dataDir));
    const bucket = 'paused';
    const store = await openS3ObjectStore({ ...server, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000, answerTimeoutMs: 1_000 });
    const { client, multipartUploads } = directTo(server, bucket);
    let paused = false;
    try {
      const outcome = rejection(store.put('p/b/paused.bin', trickled(16 * MiB), { contentType: 'application/octet-stream' }));
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
      // The store's aborts sent while the server was paused timed out; one of its later ones gets through. They
      // back off (1, 2, 4, 8, 16 s apart, each given 1 s here): on a loaded machine the resumed server may take
      // longer than 1 s to answer the first few (this waited 15 s once and failed, the upload still there).
      const deadline = Date.now() + 35_000;
      while ((await multipartUploads()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await multipartUploads()).toBe(0);
      expect(await store.head('p/b/paused.bin')).toBeUndefined();
    } finally {
      if (paused) process.kill(pid, 'SIGCONT');
      client.destroy();
      await store.close();
      await stop();
    }
  }, 90_000);
});

describe('S3 object store cut off from its server mid-upload', () => {
  it('answers 503 and aborts the multipart upload once the server is reachable again, the Upload\'s own abort having failed', async () => {
    const relay = await shapingRelayTo(inject('s3').endpoint, {});
    const bucket = `cut-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...inject('s3'), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000, answerTimeoutMs: 1_000 });
    const { client, multipartUploads } = directTo(inject('s3'), bucket);
    try {
      const outcome = rejection(store.put('p/b/cut.bin', trickled(16 * MiB), { contentType: 'application/octet-stream' }));
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

describe('S3 object store when a part lands after its upload was aborted', () => {
  it('aborts the multipart upload again: a part in flight may bring it back, as S3 warns', async () => {
    const relay = await partHoldingRelayTo(inject('s3').endpoint);
    const bucket = `late-${randomUUID().slice(0, 8)}`;
    const store = await openS3ObjectStore({ ...inject('s3'), endpoint: relay.endpoint, forcePathStyle: true, bucket, uploadStallTimeoutMs: 1_000, answerTimeoutMs: 1_000 });
    const { client, multipartUploads } = directTo(inject('s3'), bucket);
    try {
      // One part's worth and a byte: the first part goes out, and the relay holds it part-way.
      const source = new Readable({ read() {} });
      source.push(randomBytes(5 * MiB + 1));
      const outcome = rejection(store.put('late/part.bin', source, { contentType: 'application/octet-stream' }));
      await expect.poll(() => relay.holding(), { timeout: 10_000 }).toBe(true);
      // The part's request makes no progress: the upload fails as stalled, and the store aborts its multipart upload.
      const error = await outcome;
      expect((error as ApiError).toBody?.()).toMatchObject({ code: 'storage_unavailable' });
      await expect.poll(multipartUploads, { timeout: 10_000 }).toBe(0);
      // Now the part's last bytes reach the server, which stores it and so brings the upload back.
      relay.release();
      await expect.poll(() => relay.heldAnswer(), { timeout: 10_000 }).toMatch(/^HTTP\/1\.1 200/);
      // Stored after the abort: the upload is back with it (unlisted on versitygw, its part's bytes on disk).
      const uploadId = decodeURIComponent(/[?&]uploadId=([^&\s]+)/.exec(relay.heldRequestLine())![1]!);
      const partsOf = async () => client.send(new ListPartsCommand({ Bucket: bucket, Key: 'late/part.bin', UploadId: uploadId })).then(
        (answer) => answer.Parts?.length ?? 0,
        (error: { name?: string }) => error.name,
      );
      // The store looks again after an abort, and aborts again what came back.
      await expect.poll(partsOf, { timeout: 20_000, interval: 200 }).toBe('NoSuchUpload');
      expect(await multipartUploads()).toBe(0);
      expect(await store.head('late/part.bin')).toBeUndefined();
    } finally {
      client.destroy();
      await store.close();
      await relay.close();
    }
  }, 60_000);
});
