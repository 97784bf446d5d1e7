/**
 * Answers an object's bytes, streamed from the store: 200 with the whole
 * object or 206 with the one range a `Range: bytes=` header asks for (when an
 * `If-Range` sent with it still names the object), its stored content type
 * and etag, or 304 to a conditional request whose copy is current. The same
 * answer serves the authorised download, the public URL and the signed URL.
 *
 * Bytes a user uploaded are served with `nosniff` and a sandboxing CSP, so an
 * uploaded HTML page cannot run script on the service's origin.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@baseplane/contracts';
import type { ByteRange, ObjectRead, ObjectStore } from '@baseplane/contracts/object-store';

/**
 * The range a `Range` header asks for; undefined for none, for several (served
 * whole, as RFC 9110 §14.2 allows) and for a header this cannot read (ignored, as it says).
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, from, to] = match;
  if (from === '' && to === '') return undefined;
  if (from === '') return { suffixLength: position(to!) };
  const start = position(from!);
  if (to === '') return { start };
  const end = position(to!);
  if (end < start) return undefined;
  // A last position past any object's size means the rest of it (RFC 9110 §14.1.2).
  return end === Number.MAX_SAFE_INTEGER ? { start } : { start, end };
}

/**
 * A position of a `Range` header; one past what a double holds exactly is past any object's
 * end, and is kept as the largest exact integer, so that it reaches a store (S3's `Range`)
 * as digits and not as `1e+21`.
 */
const position = (digits: string) => Math.min(Number(digits), Number.MAX_SAFE_INTEGER);

/** The entity tags of an `If-None-Match` header, without `W/` (it is compared weakly); `*` as itself. */
function entityTags(header: string): string[] {
  return header.split(',').map((tag) => tag.trim().replace(/^W\//, '')).filter(Boolean);
}

/**
 * True when the caller's copy is the object as it is (RFC 9110 §13.2.2):
 * `If-None-Match` decides when sent; otherwise `If-Modified-Since`, at the
 * one-second grain of HTTP dates.
 */
export function notModified(headers: FastifyRequest['headers'], etag: string, updatedAt: Date): boolean {
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    const tags = entityTags(ifNoneMatch);
    return tags.includes('*') || tags.includes(`"${etag}"`);
  }
  const since = Date.parse(headers['if-modified-since'] ?? '');
  return !Number.isNaN(since) && Math.floor(updatedAt.getTime() / 1000) * 1000 <= since;
}

/**
 * True when an `If-Range` validator names the object as it is (RFC 9110 §13.1.5), so the
 * range may be served: an entity tag by the strong comparison (a weak `W/` tag never
 * matches: its bytes may differ), a date only when it is the Last-Modified these answers
 * send, character for character. A date in one of HTTP's obsolete formats, or anything
 * else, does not match: the whole object is then the answer, which is always a right one.
 */
export function rangeStillValid(ifRange: string, etag: string, updatedAt: Date): boolean {
  const validator = ifRange.trim();
  if (validator.startsWith('"')) return validator === `"${etag}"`;
  return !validator.startsWith('W/') && validator === updatedAt.toUTCString();
}

/**
 * The object at `key`, the asked `range` of it unless `ifRange` no longer names it (then whole).
 * The range is read first and the validator checked against what that read found, so the
 * common case (a resumed download of an unchanged object) costs one read, and bytes of
 * another version are never served as a range of the caller's.
 */
async function readObject(store: ObjectStore, key: string, range: ByteRange | undefined, ifRange: string | undefined): Promise<ObjectRead> {
  let read: ObjectRead;
  try {
    read = await store.get(key, range);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 416)) throw error;
    // RFC 9110 §13.2.2: an If-Range that does not hold sets the Range aside before it is evaluated, unsatisfiable or not.
    const info = ifRange === undefined ? undefined : await store.head(key);
    if (info && !rangeStillValid(ifRange!, info.etag, info.updatedAt)) return store.get(key);
    throw error;
  }
  if (read.range && ifRange !== undefined && !rangeStillValid(ifRange, read.etag, read.updatedAt)) {
    read.body.destroy();
    return store.get(key);
  }
  return read;
}

/**
 * Streams the object at `key` (or the asked range of it) as the answer; 304
 * without a body when the request's validators say the caller has it already.
 * If-None-Match and If-Modified-Since are evaluated before If-Range (RFC 9110 §13.2.2).
 *
 * `key` is the version the object's row named when it was read. An upload that
 * replaced it since deletes its bytes once it has answered, so a read that
 * finds none asks `relocate` for the key the row names now and, when that is
 * another, serves it (404 when the row is gone: the object was deleted).
 */
export async function sendObject(
  store: ObjectStore, key: string, request: FastifyRequest, reply: FastifyReply, cacheControl: string, relocate?: () => Promise<string>,
): Promise<FastifyReply> {
  try {
    return await sendVersion(store, key, request, reply, cacheControl);
  } catch (error) {
    if (!relocate || !(error instanceof ApiError && error.status === 404)) throw error;
    const now = await relocate();
    if (now === key) throw error;
    return sendVersion(store, now, request, reply, cacheControl);
  }
}

async function sendVersion(store: ObjectStore, key: string, request: FastifyRequest, reply: FastifyReply, cacheControl: string): Promise<FastifyReply> {
  if (request.headers['if-none-match'] !== undefined || request.headers['if-modified-since'] !== undefined) {
    // Only what the validators need is read; an object missing or changed is answered by the read below.
    const info = await store.head(key);
    if (info && notModified(request.headers, info.etag, info.updatedAt)) {
      return reply
        .status(304)
        .header('etag', `"${info.etag}"`)
        .header('last-modified', info.updatedAt.toUTCString())
        .header('cache-control', cacheControl)
        .send();
    }
  }
  // Several If-Range lines make one list, which matches no single validator: the whole object.
  const ifRange = request.headers['if-range'];
  let read;
  try {
    read = await readObject(store, key, parseRange(request.headers.range), Array.isArray(ifRange) ? ifRange.join(', ') : ifRange);
  } catch (error) {
    if (error instanceof ApiError && error.status === 416) {
      void reply.header('content-range', `bytes */${(error.details as { size: number }).size}`);
    }
    throw error;
  }
  void reply
    .header('content-type', read.contentType)
    .header('etag', `"${read.etag}"`)
    .header('last-modified', read.updatedAt.toUTCString())
    .header('accept-ranges', 'bytes')
    .header('cache-control', cacheControl)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox");
  if (read.range) {
    void reply
      .status(206)
      .header('content-range', `bytes ${read.range.start}-${read.range.end}/${read.size}`)
      .header('content-length', String(read.range.end - read.range.start + 1));
  } else {
    void reply.status(200).header('content-length', String(read.size));
  }
  if (request.method === 'HEAD') {
    read.body.destroy();
    return reply.send();
  }
  return reply.send(read.body);
}
