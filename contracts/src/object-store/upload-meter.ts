/**
 * The pass-through every upload flows through on its way to a store: counts
 * the bytes, hashes them when the store's etag is their digest (the fs
 * store's SHA-256; an S3 server makes its own etag) and fails the stream the
 * moment it goes over the size limit, so an oversized body is never read whole.
 */
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { payloadTooLarge } from './object-keys';

/** A Transform that knows how many bytes went through and, when asked for one, their digest. */
export class UploadMeter extends Transform {
  private readonly hash: Hash | undefined;
  /** Bytes passed through so far. */
  bytes = 0;

  constructor(private readonly maxBytes: number | undefined, algorithm?: 'sha256') {
    super();
    this.hash = algorithm ? createHash(algorithm) : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) {
      callback(payloadTooLarge(this.maxBytes));
      return;
    }
    this.hash?.update(chunk);
    callback(null, chunk);
  }

  /** Hex digest of everything that went through; call once, after the end, on a meter made with an algorithm. */
  digest(): string {
    if (!this.hash) throw new Error('this upload meter hashes nothing');
    return this.hash.digest('hex');
  }
}
