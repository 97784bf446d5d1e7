/**
 * Clean-up of processes a previous stack on the same data directory left
 * behind when its supervisor was killed outright (kill -9, OOM): they hold the
 * PostgreSQL lock file and Temporal's SQLite file, so a new start must end
 * them; an S3 server on the same buckets would be left running for good.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { s3BucketsDir } from './s3-server';
import type { StackLog } from './stack-log';

/** A process found under /proc: its pid and how to recognise it. */
interface Found {
  pid: number;
  part: 'postgres' | 'temporal' | 's3' | 'service';
}

const PORT_VARIABLES = ['CONTROL_PLANE_PORT=', 'WORKER_PORT=', 'DATA_PLANE_PORT='];

/** Processes of an earlier stack on `dataDir` (Linux /proc; elsewhere none are found). */
function findLeftovers(dataDir: string): Found[] {
  if (!existsSync('/proc')) return [];
  const postgresMarker = `-D\0${path.join(dataDir, 'postgres')}\0`;
  const temporalMarker = `${path.join(dataDir, 'temporal', 'temporal.db')}\0`;
  const s3Marker = `\0posix\0${s3BucketsDir(dataDir)}\0`;
  const found: Found[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || pid === process.ppid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.includes(postgresMarker)) found.push({ pid, part: 'postgres' });
      else if (cmdline.includes('start-dev') && cmdline.includes(temporalMarker)) found.push({ pid, part: 'temporal' });
      else if (`\0${cmdline}`.includes(s3Marker)) found.push({ pid, part: 's3' });
      else {
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        const ours = environ.includes(`DATA_DIR=${dataDir}`);
        if (ours && environ.some((line) => PORT_VARIABLES.some((name) => line.startsWith(name)))) {
          found.push({ pid, part: 'service' });
        }
      }
    } catch {
      // Gone while we looked, or not ours to read.
    }
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}

/**
 * Stops leftovers of an earlier stack on `dataDir`: services and Temporal with
 * SIGTERM, PostgreSQL with SIGINT (fast shutdown), SIGKILL after 15 s.
 */
export async function stopLeftovers(dataDir: string, log: StackLog): Promise<void> {
  const leftovers = findLeftovers(dataDir);
  if (leftovers.length === 0) return;
  for (const { pid, part } of leftovers) {
    log.line(part === 'service' ? 'supervisor' : part, `stopping pid ${pid} left over from an earlier run on this data`);
    try {
      process.kill(pid, part === 'postgres' ? 'SIGINT' : 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
  const deadline = Date.now() + 15_000;
  while (leftovers.some(({ pid }) => isAlive(pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const { pid } of leftovers) {
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
}

/** The file naming the process that runs the stack on a data directory. */
export const STACK_PID_FILE = 'stack.pid';

/** When `pid` started (/proc's starttime, in clock ticks since boot), so that a pid used again is not taken for it; '' where unknown. */
function startTimeOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state is the 3rd, starttime the 22nd.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/** The stack's process named in `file` when it still runs; undefined for none, or a stale file. */
async function liveOwner(file: string): Promise<number | undefined> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  const [pidText, startTime = ''] = text.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return undefined;
  return startTime === startTimeOf(pid) ? pid : undefined;
}

/**
 * Claims `dataDir` for this process's stack, before {@link stopLeftovers}: a
 * stack already running there (another terminal's `npm start`) owns its
 * processes, which are not leftovers to stop, so the start is refused
 * instead. A claim whose process is gone (killed outright) is stale and
 * taken over. Answers the release, which removes the claim if it is still ours.
 */
export async function claimDataDir(dataDir: string): Promise<() => Promise<void>> {
  const file = path.join(dataDir, STACK_PID_FILE);
  const claim = `${process.pid} ${startTimeOf(process.pid)}\n`;
  for (;;) {
    try {
      await fs.writeFile(file, claim, { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = await liveOwner(file);
    if (owner !== undefined) {
      throw new Error(`DATA_DIR ${dataDir} is in use by the stack of pid ${owner}: stop that one first (Ctrl-C in its terminal), or start with another DATA_DIR and PORT`);
    }
    await fs.rm(file, { force: true });
  }
  return async () => {
    if ((await fs.readFile(file, 'utf8').catch(() => '')) === claim) await fs.rm(file, { force: true });
  };
}
