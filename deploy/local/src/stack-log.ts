/**
 * Where the local stack's output goes: one line per message, tagged with the
 * part it comes from (`[postgres]`, `[worker]`…), to the console and/or to one
 * log file per part.
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';

/** How the stack reports what its parts say. */
export interface StackLogOptions {
  /** Nothing on the console (files in `logDir` still get everything). */
  quiet?: boolean;
  /** Tag console lines with `[part] `; default true. */
  logPrefix?: boolean;
  /** When set, each part's lines also go to `<logDir>/<part>.log`. */
  logDir?: string;
}

/** A line sink shared by the supervisor and its children's output streams. */
export interface StackLog {
  /** Writes one line on behalf of `part`; `consoleToo: false` keeps it out of the console. */
  line(part: string, text: string, consoleToo?: boolean): void;
  /** Forwards a child's output stream line by line; `toConsole` is asked per line. */
  follow(part: string, stream: Readable, toConsole?: () => boolean): void;
  /** Flushes and closes the log files. */
  close(): Promise<void>;
}

/** Creates the stack's log sink; the log directory is created if missing. */
export function createStackLog(options: StackLogOptions): StackLog {
  const files = new Map<string, fs.WriteStream>();
  // Lines can trail in after close() (a dying child's last words); they only go to the console.
  let closed = false;
  // The owner's only: the data directory above lets every local user through (o+x, for PostgreSQL's system user),
  // and the path of a log is easily guessed.
  if (options.logDir !== undefined) fs.mkdirSync(options.logDir, { recursive: true, mode: 0o700 });

  const fileFor = (part: string): fs.WriteStream | undefined => {
    if (options.logDir === undefined || closed) return undefined;
    let file = files.get(part);
    if (file === undefined) {
      file = fs.createWriteStream(path.join(options.logDir, `${part}.log`), { flags: 'a', mode: 0o600 });
      files.set(part, file);
    }
    return file;
  };

  const line = (part: string, text: string, consoleToo = true): void => {
    fileFor(part)?.write(`${text}\n`);
    if (options.quiet || !consoleToo) return;
    process.stdout.write(options.logPrefix === false ? `${text}\n` : `[${part}] ${text}\n`);
  };

  return {
    line,
    follow(part, stream, toConsole) {
      readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (text) => {
        line(part, text, toConsole?.() ?? true);
      });
    },
    async close() {
      closed = true;
      await Promise.all(
        [...files.values()].map((file) => new Promise<void>((resolve) => file.end(() => resolve()))),
      );
      files.clear();
    },
  };
}
