/**
 * Small network probes the local stack needs: picking free ports and waiting
 * for a TCP port or an HTTP endpoint to come up.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * Finds a free TCP port on 127.0.0.1. The port is released before returning,
 * so another process could take it first; {@link pickablePorts} makes that
 * unlikely, and it lets each child be told its port on the command line.
 */
export async function findFreePort(): Promise<number> {
  const reservation = await reservePort();
  await reservation.release();
  return reservation.port;
}

/**
 * Where free ports are looked for: below the kernel's ephemeral range (Linux's
 * `ip_local_port_range`, 32768–60999 by default), from 20000 up. A port the
 * kernel hands out itself, for an outgoing connection or a `listen(0)` (the
 * Temporal dev server picks its internal services' ports that way), comes from
 * that range; a port chosen there and released could be taken by either before
 * its server binds it, as a CI run saw. Below it only another explicit choice
 * can take it. `undefined` when the range leaves no room (not Linux, or a
 * tuned range), and the kernel chooses.
 */
export function pickablePorts(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): { from: number; to: number } | undefined {
  let ephemeralStart: number;
  try {
    ephemeralStart = Number(readFileSync(rangeFile, 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return undefined;
  }
  const from = 20_000;
  return Number.isInteger(ephemeralStart) && ephemeralStart - from >= 1000 ? { from, to: ephemeralStart } : undefined;
}

const PICK_TRIES = 50;

/** This machine's {@link pickablePorts}, read once. */
let systemPorts: ReturnType<typeof pickablePorts> | 'unread' = 'unread';

/**
 * Distinct free ports, one per name, held together while chosen so that none
 * is chosen twice: `findFreePorts(['grpc', 'ui'])` → `{ grpc: 21305, ui: 27718 }`.
 */
export async function findFreePorts<const Names extends readonly string[]>(names: Names): Promise<Record<Names[number], number>> {
  const reservations: PortReservation[] = [];
  try {
    for (let i = 0; i < names.length; i++) reservations.push(await reservePort());
  } finally {
    await Promise.all(reservations.map((reservation) => reservation.release()));
  }
  return Object.fromEntries(names.map((name, i) => [name, reservations[i]!.port])) as Record<Names[number], number>;
}

/** A free port held open (listening) until released, so the kernel hands it to no one else meanwhile. */
export interface PortReservation {
  port: number;
  /** Stops holding the port; its owner should bind it right after. */
  release(): Promise<void>;
}

/**
 * Reserves a free TCP port on 127.0.0.1 by listening on it. For ports chosen
 * long before their process binds them: servers started in between (the
 * Temporal dev server picks free ports for its internal services) cannot be
 * given the same one. A connection that comes meanwhile (the gateway, which
 * listens first, passing on a request for a service not yet started) is cut
 * at once: held open, it would keep the release waiting, and the start with
 * it, for as long as its client kept it.
 */
export async function reservePort(): Promise<PortReservation> {
  if (systemPorts === 'unread') systemPorts = pickablePorts();
  const range = systemPorts;
  if (range) {
    for (let tries = 0; tries < PICK_TRIES; tries++) {
      const reservation = await listenOn(range.from + Math.floor(Math.random() * (range.to - range.from)));
      if (reservation) return reservation;
    }
  }
  const reservation = await listenOn(0);
  if (!reservation) throw new Error('no free port');
  return reservation;
}

/** Listens on `port` (0: the kernel's choice) of 127.0.0.1; `undefined` when it is taken. */
function listenOn(port: number): Promise<PortReservation | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' && port !== 0 ? resolve(undefined) : reject(error)));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : 0;
      if (bound === 0) return reject(new Error('no free port'));
      let released: Promise<void> | undefined;
      resolve({ port: bound, release: () => (released ??= new Promise<void>((done) => server.close(() => done()))) });
    });
  });
}

/** Resolves true when `host:port` accepts a TCP connection within `timeoutMs`. */
export function canConnect(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Splits a `host:port` address (IPv6 hosts in brackets) into its parts. */
export function splitHostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(address.slice(at + 1)) };
}

/** Resolves true when `url` answers HTTP 200 within `timeoutMs`. */
export async function answers200(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** What {@link waitUntil} checks each round; `abort` is a reason to stop waiting early. */
export interface WaitOptions {
  /** Shown in the timeout error: what was being waited for. */
  what: string;
  timeoutMs: number;
  intervalMs?: number;
  /** Returns a message when waiting is pointless (e.g. the process died). */
  abort?: () => string | undefined;
}

/** Polls `probe` until it resolves true; throws after `timeoutMs`. */
export async function waitUntil(probe: () => Promise<boolean>, options: WaitOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const abortReason = options.abort?.();
    if (abortReason !== undefined) throw new Error(`${options.what}: ${abortReason}`);
    if (await probe()) return;
    if (Date.now() > deadline) {
      throw new Error(`${options.what}: not ready after ${Math.round(options.timeoutMs / 1000)} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}
