/**
 * Lifecycle helpers for the child processes of the local stack (Temporal, the
 * S3 server and the services): spawning with piped output, waiting until one
 * is ready, and stopping them for sure; and short-lived tools run to their end.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { waitUntil } from './net';
import type { StackLog } from './stack-log';

/** True once the child has exited (or never started). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null || child.pid === undefined;
}

/** How a child ended, for log lines: `code 1` or `SIGKILL`. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ?? `code ${code}`;
}

/** What {@link spawnLogged} starts. */
export interface LoggedSpawn {
  /** Part name the output lines are tagged with. */
  part: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  log: StackLog;
  /** Asked per output line: whether it goes to the console (files get all). */
  toConsole?: () => boolean;
}

/** Spawns a child whose stdout and stderr lines go to the stack log under its part name. */
export function spawnLogged(options: LoggedSpawn): ChildProcess {
  const child = spawn(options.command, options.args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: a terminal's Ctrl-C reaches only the supervisor, which
    // then stops the parts in order instead of all of them dying at once.
    detached: true,
  });
  options.log.follow(options.part, child.stdout!, options.toConsole);
  options.log.follow(options.part, child.stderr!, options.toConsole);
  // Without a listener a failed spawn (ENOENT) would crash the supervisor; callers watch 'exit' instead.
  child.on('error', (error) => options.log.line(options.part, `could not run ${options.command}: ${error.message}`));
  return child;
}

/**
 * Asks the child to stop (SIGTERM) and SIGKILLs it after `graceMs`; resolves
 * once it has exited.
 */
export async function terminate(child: ChildProcess, graceMs: number, onKill?: () => void): Promise<void> {
  if (hasExited(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killTimer = setTimeout(() => {
    onKill?.();
    child.kill('SIGKILL');
  }, graceMs);
  try {
    await exited;
  } finally {
    clearTimeout(killTimer);
  }
}

/** A long-running server child of the stack (Temporal, the S3 server), as the stack controls it. */
export interface ServerChild {
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL after the grace; resolves when the process is gone. */
  stop(): Promise<void>;
  /** Sends SIGTERM without waiting: for when this process is exiting. */
  stopNow(): void;
  /** True once stop() or stopNow() was asked (output filters read it). */
  readonly stopping: boolean;
}

/** Wraps a spawned server: an exit nobody asked for is logged under `part`. */
export function serverChild(part: string, child: ChildProcess, log: StackLog, graceMs: number): ServerChild {
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) log.line(part, `exited unexpectedly (${describeExit(code, signal)})`);
  });
  return {
    get stopping() {
      return stopping;
    },
    isRunning: () => !hasExited(child),
    stopNow() {
      stopping = true;
      if (!hasExited(child)) child.kill('SIGTERM');
    },
    async stop() {
      stopping = true;
      await terminate(child, graceMs, () => log.line(part, `did not stop within ${graceMs / 1000} s; killing it`));
    },
  };
}

/**
 * Resolves once `ready()` holds; gives up at once when the server exits
 * meanwhile, and stops it when it never gets ready.
 */
export async function untilReady(part: string, server: ServerChild, what: string, ready: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  try {
    await waitUntil(ready, {
      what,
      timeoutMs,
      abort: () => (server.isRunning() ? undefined : `exited during start (see the [${part}] lines)`),
    });
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * Runs a short-lived tool to its end and answers its exit code with what it
 * wrote (stdout and stderr together); rejects only when it cannot be started.
 */
export function runCaptured(command: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.once('error', (error) => reject(new Error(`could not run ${command}: ${error.message}`)));
    child.once('close', (code) => resolve({ code, out }));
  });
}
