/**
 * SHA-256 of an upload's bytes, computed beside the event loop rather than on
 * it once the upload is large. Hashing was a third of the data plane's CPU
 * during a 100 MB upload and set its pace: the loop that reads the socket and
 * parses the form also hashed every byte (perf; 100 MB uploads went 338-384
 * → 537-593 MB/s with no hashing at all). The first {@link BLOCK_BYTES} are
 * hashed in place as they come, so a body that short costs what it always
 * did. Past them, one hashing thread per process takes over from the first
 * byte (the in-place hash is dropped): bytes are copied into blocks that move
 * to the thread as they fill, and it keeps a hash per upload. At most
 * {@link BLOCKS_IN_FLIGHT} blocks of an upload wait there: the upload's
 * stream waits for the thread rather than queue its body in memory.
 */
import { createHash, type Hash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/** A body this long or shorter is hashed in place; a longer one's bytes go to the thread in blocks this long. */
export const BLOCK_BYTES = 1024 * 1024;
const BLOCKS_IN_FLIGHT = 4;

type ToThread = { id: number; block?: ArrayBuffer; length?: number; end?: true; drop?: true };
type FromThread = { id: number; ack?: true; hex?: string };

/** The thread's code: plain JavaScript (it runs without the TypeScript loader), one hash per upload id. */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hashes = new Map();
parentPort.on('message', ({ id, block, length, end, drop }) => {
  if (drop) { hashes.delete(id); return; }
  let hash = hashes.get(id);
  if (!hash) hashes.set(id, hash = createHash('sha256'));
  if (block) { hash.update(new Uint8Array(block, 0, length)); parentPort.postMessage({ id, ack: true }); }
  if (end) { hashes.delete(id); parentPort.postMessage({ id, hex: hash.digest('hex') }); }
});
`;

interface Waiting {
  onAck(): void;
  onDigest(hex: string): void;
  onFailure(error: Error): void;
}

let thread: Worker | undefined;
let nextId = 0;
const waiting = new Map<number, Waiting>();

/** Uploads the thread hashes keep the process alive, as their sockets do; an idle thread does not. */
function forget(id: number): void {
  waiting.delete(id);
  if (waiting.size === 0) thread?.unref();
}

/** The hashing thread, started on first use and again after a failure. */
function hashingThread(): Worker {
  if (thread) return thread;
  // Without the process's loader (tsx's --import) or its other options: the thread runs only the code above.
  const started = new Worker(THREAD_SOURCE, { eval: true, execArgv: [] });
  started.unref();
  started.on('message', ({ id, ack, hex }: FromThread) => {
    const upload = waiting.get(id);
    if (ack) upload?.onAck();
    if (hex !== undefined) {
      forget(id);
      upload?.onDigest(hex);
    }
  });
  const fail = (error: Error) => {
    if (thread !== started) return;
    thread = undefined;
    const failed = [...waiting.values()];
    waiting.clear();
    for (const upload of failed) upload.onFailure(error);
  };
  started.on('error', fail);
  started.on('exit', (code) => fail(new Error(`the hashing thread exited (code ${code})`)));
  thread = started;
  return started;
}

/** How many uploads the thread is hashing: what a test of failed and abandoned uploads expects back to 0. */
export function uploadsBeingHashed(): number {
  return waiting.size;
}

/** The hashing thread, stopped; for tests of what a failed thread does to the uploads it was hashing. */
export async function stopHashingThread(): Promise<void> {
  await thread?.terminate();
}

/** The running SHA-256 of one upload's bytes. */
export class Sha256Digest {
  /** The hash of a body still within one block; dropped once the thread takes over. */
  private inPlace: Hash | undefined = createHash('sha256');
  /** Bytes taken and not yet sent, as they came (a stream's chunks are not written to again). */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Set once a block has gone to the thread. */
  private id: number | undefined;
  private inFlight = 0;
  private failure: Error | undefined;
  private readonly acks: Array<() => void> = [];
  private result: { resolve(hex: string): void; reject(error: Error): void } | undefined;

  /**
   * Takes `chunk`; answers a promise when the upload should wait for the
   * thread (too many of its blocks wait there) before it takes more.
   */
  update(chunk: Buffer): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    this.inPlace?.update(chunk);
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    // A block goes once a byte after it has come: a body of one block or less never reaches the thread.
    if (this.heldBytes <= BLOCK_BYTES) return undefined;
    this.inPlace = undefined;
    while (this.heldBytes > BLOCK_BYTES) this.send(BLOCK_BYTES, false);
    if (this.inFlight < BLOCKS_IN_FLIGHT) return undefined;
    return new Promise<void>((resolve, reject) => {
      this.acks.push(() => (this.failure ? reject(this.failure) : resolve()));
    });
  }

  /** Hex SHA-256 of everything taken; call once, after the last update. */
  digest(): Promise<string> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.inPlace) return Promise.resolve(this.inPlace.digest('hex'));
    return new Promise<string>((resolve, reject) => {
      this.result = { resolve, reject };
      this.send(this.heldBytes, true);
    });
  }

  /** Forgets an upload that will not finish: the thread drops its hash. */
  abandon(): void {
    this.held = [];
    this.inPlace = undefined;
    if (this.id === undefined || !waiting.has(this.id)) return;
    forget(this.id);
    thread?.postMessage({ id: this.id, drop: true } satisfies ToThread);
  }

  /** Sends the first `length` held bytes to the thread, copied into a block of their own, which moves there. */
  private send(length: number, end: boolean): void {
    const worker = hashingThread();
    if (this.id === undefined) {
      this.id = nextId++;
      if (waiting.size === 0) worker.ref();
      waiting.set(this.id, {
        onAck: () => {
          this.inFlight -= 1;
          this.acks.shift()?.();
        },
        onDigest: (hex) => this.result?.resolve(hex),
        onFailure: (error) => {
          this.failure = new Error('the upload could not be hashed', { cause: error });
          for (const ack of this.acks.splice(0)) ack();
          this.result?.reject(this.failure);
        },
      });
    }
    const block = Buffer.allocUnsafeSlow(length);
    for (let filled = 0; filled < length;) {
      const chunk = this.held[0]!;
      const copied = chunk.copy(block, filled, 0, Math.min(chunk.length, length - filled));
      filled += copied;
      if (copied === chunk.length) this.held.shift();
      else this.held[0] = chunk.subarray(copied);
    }
    this.heldBytes -= length;
    const message: ToThread = { id: this.id, block: block.buffer as ArrayBuffer, length, ...(end ? { end: true as const } : {}) };
    worker.postMessage(message, [message.block!]);
    this.inFlight += 1;
  }
}
