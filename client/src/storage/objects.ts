/**
 * The object endpoints of a bucket (API.md → Storage), shared by the
 * application client (anon key and user token, governed by RLS on
 * `storage.objects`) and the management client (operator token or service key).
 */
import { clientError, failed, ok, type ClientError, type Result } from '../result.js';
import { segment, send, type Transport } from '../transport.js';
import type { FileBody, ObjectList, SignedUrl, StoredObject } from '../types.js';

export interface UploadOptions {
  /** Defaults to the Blob's own type, `text/plain;charset=UTF-8` for a string (stored as `text/plain`), else `application/octet-stream`. */
  contentType?: string;
  /** Replace an object already at this path (otherwise 409). */
  upsert?: boolean;
}

export interface ListOptions {
  limit?: number;
  offset?: number;
}

const objectsPath = (projectId: string, bucket: string) => `/api/projects/${segment(projectId)}/storage/buckets/${segment(bucket)}/objects`;

export function uploadObject(t: Transport, projectId: string, bucket: string, path: string, body: FileBody, options: UploadOptions = {}): Promise<Result<StoredObject>> {
  // `new Blob([x])` takes anything else as the text of String(x): a stream would be stored as "[object ReadableStream]".
  if (!isFileBody(body)) return Promise.resolve(failed(unsendableBody(body)));
  const type = options.contentType ?? defaultContentType(body);
  const form = new FormData();
  form.append('file', new Blob([body as BlobPart], { type }), path.split('/').pop() || 'file');
  return send(t, 'POST', objectsPath(projectId, bucket), { query: { path, upsert: options.upsert }, body: form });
}

function isFileBody(body: unknown): body is FileBody {
  return typeof body === 'string' || body instanceof Blob || body instanceof ArrayBuffer || ArrayBuffer.isView(body);
}

/** As supabase-js types them: a Blob (a File) by its own type, text as UTF-8 text, bytes as bytes. */
function defaultContentType(body: FileBody): string {
  if (body instanceof Blob && body.type) return body.type;
  return typeof body === 'string' ? 'text/plain;charset=UTF-8' : 'application/octet-stream';
}

function unsendableBody(body: unknown): ClientError {
  const kind = body === null ? 'null' : typeof body === 'object' ? (body.constructor?.name ?? 'an object') : typeof body;
  return clientError(
    'invalid_request',
    `an upload body must be a Blob, File, ArrayBuffer, typed array or string (got ${kind})`,
    'read a stream into a Blob first (await new Response(stream).blob())',
  );
}

/** The object's bytes; `range` is an HTTP byte range such as `bytes=0-99`. */
export function downloadObject(t: Transport, projectId: string, bucket: string, path: string, options: { range?: string } = {}): Promise<Result<Blob>> {
  return send(t, 'GET', `${objectsPath(projectId, bucket)}/download`, { query: { path }, as: 'blob', headers: options.range ? { range: options.range } : {} });
}

export function listObjects(t: Transport, projectId: string, bucket: string, prefix?: string, options: ListOptions = {}): Promise<Result<ObjectList>> {
  return send(t, 'GET', objectsPath(projectId, bucket), { query: { prefix, limit: options.limit, offset: options.offset } });
}

export function removeObjects(t: Transport, projectId: string, bucket: string, paths: string[]): Promise<Result<{ deleted: string[] }>> {
  return send(t, 'DELETE', objectsPath(projectId, bucket), { body: { paths } });
}

/** A URL anyone holding it may download from until it expires (`expiresIn` seconds, default the server's 3600). */
export function signObjectUrl(t: Transport, projectId: string, bucket: string, path: string, expiresIn?: number): Promise<Result<SignedUrl>> {
  return send(t, 'GET', `${objectsPath(projectId, bucket)}/url`, { query: { path, expiresIn } });
}

/** The address of an object of a public bucket; built here, no request. */
export function publicObjectUrl(baseUrl: string, projectId: string, bucket: string, path: string): Result<{ publicUrl: string }> {
  const objectPath = path.split('/').map(segment).join('/');
  return ok({ publicUrl: `${baseUrl}/storage/v1/object/public/${segment(projectId)}/${segment(bucket)}/${objectPath}` });
}
