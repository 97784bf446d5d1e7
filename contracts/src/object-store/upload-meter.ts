/**
 * The pass-through every upload flows through on its way to a store: counts
 * the bytes, hashes them (MD5, the fs store's etag) and fails the stream the
 * moment it goes over the size limit, so an oversized body is never read whole.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { payloadTooLarge } from './object-keys';

/** A Transform that knows how many bytes went through and their MD5. */
export class UploadMeter extends Transform {
  private readonly hash = createHash('md5');
  /** Bytes passed through so far. */
  bytes = 0;

  constructor(private readonly maxBytes: number | undefined) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) {
      callback(payloadTooLarge(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  /** MD5 hex of everything that went through; call once, after the end. */
  md5(): string {
    return this.hash.digest('hex');
  }
}
