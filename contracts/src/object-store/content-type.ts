/**
 * The content type an object is stored with: checked once here so that every
 * backend stores the same thing and the fs header always fits.
 */
import { invalidRequest } from '../errors';

const MAX_CONTENT_TYPE_LENGTH = 255;
/** `type/subtype` plus optional parameters, printable ASCII only (it goes back out as a header). */
const CONTENT_TYPE = /^[\w.+-]+\/[\w.+-]+(\s*;[\x20-\x7e]*)?$/;

/** Throws ApiError 400 unless `contentType` can be stored and served back as a `Content-Type` header. */
export function assertContentType(contentType: string): void {
  if (contentType.length > MAX_CONTENT_TYPE_LENGTH || !CONTENT_TYPE.test(contentType)) {
    throw invalidRequest(`content type must be "type/subtype" in at most ${MAX_CONTENT_TYPE_LENGTH} printable characters`);
  }
}
