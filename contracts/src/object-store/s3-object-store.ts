/**
 * The object store on any S3-compatible service (`STORAGE_BACKEND=s3`): every
 * object of every project in one S3 bucket, under the keys of `object-keys.ts`.
 * Uploads go through `@aws-sdk/lib-storage` as streamed multipart uploads, so
 * memory holds a few parts at most whatever the object's size.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ApiError } from '../errors';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import { assertContentType } from './content-type';
import {
  assertFolderPrefix,
  assertListPrefix,
  assertObjectKey,
  listLimit,
  objectNotFound,
  rangeHeader,
  rangeNotSatisfiable,
} from './object-keys';
import type { S3Config } from '../config';
import type { ByteRange, ListOptions, ListPage, ObjectInfo, ObjectRead, ObjectStore, PutOptions, PutResult } from './object-store';
import { admittedMeter, observeAdmission } from './upload-meter';

/** Where the S3 store keeps objects and how it reaches the service: the S3_* configuration. */
export type S3ObjectStoreOptions = S3Config & {
  /** How long a call other than an upload waits for the service's answer (a read: its headers); 30 s when not set. */
  answerTimeoutMs?: number;
  /**
   * How long an upload's request (a part, a single PUT, its completion or abort) may go without
   * progress, no byte taken or answered, before the upload is given up; `uploadStallTimeoutSeconds`
   * (S3_UPLOAD_STALL_TIMEOUT_SECONDS), else 30 s, when not set. Keep it over 6 s outside tests:
   * the SDK waits up to 6 s for a part's `100 Continue`.
   */
  uploadStallTimeoutMs?: number;
};

/**
 * Parts of 5 MiB (S3's minimum), one sending while the next fills: an upload holds
 * about 10 MiB however large it is. More in flight bought no speed against a local server.
 */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 1;
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * A server that takes the connection and then says nothing (a stuck disk, a paused VM) would
 * otherwise hold the request, and a delete's row locks, for ever: no socket idle timeout can
 * tell it from a download its client paused.
 */
const ANSWER_TIMEOUT_MS = 30_000;
/**
 * An upload's requests are cut after this long without progress on their connection (the
 * socket's idle timeout: no write to it completing, no byte read from it), not after a total
 * time, so a large upload is not cut for being long. Progress is what Node sees: a part's
 * bytes sitting in the kernel's socket buffers (a few MiB) are not, so a link slower than
 * about 5 MiB per this timeout (~170 KB/s) may be taken for a stalled one.
 */
const UPLOAD_STALL_TIMEOUT_MS = 30_000;
/**
 * A failed upload's multipart upload is aborted by the store, first right away, then (when the
 * server did not answer) again after 1 s, 2 s, … up to a minute apart, for at most this long: an
 * abort fails when the server is down or stalled as a whole, and the parts would stay for ever.
 */
const LEFTOVER_ABORT_MS = 15 * 60_000;
const LEFTOVER_ABORT_MAX_DELAY_MS = 60_000;
/**
 * Once an abort is answered, the upload is looked up (ListParts) this long after it, then this
 * long after that, and aborted again when it is there: a part in flight when the abort ran may
 * still be stored after it, as S3's documentation of AbortMultipartUpload warns (versitygw's
 * posix backend brings the upload back for it, unlisted), and its bytes would stay for ever.
 * A part left in a stalled server's socket buffer lands when the server resumes, which is when
 * the abort gets through too.
 */
const LEFTOVER_CHECKS_MS = [1_000, 10_000];
/** How many times an upload found again is aborted again (one part at a time is in flight; a server that keeps it past this is not going to let go). */
const LEFTOVER_REABORTS = 3;
/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

/**
 * The upload client as one put's `Upload` sees it: the call that publishes the
 * object (CompleteMultipartUpload, or the PutObject of an object of one part)
 * first waits for `publish`, and is not sent when it rejects. lib-storage has no
 * step between an upload's last part and its completion; this is that step.
 */
function publishStep(client: S3Client, publish: () => Promise<void>): { client: S3Client; state: { called: boolean; refused: boolean; refusal?: unknown } } {
  const state: { called: boolean; refused: boolean; refusal?: unknown } = { called: false, refused: false };
  const send = (command: unknown, ...rest: unknown[]): Promise<unknown> => {
    const sendIt = () => (client.send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
    if (!(command instanceof CompleteMultipartUploadCommand || command instanceof PutObjectCommand)) return sendIt();
    state.called = true;
    return publish().then(sendIt, (refusal: unknown) => {
      state.refused = true;
      state.refusal = refusal;
      throw refusal;
    });
  };
  return { client: new Proxy(client, { get: (target, property, receiver) => (property === 'send' ? send : Reflect.get(target, property, receiver)) }), state };
}

/** Opens the store: checks the service answers and creates the bucket when it does not exist yet. */
export async function openS3ObjectStore(options: S3ObjectStoreOptions): Promise<ObjectStore> {
  const shared: S3ClientConfig = {
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    ...(options.accessKeyId && options.secretAccessKey
      ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
      : {}),
    // The SDK's default CRC32 checksums on every upload are not understood by every
    // S3-compatible server; only the calls that require one (DeleteObjects) get one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  const client = new S3Client({
    ...shared,
    // An unreachable server fails in seconds instead of hanging the request that needed it.
    // No idle timeout: a download paused by a slow client is idle on purpose.
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS },
  });
  const uploadStallMs = options.uploadStallTimeoutMs
    ?? (options.uploadStallTimeoutSeconds !== undefined ? options.uploadStallTimeoutSeconds * 1000 : UPLOAD_STALL_TIMEOUT_MS);
  // Uploads have a client of their own with a socket idle timeout: nothing an upload sends
  // or reads is ever paused on purpose, so a connection without progress is a server that
  // stopped taking the bytes or answering. The per-call answer timeout of the other calls
  // would be a total one here, and so also cut a large upload that is merely long.
  const uploadClient = new S3Client({
    ...shared,
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, socketTimeout: uploadStallMs },
    retryStrategy: noRetryOnStall(client),
    // No `Expect: 100-continue` on parts: the SDK would wait up to 6 s for the server's go-ahead, on a
    // connection silent by design, before the stall timeout could tell a stopped server from a slow one.
    expectContinueHeader: false,
  });
  const Bucket = options.bucket;
  const answerTimeoutMs = options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  let closed = false;

  /**
   * Makes sure the multipart upload of a failed put is gone: tries AbortMultipartUpload until the
   * server answers it (NoSuchUpload when the Upload's own abort went through), then checks that
   * no late part brought it back ({@link LEFTOVER_CHECKS_MS}), for at most {@link LEFTOVER_ABORT_MS}.
   * Resolves after the first try; the later steps run on their own.
   */
  const abortLeftover = (key: string, uploadId: string): Promise<void> => {
    const giveUpAt = Date.now() + LEFTOVER_ABORT_MS;
    let retryDelay = 1_000;
    let checks: number[] = [];
    let reaborts = 0;
    const later = (step: () => Promise<void>, delay: number) => {
      if (closed || Date.now() + delay > giveUpAt) return;
      setTimeout(() => void step(), delay).unref();
    };
    /** A call the server did not answer, or answered with a 5xx: the step is tried again, further apart each time. */
    const retried = (error: unknown, step: () => Promise<void>): boolean => {
      const status = statusOf(error);
      if (status !== undefined && status < 500) return false;
      later(step, retryDelay);
      retryDelay = Math.min(retryDelay * 2, LEFTOVER_ABORT_MAX_DELAY_MS);
      return true;
    };
    const check = async (): Promise<void> => {
      try {
        await answered(answerTimeoutMs, (abortSignal) => client.send(new ListPartsCommand({ Bucket, Key: key, UploadId: uploadId, MaxParts: 1 }), { abortSignal }));
      } catch (error) {
        // NoSuchUpload: gone, for now; any other answer short of a 5xx will not change on a retry.
        if (!retried(error, check) && statusOf(error) === 404 && checks.length > 0) later(check, checks.shift()!);
        return;
      }
      // Still there (a late part): abort again.
      if (reaborts < LEFTOVER_REABORTS) {
        reaborts += 1;
        await abort();
      }
    };
    const abort = async (): Promise<void> => {
      try {
        await answered(answerTimeoutMs, (abortSignal) => client.send(new AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId }), { abortSignal }));
      } catch (error) {
        if (retried(error, abort)) return;
      }
      checks = [...LEFTOVER_CHECKS_MS];
      later(check, checks.shift()!);
    };
    return abort();
  };

  try {
    await ensureBucket(client, Bucket);
  } catch (error) {
    client.destroy();
    uploadClient.destroy();
    throw new Error(`S3 at ${options.endpoint ?? 'AWS'}: cannot use bucket "${Bucket}": ${describe(error)}`);
  }

  const headInfo = async (key: string): Promise<ObjectInfo | undefined> => {
    try {
      const head = await answered(answerTimeoutMs, (abortSignal) => client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal }));
      return {
        key,
        size: head.ContentLength ?? 0,
        etag: unquote(head.ETag),
        contentType: head.ContentType ?? 'application/octet-stream',
        updatedAt: head.LastModified ?? new Date(0),
      };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw unavailable(error);
    }
  };

  return {
    kind: 's3',

    async put(key: string, body: Readable, putOptions: PutOptions): Promise<PutResult> {
      observeAdmission(putOptions);
      assertObjectKey(key);
      assertContentType(putOptions.contentType);
      const meter = await admittedMeter(putOptions, false);
      // A failing or aborted source fails the meter, which fails the upload; the Upload then
      // aborts its multipart upload (or never sends its single PUT), so nothing is stored.
      pipeline(body, meter, () => {});
      const onAbort = () => meter.destroy(abortError());
      putOptions.signal?.addEventListener('abort', onAbort, { once: true });
      const { publish } = putOptions;
      // Published once the meter has seen the whole body: what it counted is what is stored.
      const publishing = publish ? publishStep(uploadClient, () => publish({ size: meter.bytes })) : undefined;
      const upload = new Upload({
        client: publishing?.client ?? uploadClient,
        params: { Bucket, Key: key, Body: meter, ContentType: putOptions.contentType },
        partSize: PART_BYTES,
        queueSize: PARTS_IN_FLIGHT,
        // The store aborts a failed multipart upload itself (abortLeftover): the Upload's own abort is
        // awaited before done() fails, which after a stall would be one more stall timeout on a silent server.
        leavePartsOnError: true,
      });
      try {
        if (putOptions.signal?.aborted) onAbort();
        const done = await upload.done();
        // Loud, should lib-storage ever publish by a call the step does not know.
        if (publishing && !publishing.state.called) throw new Error('the S3 upload was published without its publish step');
        return { size: meter.bytes, etag: unquote(done.ETag) };
      } catch (error) {
        // The service failed mid-way: stop reading the source too, so the sender is not left hanging.
        meter.destroy();
        const stalled = (error as Error | undefined)?.name === 'TimeoutError';
        if (upload.uploadId) {
          const aborted = abortLeftover(key, upload.uploadId);
          // Nothing is left once put fails, except after a stall: the server may not answer that either.
          if (!stalled) await aborted;
        }
        // The caller's publish step refused (the path taken meanwhile, a policy): its answer, not the store's.
        if (publishing?.state.refused) throw publishing.state.refusal;
        // Filesystem-backed servers (versitygw's posix backend) cannot hold both `a` and `a/b`.
        if (statusOf(error) === 409) throw nameTakenByFolderOrObject(key, describe(error));
        // A request of the upload made no progress for uploadStallMs; its multipart upload is being aborted.
        if (stalled) {
          throw storageUnavailable(`the object store made no progress on the upload for ${uploadStallMs / 1000} s`);
        }
        throw unavailable(error);
      } finally {
        putOptions.signal?.removeEventListener('abort', onAbort);
      }
    },

    async get(key: string, range?: ByteRange): Promise<ObjectRead> {
      assertObjectKey(key);
      // Checked here too, because S3 answers 200 with the whole object to a range it cannot parse.
      if (range && 'start' in range && (range.start < 0 || (range.end !== undefined && range.end < range.start))) {
        throw rangeNotSatisfiable((await headInfo(key))?.size ?? 0);
      }
      try {
        // Only until the headers: the body then flows as fast as the caller reads it.
        const answer = await answered(answerTimeoutMs, (abortSignal) => client.send(
          new GetObjectCommand({ Bucket, Key: key, ...(range ? { Range: rangeHeader(range) } : {}) }),
          { abortSignal },
        ));
        const contentRange = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(answer.ContentRange ?? '');
        const size = contentRange ? Number(contentRange[3]) : (answer.ContentLength ?? 0);
        return {
          body: answer.Body as Readable,
          contentType: answer.ContentType ?? 'application/octet-stream',
          size,
          etag: unquote(answer.ETag),
          updatedAt: answer.LastModified ?? new Date(0),
          // A server that did not take the range (no Content-Range) sent the whole object: it is served whole.
          ...(contentRange ? { range: { start: Number(contentRange[1]), end: Number(contentRange[2]) } } : {}),
        };
      } catch (error) {
        const status = statusOf(error);
        if (status === 404) throw objectNotFound();
        if (status === 416) throw rangeNotSatisfiable((await headInfo(key))?.size ?? 0);
        throw unavailable(error);
      }
    },

    async head(key: string): Promise<ObjectInfo | undefined> {
      assertObjectKey(key);
      return headInfo(key);
    },

    async list(listOptions: ListOptions): Promise<ListPage> {
      assertListPrefix(listOptions.prefix);
      const answer = await answered(answerTimeoutMs, (abortSignal) => client.send(
        new ListObjectsV2Command({
          Bucket,
          Prefix: listOptions.prefix,
          MaxKeys: listLimit(listOptions),
          ...(listOptions.folders ? { Delimiter: '/' } : {}),
          ...(listOptions.cursor ? { ContinuationToken: listOptions.cursor } : {}),
        }),
        { abortSignal },
      )).catch(rethrowUnavailable);
      return {
        objects: (answer.Contents ?? []).map((object) => ({
          key: object.Key!,
          size: object.Size ?? 0,
          etag: unquote(object.ETag),
          updatedAt: object.LastModified ?? new Date(0),
        })),
        prefixes: (answer.CommonPrefixes ?? []).map((common) => common.Prefix!),
        ...(answer.IsTruncated && answer.NextContinuationToken ? { nextCursor: answer.NextContinuationToken } : {}),
      };
    },

    async deleteMany(keys: readonly string[]): Promise<string[]> {
      keys.forEach(assertObjectKey);
      const refused = new Set<string>();
      for (let at = 0; at < keys.length; at += DELETE_BATCH) {
        const batch = await deleteBatch(client, Bucket, keys.slice(at, at + DELETE_BATCH), answerTimeoutMs);
        for (const error of batch) refused.add(error.Key ?? '');
      }
      return keys.filter((key) => !refused.has(key));
    },

    async deletePrefix(prefix: string): Promise<number> {
      assertFolderPrefix(prefix);
      let deleted = 0;
      // Always the first page again: what was deleted no longer lists, and no token goes stale.
      for (;;) {
        const page = await answered(answerTimeoutMs, (abortSignal) =>
          client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, MaxKeys: DELETE_BATCH }), { abortSignal }),
        ).catch(rethrowUnavailable);
        const keys = (page.Contents ?? []).map((object) => object.Key!);
        if (keys.length === 0) return deleted;
        const refused = await deleteBatch(client, Bucket, keys, answerTimeoutMs);
        // Listed again, they would be asked for again for ever; the caller tries the whole prefix again later.
        if (refused.length > 0) throw new Error(`S3 refused to delete ${refused.length} object(s) under "${prefix}", e.g. ${describeRefusal(refused[0]!)}`);
        deleted += keys.length;
      }
    },

    async sweepUnfinished(before: Date): Promise<number> {
      const call = <T>(run: (abortSignal: AbortSignal) => Promise<T>): Promise<T> => answered(answerTimeoutMs, run).catch(rethrowUnavailable);
      /** When the upload last took a part (its start when it has none). */
      const lastMoved = async (Key: string, UploadId: string, initiated: Date): Promise<Date> => {
        let latest = initiated;
        let PartNumberMarker: string | undefined;
        do {
          const marker = PartNumberMarker ? { PartNumberMarker } : {};
          const parts = await call((abortSignal) => client.send(new ListPartsCommand({ Bucket, Key, UploadId, ...marker }), { abortSignal }));
          for (const part of parts.Parts ?? []) if (part.LastModified && part.LastModified > latest) latest = part.LastModified;
          PartNumberMarker = parts.IsTruncated ? parts.NextPartNumberMarker : undefined;
        } while (PartNumberMarker);
        return latest;
      };
      let removed = 0;
      let markers: { KeyMarker?: string; UploadIdMarker?: string } = {};
      do {
        const page = await call((abortSignal) => client.send(new ListMultipartUploadsCommand({ Bucket, ...markers }), { abortSignal }));
        for (const upload of page.Uploads ?? []) {
          if (!upload.Key || !upload.UploadId || !upload.Initiated || upload.Initiated >= before) continue;
          const moved = await lastMoved(upload.Key, upload.UploadId, upload.Initiated).catch((error: unknown) => {
            // Finished or aborted since the listing: nothing to do.
            if (statusOf(error) === 404) return undefined;
            throw error;
          });
          if (moved === undefined || moved >= before) continue;
          const { Key, UploadId } = upload;
          try {
            await call((abortSignal) => client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }), { abortSignal }));
            removed += 1;
          } catch (error) {
            if (statusOf(error) !== 404) throw error;
          }
        }
        markers = page.IsTruncated && page.NextKeyMarker ? { KeyMarker: page.NextKeyMarker, ...(page.NextUploadIdMarker ? { UploadIdMarker: page.NextUploadIdMarker } : {}) } : {};
      } while (markers.KeyMarker);
      return removed;
    },

    async close(): Promise<void> {
      closed = true;
      client.destroy();
      uploadClient.destroy();
    },
  };
}

async function ensureBucket(client: S3Client, Bucket: string): Promise<void> {
  try {
    // A GET rather than HeadBucket: its errors carry a body, so a bad secret reads as
    // SignatureDoesNotMatch instead of a bare status.
    await client.send(new ListObjectsV2Command({ Bucket, MaxKeys: 1 }));
    return;
  } catch (error) {
    if (!(error instanceof S3ServiceException && error.name === 'NoSuchBucket')) throw error;
  }
  try {
    await client.send(new CreateBucketCommand({ Bucket }));
  } catch (error) {
    // Another replica created it in between.
    if (!(error instanceof S3ServiceException && error.name === 'BucketAlreadyOwnedByYou')) throw error;
  }
}

/** One key S3 did not delete, as DeleteObjects answers it. */
interface DeleteRefusal {
  Key?: string;
  Code?: string;
  Message?: string;
}

/**
 * Deletes up to {@link DELETE_BATCH} keys in one DeleteObjects; answers the keys it refused. S3
 * answers 200 even when some fail (each in `Errors`, the others deleted): a call failing as a
 * whole is 503, as other calls' are, and what it deleted before failing is not known.
 */
async function deleteBatch(client: S3Client, Bucket: string, keys: string[], answerTimeoutMs: number): Promise<DeleteRefusal[]> {
  const answer = await answered(answerTimeoutMs, (abortSignal) => client.send(
    new DeleteObjectsCommand({ Bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
    { abortSignal },
  )).catch(rethrowUnavailable);
  return answer.Errors ?? [];
}

function describeRefusal(refusal: DeleteRefusal): string {
  return `"${refusal.Key}": ${refusal.Code ?? ''} ${refusal.Message ?? ''}`.trim();
}

type RetryStrategyV2 = Extract<NonNullable<S3ClientConfig['retryStrategy']>, { acquireInitialRetryToken: unknown }>;

/**
 * The SDK's standard retries (those of `client`) except after a stall: a request cut for
 * want of progress is not sent again, so an upload is given up after one stall timeout,
 * not three. Other transient failures (a reset kept-alive socket) are still retried.
 */
function noRetryOnStall(client: S3Client): RetryStrategyV2 {
  const standard = async () => (await client.config.retryStrategy()) as RetryStrategyV2;
  return {
    acquireInitialRetryToken: async (scope) => (await standard()).acquireInitialRetryToken(scope),
    refreshRetryTokenForRetry: async (token, errorInfo) => {
      if ((errorInfo.error as Error | undefined)?.name === 'TimeoutError') throw errorInfo.error;
      return (await standard()).refreshRetryTokenForRetry(token, errorInfo);
    },
    recordSuccess: (token) => {
      void standard().then((strategy) => strategy.recordSuccess(token));
    },
  };
}

/** The HTTP status of an SDK error, if it carries one. */
function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/**
 * A call the service did not answer (refused, reset, timed out) or answered with a 5xx, as
 * ApiError 503 `storage_unavailable`, which the caller may try again, rather than a bare 500.
 * Only errors of an SDK call carry `$metadata`: a failing upload source (a cut multipart
 * body, an abort, 413) is not the service's and stays as it is.
 */
function unavailable(error: unknown): unknown {
  if (error instanceof ApiError || typeof error !== 'object' || error === null || !('$metadata' in error)) return error;
  const status = statusOf(error);
  if (status !== undefined && status < 500) return error;
  return storageUnavailable('the object store is not reachable', error);
}

/** ApiError 503 `storage_unavailable`; `cause` (the SDK's error) is for the log, never the answer. */
function storageUnavailable(message: string, cause?: unknown): ApiError {
  const error = new ApiError(503, 'storage_unavailable', message, null, 'try again shortly');
  if (cause !== undefined) error.cause = cause;
  return error;
}

/** Runs one SDK call, aborted as ApiError 503 when the service has not answered within `timeoutMs`. */
async function answered<T>(timeoutMs: number, call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  try {
    return await call(timeout.signal);
  } catch (error) {
    if (timeout.signal.aborted) throw storageUnavailable(`the object store did not answer within ${timeoutMs / 1000} s`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function rethrowUnavailable(error: unknown): never {
  throw unavailable(error);
}

/** One line about an SDK or network error: status, S3 error code, message. */
function describe(error: unknown): string {
  const status = statusOf(error);
  const message = error instanceof Error ? [error.name, error.message].filter(Boolean).join(': ') : String(error);
  return (status === undefined ? message : `${status} ${message}`).replace(/\s+/g, ' ');
}

/** ApiError 409 for a key whose name (or a parent's) is taken by a folder or an object on the server. */
function nameTakenByFolderOrObject(key: string, reason: string): ApiError {
  return new ApiError(409, 'already_exists', `"${key}" clashes with a folder or object of the same name on this S3 server`, {
    reason,
  });
}

/** What an aborted upload fails with, like Node's own aborted streams. */
function abortError(): Error {
  return Object.assign(new Error('upload aborted'), { name: 'AbortError' });
}

function unquote(etag: string | undefined): string {
  return (etag ?? '').replace(/^"|"$/g, '');
}
