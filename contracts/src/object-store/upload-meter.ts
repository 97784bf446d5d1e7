/**
 * The pass-through every upload flows through on its way to a store: counts
 * the bytes, hashes them when the store's etag is their digest (the fs
 * store's SHA-256, beside the event loop: `sha256-thread.ts`; an S3 server
 * makes its own etag) and fails the stream the moment it goes over the size
 * limit, so an oversized body is never read whole.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { payloadTooLarge } from './object-keys';
import { Sha256Digest } from './sha256-thread';
import type { PutOptions } from './object-store';

/** A Transform that knows how many bytes went through and, when asked for it, their SHA-256. */
export class UploadMeter extends Transform {
  private readonly hash: Sha256Digest | undefined;
  /** Bytes passed through so far. */
  bytes = 0;

  constructor(private readonly maxBytes: number | undefined, hashed = false) {
    super();
    this.hash = hashed ? new Sha256Digest() : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) {
      callback(payloadTooLarge(this.maxBytes));
      return;
    }
    let waitForHash: Promise<void> | undefined;
    try {
      waitForHash = this.hash?.update(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    }
    this.push(chunk);
    if (waitForHash) waitForHash.then(() => callback(), callback);
    else callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed whole (autoDestroy after the end) its digest is still to come; failed, it never will.
    if (error || !this.writableFinished) this.hash?.abandon();
    callback(error);
  }

  /** Hex SHA-256 of everything that went through; call once, after the end, on a meter made hashed. */
  digest(): Promise<string> {
    if (!this.hash) throw new Error('this upload meter hashes nothing');
    return this.hash.digest();
  }
}

/**
 * The meter of a put, once the caller has admitted it ({@link PutOptions.admitted}):
 * its size limit the smaller of the options' and the admission's.
 */
export async function admittedMeter(options: PutOptions, hashed: boolean): Promise<UploadMeter> {
  const admission = options.admitted ? await options.admitted : {};
  const limits = [options.maxBytes, admission.maxBytes].filter((limit): limit is number => limit !== undefined);
  return new UploadMeter(limits.length > 0 ? Math.min(...limits) : undefined, hashed);
}

/** Marks a put's admission as observed, for a put that fails before it awaits it: its rejection is then not unhandled. */
export function observeAdmission(options: PutOptions): void {
  options.admitted?.catch(() => undefined);
}
