/**
 * The benchmarks' HTTP load: a closed loop of kept-alive connections with
 * node's own http (much lighter than fetch), in a worker thread so it never
 * shares an event loop with the gateway the bench process runs.
 *
 * A request is a template: `{n}` becomes a random 1..rows, `{state}` the
 * connection's state, which starts from `states` and, with `nextState`, is
 * replaced by that field of each answer (a refresh token rotated by every
 * call). Only answers after the warm-up are counted.
 */
import { Worker } from 'node:worker_threads';
import { percentile, type LoadFigures } from './measure';

/** One kind of request. */
export interface RequestSpec {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Status every answer must have (others are counted as errors). */
  status: number;
  /** Per-connection starting values of `{state}` (connection i takes states[i % length]). */
  states?: string[];
  /** The answer's JSON field that becomes the connection's next `{state}`. */
  nextState?: string;
}

export interface LoadOptions {
  concurrency: number;
  seconds: number;
  warmUpSeconds: number;
  /** Range of `{n}`. */
  rows?: number;
}

export interface LoadResult extends LoadFigures {
  errors: number;
  firstError?: string;
}

const HTTP_LOOP = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { base, spec, concurrency, seconds, warmUp, rows } = workerData;
const url = new URL(base);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
function fill(text, state) {
  return text.replace(/\\{n\\}/g, () => String(1 + Math.floor(Math.random() * rows))).replace(/\\{state\\}/g, () => state);
}
function once(connection) {
  return new Promise((resolve) => {
    const state = connection.state;
    const body = spec.body === undefined ? undefined : fill(spec.body, state);
    const headers = {};
    for (const [name, value] of Object.entries(spec.headers)) headers[name] = fill(value, state);
    if (body !== undefined) { headers['content-type'] = 'application/json'; headers['content-length'] = Buffer.byteLength(body); }
    const request = http.request({ agent, host: url.hostname, port: url.port, method: spec.method, path: fill(spec.path, state), headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => {
        if (response.statusCode !== spec.status) return resolve(response.statusCode + ' ' + text.slice(0, 200));
        if (spec.nextState) {
          try { connection.state = JSON.parse(text)[spec.nextState]; } catch { return resolve('unreadable answer: ' + text.slice(0, 200)); }
        }
        resolve(null);
      });
    });
    request.on('error', (error) => resolve(String(error)));
    request.end(body);
  });
}
(async () => {
  const latencies = [];
  let errors = 0;
  let firstError;
  const start = performance.now();
  const measureFrom = start + warmUp * 1000;
  const end = measureFrom + seconds * 1000;
  const states = spec.states && spec.states.length > 0 ? spec.states : [''];
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    const connection = { state: states[i % states.length] };
    while (performance.now() < end) {
      const sent = performance.now();
      const error = await once(connection);
      if (sent < measureFrom) continue;
      if (error) { errors++; firstError ??= error; }
      latencies.push(performance.now() - sent);
      // A chain broken by an error cannot go on: that connection stops.
      if (error && spec.nextState) return;
    }
  }));
  agent.destroy();
  parentPort.postMessage({ latencies, errors, firstError });
})();
`;

/** Runs the loop against `base` and answers what it measured. */
export function httpLoad(base: string, spec: RequestSpec, options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(HTTP_LOOP, {
      eval: true,
      workerData: { base, spec, concurrency: options.concurrency, seconds: options.seconds, warmUp: options.warmUpSeconds, rows: options.rows ?? 1 },
    });
    worker.once('message', ({ latencies, errors, firstError }: { latencies: number[]; errors: number; firstError?: string }) => {
      const figures = { requests: latencies.length, perSecond: latencies.length / options.seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
      resolve({ ...figures, errors, firstError });
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

/** A load's figures, which must have had no failed request: a figure over errors means nothing, so the bench stops. */
export function counted(result: LoadResult): LoadFigures {
  if (result.errors > 0) throw new Error(`${result.errors} requests failed (first: ${result.firstError})`);
  return result;
}
