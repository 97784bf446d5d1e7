/**
 * `bench:storage`'s reference: what a bare Node process on this machine does
 * with the same durable write as the fs store, and nothing else. No framework,
 * no form parsing, no database, no auth: a POST's whole body (the multipart
 * framing included) is hashed with SHA-256, written to a temp file, flushed
 * with `fdatasync` and renamed into place, and the rename flushed (`fsync` of
 * the folder); a GET streams the file back. The
 * object is named by the request's `path` parameter, so the bench's client
 * calls it with the URLs it gives the data plane. Run by the bench as one
 * process per data-plane replica: `node --import tsx bare-object-server.ts DIR`;
 * it prints its port on a line and stops on SIGTERM.
 */
import { createHash, randomUUID } from 'node:crypto';
import fs, { createReadStream, createWriteStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';

const dir = process.argv[2] ?? '';
if (!dir) throw new Error('usage: bare-object-server.ts DIR');
const open = promisify(fs.open);
const datasync = promisify(fs.fdatasync);
const fsync = promisify(fs.fsync);
const close = promisify(fs.close);
const fstat = promisify(fs.fstat);
const rename = promisify(fs.rename);
const BUFFER_BYTES = 1024 * 1024;

const fileOf = (url: URL) => path.join(dir, encodeURIComponent(url.searchParams.get('path') ?? 'object'));

async function put(request: http.IncomingMessage, response: http.ServerResponse, file: string): Promise<void> {
  const temp = path.join(dir, `${randomUUID()}.part`);
  const descriptor = await open(temp, 'wx', 0o600);
  const hash = createHash('sha256');
  const hashing = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(request, hashing, createWriteStream('', { fd: descriptor, autoClose: false, highWaterMark: BUFFER_BYTES }));
    await datasync(descriptor);
  } finally {
    await close(descriptor);
  }
  await rename(temp, file);
  const folder = await open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    await fsync(folder);
  } finally {
    await close(folder);
  }
  response.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ etag: hash.digest('hex') }));
}

async function get(response: http.ServerResponse, file: string): Promise<void> {
  const descriptor = await open(file, 'r');
  const { size } = await fstat(descriptor);
  response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  await pipeline(createReadStream('', { fd: descriptor, highWaterMark: BUFFER_BYTES }), response);
}

const server = http.createServer((request, response) => {
  const file = fileOf(new URL(request.url ?? '/', 'http://bare'));
  const done = request.method === 'POST' ? put(request, response, file) : get(response, file);
  done.catch((error: Error) => {
    if (!response.headersSent) response.writeHead(500).end(error.message);
    else response.destroy();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
