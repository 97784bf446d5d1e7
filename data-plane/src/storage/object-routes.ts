/**
 * The storage object endpoints of API.md → Storage, under
 * `/api/projects/:projectId/storage/buckets/:bucket/objects` (the gateway
 * sends them here, not to the control plane: objects are data, read and
 * written under the app's RLS policies on `storage.objects`).
 *
 * Each upload stores a version of its own: its bytes go to a key no other
 * upload has (the path and a fresh version), and its row names that version.
 * An upload first tries its row in a transaction it rolls back (so RLS, the
 * bucket's rules and a taken path decide before a byte is stored; the store
 * makes ready meanwhile), then streams the bytes to the store holding no
 * connection, as Supabase does; as the store publishes them it takes the
 * path's lock and claims the row for real, reading the version it replaces,
 * and then records their size and etag and commits. Only then are the bytes of
 * the version it replaced deleted, after the answer. A failure anywhere rolls
 * the row back: the object stays exactly what it was, old row over old bytes,
 * and the store keeps nothing of the failed upload. A delete commits the rows'
 * removal first, then deletes those versions' bytes. Nothing is ever replaced
 * in the store, so no failure leaves a row over bytes that are not its own or
 * a row without bytes; what it may leave is bytes no row names, which the
 * storage sweep (workers) removes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import {
  ApiError, BucketNameParam, DEFAULT_OBJECT_PAGE, DEFAULT_SIGNED_URL_SECONDS, DeleteObjectsBody, ListObjectsQuery, MAX_OBJECT_PAGE,
  MAX_SIGNED_URL_SECONDS, OBJECT_PATH_LOCK_SQL, ObjectPathQuery, SignedUrlQuery, UploadObjectQuery, invalidRequest, mimeTypeAllowed, queryInteger, validate,
  type ObjectListing, type StorageObject,
} from '@baseplane/contracts';
import {
  assertContentType, assertObjectPath, assertPathPrefix, assertVersionedPath, bucketPrefix, newObjectVersion, objectKey, objectNotFound, payloadTooLarge,
} from '@baseplane/contracts/object-store';
import type { AfterAnswer } from '../auth/after-answer';
import { bindCors } from '../http/cors';
import type { Caller } from '../rest/execute';
import type { StorageAccess } from './storage-caller';
import type { Storage } from './storage';
import { AS_SERVICE, type BucketRules, type HeldTransaction, type StorageStatement, type TextRow } from './storage-db';
import { sendObject } from './send-object';

/** An object's columns as the statements below select them (text format; `updated_at` as JSON's ISO 8601). */
const OBJECT_COLUMNS = "path, size, content_type, etag, to_json(updated_at) #>> '{}' as updated_at, owner";
/** {@link OBJECT_COLUMNS} and the version its bytes are stored as. */
const STORED_OBJECT_COLUMNS = `${OBJECT_COLUMNS}, version`;

function toObject(row: TextRow): StorageObject {
  return {
    path: row.path!,
    size: Number(row.size),
    contentType: row.content_type ?? 'application/octet-stream',
    etag: row.etag ?? '',
    updatedAt: new Date(row.updated_at!).toISOString(),
    owner: row.owner ?? null,
  };
}

/** The end user an upload belongs to: the token's subject, none for operators and keys. */
function ownerOf(caller: Caller): string | null {
  return caller.role === 'authenticated' && typeof caller.claims?.sub === 'string' ? caller.claims.sub : null;
}

/**
 * Which multipart parts stream as files: busboy's rule (a filename, or the type
 * application/octet-stream) and, whatever it carries, the part named `file`. A
 * client that leaves the filename out (`curl -F 'file=<x'`, a form built by hand)
 * would otherwise have its object taken for a text field, held in memory, cut
 * at 1 MB and then missed as no "file" at all.
 */
function isPartAFile(fieldName: string | undefined, contentType: string | undefined, fileName: string | undefined): boolean {
  return fileName !== undefined || fieldName === 'file' || contentType === 'application/octet-stream';
}

/** `{projectId, bucket}` of the path, the bucket name's length checked. */
export function routeParams(request: FastifyRequest): { projectId: string; bucket: string } {
  const params = request.params as { projectId: string; bucket: string };
  const { name } = validate(BucketNameParam, { name: params.bucket }, 'path');
  return { projectId: params.projectId, bucket: name };
}

/** Throws ApiError 400 unless `path` is one an object of the bucket may have, which every backend can hold (its keys: `objectKey`). */
export function checkObjectPath(projectId: string, bucket: string, path: string): void {
  assertObjectPath(bucketPrefix(projectId, bucket), path);
}

export function bindObjectRoutes(app: FastifyInstance, storage: Storage, afterAnswer: AfterAnswer): void {
  void app.register(
    async (scope) => {
      bindCors(scope);
      // Files stream straight to the store; the bucket's limit is enforced there (413), not by buffering here.
      // Other fields are never read (cacheControl, metadata): each is cut at 64 KiB (busboy's default, 1 MB, held 10 MB per upload).
      await scope.register(multipart, { isPartAFile, limits: { files: 1, fileSize: Number.MAX_SAFE_INTEGER, fields: 10, fieldSize: 64 * 1024, parts: 20 } });

      const access = (request: FastifyRequest): Promise<StorageAccess & { bucket: string }> => {
        const { projectId, bucket } = routeParams(request);
        return storage.callers.resolve(request, projectId).then((resolved) => ({ ...resolved, bucket }));
      };

      scope.post('/', async (request, reply) => {
        const { project, caller, bucket: bucketName } = await access(request);
        const query = validate(UploadObjectQuery, request.query, 'query');
        const projectId = project.projectId;
        assertVersionedPath(bucketPrefix(projectId, bucketName), query.path);
        // This upload's bytes go to a key of their own: whatever happens, the object's present bytes are not touched.
        const version = newObjectVersion();
        const key = objectKey(projectId, bucketName, query.path, version);
        if (!request.isMultipart()) {
          throw new ApiError(415, 'unsupported_media_type', 'upload the object as multipart/form-data', null, 'send the bytes in a form field named "file"');
        }
        const file = await request.file().catch((error: unknown) => { throw unreadableMultipart(error, true); });
        if (!file || file.fieldname !== 'file') throw invalidRequest('the multipart body must carry the object in a field named "file"');
        const contentType = file.mimetype || 'application/octet-stream';
        assertContentType(contentType);
        // The bucket's rules come in the claim's round trip, and speak before the claim's answer does.
        const admitType = (bucket: BucketRules) => {
          if (!mimeTypeAllowed(bucket.allowedMimeTypes, contentType)) {
            throw new ApiError(400, 'mime_type_not_allowed', `bucket "${bucketName}" does not accept ${contentType}`, { allowedMimeTypes: bucket.allowedMimeTypes });
          }
        };
        const upsert = query.upsert === 'true';
        const claim = claimPath(bucketName, query.path, contentType, ownerOf(caller), upsert, version);
        let held: HeldTransaction | undefined;
        let stored = false;
        try {
          // The bucket's rules, the caller's policies and a taken path answer before a byte is stored: the row is
          // claimed and rolled back in one round trip, while the store makes ready. Then the bytes stream with no
          // connection held.
          const admitted = storage.db.probe(projectId, caller, [claim], { name: bucketName, admit: admitType })
            .then((rules) => ({ maxBytes: rules.fileSizeLimit ?? undefined }));
          const put = await storage.store.put(key, file.file, {
            contentType,
            admitted,
            // Claimed for real as the bytes are published, under the path's lock: writers of one path publish in turn,
            // each reading the version it replaces once the one before has committed, and a path taken meanwhile (409),
            // a policy or the bucket's rules changed meanwhile refuse the bytes before they show.
            publish: async ({ size }) => {
              const admitStored = (bucket: BucketRules) => {
                admitType(bucket);
                if (bucket.fileSizeLimit !== null && size > bucket.fileSizeLimit) throw payloadTooLarge(bucket.fileSizeLimit);
              };
              held = await storage.db.begin(projectId, caller, [claim], { name: bucketName, admit: admitStored }, lockPath(bucketName, query.path));
            },
          });
          stored = true;
          if (!held) throw new Error('the object store published an upload without its publish step');
          // The row passed the caller's policies above; what the store measured is recorded with the platform's own rights.
          // Its time is when the bytes were stored (now() would be the claim's).
          const answered = await held.commit([
            AS_SERVICE,
            {
              name: 'bp_storage_measured',
              text: `update storage.objects set size = $3, etag = $4, updated_at = clock_timestamp() where bucket = $1 and path = $2 returning ${OBJECT_COLUMNS}`,
              values: [bucketName, query.path, put.size, put.etag],
            },
          ]);
          // The version this one replaced (the row as the path's lock found it) is no object's any more.
          const replaced = held.serviceRows[1]![0];
          if (replaced && replaced.version !== version) {
            const old = objectKey(projectId, bucketName, query.path, replaced.version);
            afterAnswer.run(() => storage.store.deleteMany([old], { superseded: true })
              .then((removed) => { if (removed.length === 0) throw new Error('the object store refused to delete it'); })
              .catch((error: unknown) => request.log.warn({ err: error, key: old }, 'could not remove the bytes of a replaced version; the storage sweep will')));
          }
          return reply.status(201).send(toObject(answered[1]![0]!));
        } catch (error) {
          await held?.rollback();
          // Bytes stored but the row not committed: the object is what it was, and these bytes are no one's. Unless the
          // COMMIT's outcome is unknown (its connection went first): then they may be the object's, and the storage sweep,
          // which reads the rows, decides.
          if (stored && held?.failedCommit() !== 'unknown') {
            await storage.store.deleteMany([key])
              .then((removed) => { if (removed.length === 0) throw new Error('the object store refused to delete it'); })
              .catch((cleanup) => request.log.error({ err: cleanup, key }, 'could not remove the bytes of a failed upload'));
          }
          file.file.resume();
          // The store may have destroyed the file stream (413 mid-way): busboy then stops taking the body, and the rest
          // would sit unread on a kept-alive connection, stalling the client's next request on it. It is read and dropped.
          if (!request.raw.readableEnded) {
            request.raw.unpipe();
            request.raw.resume();
          }
          throw unreadableMultipart(pathTaken(error, query.path));
        }
      });

      scope.get('/', async (request) => {
        const { project, caller, bucket } = await access(request);
        const query = validate(ListObjectsQuery, request.query, 'query');
        const prefix = query.prefix ?? '';
        assertPathPrefix(prefix);
        const limit = queryInteger(query.limit, 'limit', DEFAULT_OBJECT_PAGE, 1, MAX_OBJECT_PAGE);
        const offset = queryInteger(query.offset, 'offset', 0, 0, 1_000_000);
        return listObjects(storage, project.projectId, caller, bucket, prefix, limit, offset);
      });

      // HEAD is ours, not Fastify's generated one, which answers content-length 0 for a body it does not get.
      scope.route({ method: ['GET', 'HEAD'], url: '/download', handler: async (request, reply) => {
        const { project, caller, bucket } = await access(request);
        const { path } = validate(ObjectPathQuery, request.query, 'query');
        checkObjectPath(project.projectId, bucket, path);
        // The bytes of the version the row names; read again should they be gone, replaced since the row was read.
        const stored = async () => objectKey(project.projectId, bucket, path, (await findVisible(storage, project.projectId, caller, bucket, path)).version);
        return sendObject(storage.store, await stored(), request, reply, 'private, no-cache', stored);
      } });

      scope.get('/url', async (request) => {
        const { project, caller, bucket } = await access(request);
        const query = validate(SignedUrlQuery, request.query, 'query');
        checkObjectPath(project.projectId, bucket, query.path);
        const expiresIn = queryInteger(query.expiresIn, 'expiresIn', DEFAULT_SIGNED_URL_SECONDS, 1, MAX_SIGNED_URL_SECONDS);
        await findVisible(storage, project.projectId, caller, bucket, query.path);
        return storage.urls.sign({ projectId: project.projectId, bucket, path: query.path }, expiresIn);
      });

      // The rows go first, under the caller's policies, and commit; then the bytes of the versions they named. A store
      // that refuses or fails leaves bytes no row names, which the storage sweep removes: never a row without its bytes.
      // The answer lists the objects deleted: those whose rows went.
      scope.delete('/', async (request) => {
        const { project, caller, bucket } = await access(request);
        const { paths } = validate(DeleteObjectsBody, request.body, 'body');
        for (const path of paths) checkObjectPath(project.projectId, bucket, path);
        const [rows] = await storage.db.run(project.projectId, caller, [{
          name: 'bp_storage_delete',
          text: 'delete from storage.objects where bucket = $1 and path = any($2::text[]) returning path, version',
          values: [bucket, paths],
        }], { name: bucket });
        const keys = rows!.map((row) => objectKey(project.projectId, bucket, row.path!, row.version));
        if (keys.length > 0) {
          await storage.store.deleteMany(keys).then((removed) => {
            const went = new Set(removed);
            const left = keys.filter((key) => !went.has(key));
            if (left.length > 0) request.log.warn({ bucket, left }, 'the object store refused to delete the bytes of deleted objects; the storage sweep will');
          }, (error: unknown) => request.log.warn({ err: error, bucket }, 'the object store failed to delete the bytes of deleted objects; the storage sweep will'));
        }
        const gone = new Set(rows!.map((row) => row.path!));
        return { deleted: paths.filter((path, i) => gone.has(path) && paths.indexOf(path) === i) };
      });
    },
    { prefix: '/api/projects/:projectId/storage/buckets/:bucket/objects' },
  );
}

/**
 * The statement that writes the object's row under the caller's policies,
 * naming the upload's version, tried before any byte moves and run again as
 * the bytes are published: an insert, or with `upsert` an insert that takes
 * over an existing row (needing the app's update policy too).
 */
function claimPath(bucket: string, path: string, contentType: string, owner: string | null, upsert: boolean, version: string): StorageStatement {
  const conflict = upsert
    ? ' on conflict (bucket, path) do update set content_type = excluded.content_type, owner = excluded.owner, version = excluded.version, updated_at = now()'
    : '';
  return {
    name: upsert ? 'bp_storage_claim_upsert' : 'bp_storage_claim',
    text: `insert into storage.objects (bucket, path, size, content_type, owner, version) values ($1, $2, 0, $3, $4, $5)${conflict}`,
    values: [bucket, path, contentType, owner, version],
  };
}

/**
 * What an upload runs as `service_role` before its claim: the path's lock
 * (held to its COMMIT), then the path's row as it is, whatever the caller's
 * policies show: the version the claim replaces.
 */
function lockPath(bucket: string, path: string): StorageStatement[] {
  return [
    { name: 'bp_storage_path_lock', text: OBJECT_PATH_LOCK_SQL, values: [bucket, path] },
    { name: 'bp_storage_current_version', text: 'select version from storage.objects where bucket = $1 and path = $2', values: [bucket, path] },
  ];
}

/** A taken path (23505 from {@link claimPath}) as 409 `already_exists`; any other error as it is. */
function pathTaken(error: unknown, path: string): unknown {
  if (error instanceof ApiError && error.code === '23505') {
    return new ApiError(409, 'already_exists', `an object already exists at "${path}"`, null, 'pass upsert=true to replace it');
  }
  return error;
}

/**
 * A multipart body the parser could not read (no, a bad or the wrong boundary,
 * a part or the form cut short) as 400: busboy fails with plain errors, which
 * were 500s. Before the file part, every plain error is the parser's
 * (`parsing`); while its bytes stream to the store, only those naming
 * multipart data are, and the store's and the database's stay as they are.
 */
function unreadableMultipart(error: unknown, parsing = false): unknown {
  if (error instanceof ApiError || !(error instanceof Error)) return error;
  // While bytes stream, only busboy's own end-of-data errors are the body's fault: an object store's failure may
  // speak of its "multipart upload" too (S3's), and is ours to answer as such.
  if ((error as { statusCode?: number }).statusCode !== undefined || !(parsing || /unexpected end of multipart data$/i.test(error.message))) return error;
  return new ApiError(400, 'invalid_request', 'the multipart body could not be read', { reason: error.message },
    'send a complete multipart/form-data body whose parts are delimited by the boundary its Content-Type names');
}

/** The object's row as the caller may see it, and the version its bytes are stored as; 404 when it does not exist or the caller's policies hide it. */
async function findVisible(storage: Storage, projectId: string, caller: Caller, bucket: string, path: string): Promise<StorageObject & { version: string | null }> {
  const [rows] = await storage.db.run(projectId, caller, [{
    name: 'bp_storage_stored_object',
    text: `select ${STORED_OBJECT_COLUMNS} from storage.objects where bucket = $1 and path = $2`,
    values: [bucket, path],
  }]);
  if (!rows![0]) throw objectNotFound();
  return { ...toObject(rows![0]), version: rows![0].version ?? null };
}

/**
 * One page of the folder view under `prefix`, as S3 lists with a `/`
 * delimiter: the objects directly under it and the folders below it, merged in
 * byte order and paged together; only rows the caller's policies show count.
 */
async function listObjects(storage: Storage, projectId: string, caller: Caller, bucket: string, prefix: string, limit: number, offset: number): Promise<ObjectListing> {
  const [rows] = await storage.db.run(projectId, caller, [{
    name: 'bp_storage_list',
    text: `with matched as (
       select path, size, content_type, etag, updated_at, owner, strpos(substr(path, $3 + 1), '/') as slash
       from storage.objects where bucket = $1 and left(path, $3) = $2
     ), entries as (
       select distinct left(path, $3 + slash) as path, null::bigint as size, null::text as content_type, null::text as etag,
              null::timestamptz as updated_at, null::uuid as owner, true as folder
       from matched where slash > 0
       union all
       select path, size, content_type, etag, updated_at, owner, false from matched where slash = 0
     )
     select path, size, content_type, etag, to_json(updated_at) #>> '{}' as updated_at, owner, folder from entries
     order by path collate "C" limit $4 offset $5`,
    values: [bucket, prefix, [...prefix].length, limit, offset],
  }], { name: bucket });
  return {
    objects: rows!.filter((row) => row.folder === 'f').map(toObject),
    prefixes: rows!.filter((row) => row.folder === 't').map((row) => row.path!),
  };
}
