/**
 * The baseline of the data API's figures: PostgreSQL answering the same query
 * to pgbench (Debian's `postgresql-client`: C, one thread, prepared
 * statements), the counterpart of wrk on the HTTP side.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runCaptured } from '../child-process';
import { percentile, type LoadFigures } from './measure';
import type { LoadOptions } from './http-load';

/** pgbench as baseplane.mjs found or installed it. */
const PGBENCH = process.env.BASEPLANE_PGBENCH_BIN?.trim() || 'pgbench';

async function runPgbench(args: string[]): Promise<string> {
  const { code, out } = await runCaptured(PGBENCH, args);
  if (code !== 0) throw new Error(`pgbench exited ${code}: ${out.trim().slice(0, 500)}`);
  return out;
}

/**
 * Runs `sql` (with `:n`, a random 1..rows) as a prepared statement over
 * `options.concurrency` connections to `url`: a warm-up, then the measured
 * run, whose per-transaction log gives the percentiles.
 */
export async function pgbenchLoad(url: string, sql: string, options: LoadOptions): Promise<LoadFigures> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baseplane-pgbench-'));
  try {
    const scriptFile = path.join(dir, 'query.sql');
    await writeFile(scriptFile, `\\set n random(1, ${options.rows ?? 1})\n${sql};\n`);
    const common = ['-n', '-M', 'prepared', '-c', String(options.concurrency), '-j', '1', '-f', scriptFile];
    if (options.warmUpSeconds > 0) await runPgbench([...common, '-T', String(options.warmUpSeconds), url]);
    const out = await runPgbench([...common, '-T', String(options.seconds), '-l', `--log-prefix=${path.join(dir, 'tx')}`, url]);
    const tps = /^tps = ([\d.]+)/m.exec(out);
    if (!tps) throw new Error(`pgbench printed no tps: ${out.trim().slice(0, 500)}`);
    // One line per transaction: client, transaction, latency in µs, script, epoch, µs.
    const latencies: number[] = [];
    for (const file of (await readdir(dir)).filter((name) => name.startsWith('tx'))) {
      for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) {
        const fields = line.split(' ');
        if (fields.length >= 3) latencies.push(Number(fields[2]) / 1000);
      }
    }
    return { requests: latencies.length, perSecond: Number(tps[1]), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
