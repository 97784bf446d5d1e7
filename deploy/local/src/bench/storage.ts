/**
 * `npm run bench:storage`: object upload and download through the gateway,
 * straight to one data-plane replica and spread over the replicas (as an
 * ingress spreads them; the bench stack runs one per core, as bench:rest's),
 * on each backend (fs, then the embedded S3 server), for 1 MB and 100 MB
 * objects, against copying the same bytes file to file with node's streams in
 * the same run (on fs also against a reference: bare Node processes doing the
 * fs store's durable write alone, `bare-object-server.ts`); then a 1 GB
 * object up and down while the data planes' resident memory is sampled.
 * Upload reads its bytes from a file and download writes them to one, as the
 * copy does. It prints figures; it never fails for a slow machine.
 *
 * The copy, the uploads and the downloads all run in one worker thread, apart
 * from this process's main thread, which carries the local stack's supervisor
 * and gateway and collects their garbage. Before this process had its heap
 * flags (SUPERVISOR_V8_FLAGS in bin/baseplane.mjs), a copy's 64 KiB buffers
 * set off major collections one after another there, and it ran at half the
 * speed of the same copy in a thread of its own.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import { Worker } from 'node:worker_threads';
import { expectStatus, onePerCoreEnv, run, withBenchStack, type BenchContext } from './measure';
import { terminate } from '../child-process';
import { SERVICE_LAYOUT, servicePid, tsxLoaderUrl } from '../services';

const MB = 1024 * 1024;
/**
 * Object sizes, how many of each one line moves, how many move at once (the
 * copy baseline alike), and how many move untimed first: a short cold line
 * measures start-up (in a process of their own, 80 one-MB copies ran at ~340
 * MB/s and 400 at ~440; the data plane's CPU per download still fell by a
 * quarter over its first 2,000).
 */
const SIZES = [
  { label: '1 MB', bytes: MB, count: Number(process.env.BENCH_SMALL_COUNT ?? 400), concurrency: Number(process.env.BENCH_SMALL_CONCURRENCY ?? 4), warmUp: 100 },
  { label: '100 MB', bytes: 100 * MB, count: Number(process.env.BENCH_LARGE_COUNT ?? 3), concurrency: 1, warmUp: 0 },
];
const HUGE_BYTES = Number(process.env.BENCH_HUGE_MB ?? 1024) * MB;
const SAMPLE_MS = 50;

interface Target {
  /** The request `i` goes to the `i`th of these, round: one address, or the replicas as an ingress spreads them. */
  baseUrls: string[];
  objects: string;
  headers: Record<string, string>;
}

/** A file of `bytes` random-ish bytes (one random MiB repeated: nothing on the way compresses). */
async function makeSource(dir: string, bytes: number): Promise<string> {
  const file = path.join(dir, `source-${bytes}`);
  const block = Buffer.alloc(MB);
  for (let i = 0; i < MB; i += 4) block.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  await pipeline(
    Readable.from((function* () {
      for (let left = bytes; left > 0; left -= MB) yield left >= MB ? block : block.subarray(0, left);
    })()),
    createWriteStream(file),
  );
  return file;
}

/**
 * The client, in a worker thread apart from the gateway's event loop: uploads
 * stream a file as a multipart body (framed here, so nothing is buffered),
 * downloads stream into a file, and the baseline copies a file to a file.
 */
const CLIENT = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const fs = require('node:fs');
const { pipeline } = require('node:stream/promises');
const agent = new http.Agent({ keepAlive: true });
const BOUNDARY = 'baseplane-bench-boundary';
function upload(job) {
  const head = Buffer.from('--' + BOUNDARY + '\\r\\ncontent-disposition: form-data; name="file"; filename="object.bin"\\r\\ncontent-type: application/octet-stream\\r\\n\\r\\n');
  const tail = Buffer.from('\\r\\n--' + BOUNDARY + '--\\r\\n');
  const size = fs.statSync(job.file).size;
  return new Promise((resolve, reject) => {
    const headers = { ...job.headers, 'content-type': 'multipart/form-data; boundary=' + BOUNDARY, 'content-length': head.length + size + tail.length };
    const request = http.request(job.url, { method: 'POST', agent, headers }, (response) => {
      let text = '';
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => (response.statusCode === 201 ? resolve() : reject(new Error('upload answered ' + response.statusCode + ' ' + text))));
    });
    request.on('error', reject);
    request.write(head);
    const file = fs.createReadStream(job.file, { highWaterMark: 256 * 1024 });
    file.on('error', reject);
    file.on('end', () => request.end(tail));
    file.pipe(request, { end: false });
  });
}
function copy(job) {
  return pipeline(fs.createReadStream(job.file), fs.createWriteStream(job.sink));
}
function download(job) {
  return new Promise((resolve, reject) => {
    http.get(job.url, { agent, headers: job.headers }, (response) => {
      if (response.statusCode !== 200) { response.resume(); reject(new Error('download answered ' + response.statusCode)); return; }
      pipeline(response, fs.createWriteStream(job.sink, { highWaterMark: 256 * 1024 })).then(resolve, reject);
    }).on('error', reject);
  });
}
parentPort.on('message', (job) => {
  ({ copy, upload, download })[job.op](job).then(() => parentPort.postMessage({ id: job.id, ok: true }), (error) => parentPort.postMessage({ id: job.id, ok: false, error: String(error) }));
});
`;

const client = new Worker(CLIENT, { eval: true });
const pending = new Map<number, { resolve(): void; reject(error: Error): void }>();
let nextJob = 0;
client.on('message', (answer: { id: number; ok: boolean; error?: string }) => {
  const job = pending.get(answer.id)!;
  pending.delete(answer.id);
  if (answer.ok) job.resolve();
  else job.reject(new Error(answer.error));
});
// After the listener, which refs the worker's port again: the bench must exit when its work is done.
client.unref();

function clientJob(job: Record<string, unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    const id = nextJob++;
    pending.set(id, { resolve, reject });
    client.postMessage({ ...job, id });
  });
}

const baseUrlOf = (target: Target, i: number) => target.baseUrls[i % target.baseUrls.length]!;

function upload(target: Target, i: number, source: string, objectPath: string): Promise<void> {
  return clientJob({ op: 'upload', file: source, headers: target.headers, url: `${baseUrlOf(target, i)}${target.objects}?path=${encodeURIComponent(objectPath)}&upsert=true` });
}

function download(target: Target, i: number, objectPath: string, sink: string): Promise<void> {
  return clientJob({ op: 'download', sink, headers: target.headers, url: `${baseUrlOf(target, i)}${target.objects}/download?path=${encodeURIComponent(objectPath)}` });
}

/** Runs `once` for `0 … count - 1`, `concurrency` at a time. */
async function runAll(count: number, concurrency: number, once: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await once(next++);
  }));
}

/** MB/s of running `once` `size.count` times, `size.concurrency` at a time, each moving `size.bytes`, after `size.warmUp` untimed runs. */
async function throughput(size: (typeof SIZES)[number], once: (i: number) => Promise<void>): Promise<number> {
  await runAll(size.warmUp, size.concurrency, once);
  const started = performance.now();
  await runAll(size.count, size.concurrency, once);
  return (size.count * size.bytes) / MB / ((performance.now() - started) / 1000);
}

/** Resident memory of a process in bytes, from /proc (Linux). */
async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}

/** Runs `work` while sampling the processes' resident memory; answers each one's level before and peak growth over it. */
async function memoryGrowth(pids: number[], work: () => Promise<void>): Promise<{ before: number; growth: number }> {
  const before = await Promise.all(pids.map(residentBytes));
  const peak = [...before];
  const timer = setInterval(() => {
    void Promise.all(pids.map(residentBytes)).then((now) => now.forEach((bytes, i) => { peak[i] = Math.max(peak[i]!, bytes); }));
  }, SAMPLE_MS);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const growth = peak.map((bytes, i) => bytes - before[i]!);
  const most = growth.indexOf(Math.max(...growth));
  return { before: before[most]!, growth: growth[most]! };
}

const BARE_SERVER = fileURLToPath(new URL('./bare-object-server.ts', import.meta.url));

/**
 * Starts `count` bare reference servers (`bare-object-server.ts`, with the
 * data plane's V8 flags) storing into `dir`; answers their base URLs and a
 * stop.
 */
async function startBareServers(count: number, dir: string): Promise<{ baseUrls: string[]; stop(): Promise<void> }> {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, [...(SERVICE_LAYOUT['data-plane'].v8Flags ?? []), '--import', tsxLoaderUrl(), BARE_SERVER, dir], { stdio: ['ignore', 'pipe', 'inherit'] }));
  // A bench ended by a signal exits without its finally blocks: the servers go with it.
  const killAll = () => { for (const child of children) child.kill(); };
  process.once('exit', killAll);
  const stop = async () => {
    process.off('exit', killAll);
    await Promise.all(children.map((child) => terminate(child, 5_000)));
  };
  try {
    const ports = await Promise.all(children.map(async (child) => {
      const [line] = (await Promise.race([
        once(readline.createInterface({ input: child.stdout! }), 'line'),
        once(child, 'exit').then(([code]) => { throw new Error(`the bare reference server exited (${code}) before listening`); }),
      ])) as [string];
      return Number(line);
    }));
    return { baseUrls: ports.map((port) => `http://127.0.0.1:${port}`), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** How the lines of the bare reference servers are labelled (no goal line). */
const BARE = 'bare Node';

const rate = (value: number) => `${value.toFixed(0).padStart(6)} MB/s`;

/** The 1 MB and 100 MB lines: each size up and down through each of `vias`, against the copy of the same run. */
async function benchSizes(backend: 'fs' | 's3', vias: Array<[string, Target]>, sink: string, scratch: string): Promise<void> {
  console.log('');
  console.log(`STORAGE_BACKEND=${backend}, operator token`);
  for (const size of SIZES) {
    const source = await makeSource(scratch, size.bytes);
    const sinkOf = (i: number) => `${sink}-${i % size.concurrency}`;
    const copyOnce = () => throughput(size, (i) => clientJob({ op: 'copy', file: source, sink: sinkOf(i) }));
    // The disk is shared and its speed wanders: the baseline is the better of two copies, one each side of the measured lines.
    const copyBefore = await copyOnce();
    const lines: string[] = [];
    const results: Array<{ how: string; up: number; down: number }> = [];
    for (const [how, via] of vias) {
      const up = await throughput(size, (i) => upload(via, i, source, `${size.label}/${i % 8}.bin`));
      const down = await throughput(size, (i) => download(via, i, `${size.label}/${i % 8}.bin`, sinkOf(i)));
      results.push({ how, up, down });
    }
    const copy = Math.max(copyBefore, await copyOnce());
    console.log(`  ${size.label.padEnd(7)} ${size.concurrency} at a time; baseline file-to-file copy ${rate(copy)} (better of ${rate(copyBefore).trim()} before and the run after)`);
    for (const { how, up, down } of results) {
      console.log(`  ${size.label.padEnd(7)} upload   via ${how} ${rate(up)}   ratio to copy ${(up / copy).toFixed(2)}`);
      console.log(`  ${size.label.padEnd(7)} download via ${how} ${rate(down)}   ratio to copy ${(down / copy).toFixed(2)}`);
      if (backend === 'fs' && !how.startsWith(BARE)) lines.push(`    goal ≥ 0.5 of copy on fs via ${how} — upload ${up / copy >= 0.5 ? 'met' : 'NOT met'}, download ${down / copy >= 0.5 ? 'met' : 'NOT met'}`);
    }
    for (const line of lines) console.log(line);
    await rm(source);
  }
}

async function benchBackend(backend: 'fs' | 's3', context: BenchContext, scratch: string): Promise<void> {
  const { stack, call } = context;
  const project = await call('POST', '/api/projects', { name: `storage bench ${backend}` });
  expectStatus(project, 201, 'project');
  const id = (project.json as { id: string }).id;
  expectStatus(await call('POST', `/api/projects/${id}/storage/buckets`, { name: 'bench' }), 201, 'bucket');
  const target: Target = { baseUrls: [stack.baseUrl], objects: `/api/projects/${id}/storage/buckets/bench/objects`, headers: { authorization: `Bearer ${context.token}` } };
  const sink = path.join(scratch, 'sink');
  const replicas = stack.servicePorts.dataPlanes.map((port) => `http://127.0.0.1:${port}`);
  // Through the gateway (the local stack's Node proxy, which a deployment replaces with its ingress), straight to one
  // replica, and spread over the fleet as an ingress would (when there is more than one replica).
  const vias: Array<[string, Target]> = [['gateway', target], ['replica', { ...target, baseUrls: replicas.slice(0, 1) }]];
  if (replicas.length > 1) vias.push([`fleet of ${replicas.length}`, { ...target, baseUrls: replicas }]);
  // On fs, a reference: as many bare Node processes, each doing the fs store's durable write and nothing else.
  const bareDir = path.join(scratch, 'bare');
  const bare = backend === 'fs' ? await mkdir(bareDir).then(() => startBareServers(replicas.length, bareDir)) : undefined;
  if (bare) vias.push([`${BARE} ×${replicas.length}`, { ...target, baseUrls: bare.baseUrls }]);
  try {
    await benchSizes(backend, vias, sink, scratch);
  } finally {
    await bare?.stop();
    await rm(bareDir, { recursive: true, force: true });
  }

  const pids = await Promise.all(stack.servicePorts.dataPlanes.map(servicePid));
  const huge = await makeSource(scratch, HUGE_BYTES);
  const label = `${(HUGE_BYTES / MB / 1024).toFixed(HUGE_BYTES % (1024 * MB) === 0 ? 0 : 2)} GB`;
  let seconds = performance.now();
  const up = await memoryGrowth(pids, () => upload(target, 0, huge, 'huge.bin'));
  seconds = (performance.now() - seconds) / 1000;
  const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
  console.log(`  ${label} upload in ${seconds.toFixed(1)} s: data-plane resident memory ${mb(up.before)} before, grew by at most ${mb(up.growth)} (sampled every ${SAMPLE_MS} ms)`);
  console.log(`    goal ≤ 64 MB — ${up.growth <= 64 * MB ? 'met' : 'NOT met'}`);
  const down = await memoryGrowth(pids, () => download(target, 0, 'huge.bin', sink));
  console.log(`  ${label} download: data-plane resident memory ${mb(down.before)} before, grew by at most ${mb(down.growth)}`);
  await rm(huge);
  for (const file of await readdir(scratch)) if (file.startsWith('sink')) await rm(path.join(scratch, file));
}

run(async () => {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'baseplane-bench-storage-'));
  try {
    await writeFile(path.join(scratch, '.keep'), '');
    const backends = (process.env.BENCH_BACKENDS ?? 'fs,s3').split(',') as Array<'fs' | 's3'>;
    if (backends.includes('fs')) await withBenchStack((context) => benchBackend('fs', context, scratch), { ...onePerCoreEnv(), STORAGE_BACKEND: 'fs' });
    if (backends.includes('s3')) await withBenchStack((context) => benchBackend('s3', context, scratch), { ...onePerCoreEnv(), STORAGE_BACKEND: 's3', S3_ENDPOINT: '' });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
});
