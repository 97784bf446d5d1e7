/**
 * Small network probes the local stack needs: picking free ports and waiting
 * for a TCP port or an HTTP endpoint to come up.
 */
import net from 'node:net';

/**
 * Asks the kernel for a free TCP port on 127.0.0.1. The port is released before
 * returning, so another process could take it first; acceptable on a dev box,
 * and it lets each child be told its port on the command line.
 */
export async function findFreePort(): Promise<number> {
  const reservation = await reservePort();
  await reservation.release();
  return reservation.port;
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
export function reservePort(): Promise<PortReservation> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      if (port === 0) return reject(new Error('no free port'));
      let released: Promise<void> | undefined;
      resolve({ port, release: () => (released ??= new Promise<void>((done) => server.close(() => done()))) });
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
