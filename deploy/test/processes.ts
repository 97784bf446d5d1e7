/**
 * Finds live processes by what they were started with (/proc, Linux only), so
 * tests can check that a stack left nothing behind or kill one of its services.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Pids whose command line or environment contains `needle` (this process excluded). */
export function processesMentioning(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      // A zombie has an empty command line: it is gone, only not yet reaped.
      if (cmdline === '') continue;
      if (cmdline.includes(needle) || environ.includes(needle)) found.push(pid);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Pids whose environment has exactly `name=value`. */
export function processesWithEnv(name: string, value: string): number[] {
  const entry = `${name}=${value}`;
  const found: number[] = [];
  for (const dir of readdirSync('/proc')) {
    const pid = Number(dir);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(entry)) found.push(pid);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** The pid of the one process that has `arg` as one of its command-line arguments. */
export function processWithArgument(arg: string): number {
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(arg)) return pid;
    } catch {
      // The process ended while we looked.
    }
  }
  throw new Error(`no process has the argument ${arg}`);
}
