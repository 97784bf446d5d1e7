/**
 * TCP relays between an S3 store and the stack's real S3 server that make the
 * server misbehave as seen from the store: hang, stall, get cut off, or hold a
 * part back until told.
 */
import net from 'node:net';
import { MiB } from './object-bodies';

/** The plumbing the relays below share: a TCP server on a free port whose sockets are tracked, so all can be cut at once. */
async function tcpRelay(
  endpoint: string,
  onConnection: (client: net.Socket, connectUpstream: () => net.Socket) => void,
): Promise<{ endpoint: string; destroyAll(): void; close(): Promise<void> }> {
  const target = new URL(endpoint);
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    return socket;
  };
  const server = net.createServer((client) => onConnection(track(client), () => track(net.connect(Number(target.port), target.hostname))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const destroyAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    destroyAll,
    async close() {
      destroyAll();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A TCP relay to the stack's S3 server that can stop answering: accepted connections
 * then get nothing back, as from a server that hangs (a stuck disk, a paused VM).
 */
export async function relayTo(endpoint: string): Promise<{ endpoint: string; hang(): void; close(): Promise<void> }> {
  let hanging = false;
  const relay = await tcpRelay(endpoint, (client, connectUpstream) => {
    if (hanging) return;
    const upstream = connectUpstream();
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  return {
    endpoint: relay.endpoint,
    hang() {
      hanging = true;
      relay.destroyAll();
    },
    close: relay.close,
  };
}

/**
 * A TCP relay to the stack's S3 server that shapes what it takes from the store: at most
 * `bytesPerSecond`, and after `stallAfterBytes` on one connection it stops reading that
 * connection for good (its socket buffers fill and the sender's writes stop completing),
 * as a server does that stopped taking an upload. Other connections go on working.
 */
export async function shapingRelayTo(
  endpoint: string,
  shape: { bytesPerSecond?: number; stallAfterBytes?: number },
): Promise<{ endpoint: string; stalled(): number; partition(cut: boolean): void; close(): Promise<void> }> {
  let stalled = 0;
  let cut = false;
  const relay = await tcpRelay(endpoint, (client, connectUpstream) => {
    // Partitioned: the connection is taken, and nothing ever reaches the server or comes back.
    if (cut) return;
    const upstream = connectUpstream();
    let carried = 0;
    let stopped = false;
    const began = Date.now();
    client.on('data', (chunk: Buffer) => {
      carried += chunk.length;
      upstream.write(chunk);
      if (shape.stallAfterBytes !== undefined && carried > shape.stallAfterBytes) {
        // Never resumed; and the server's own reaction (a close) is kept from the store.
        stopped = true;
        stalled += 1;
        client.pause();
        client.removeAllListeners('data');
        upstream.unpipe(client);
        return;
      }
      if (shape.bytesPerSecond !== undefined) {
        const wait = began + (carried / shape.bytesPerSecond) * 1000 - Date.now();
        if (wait > 0) {
          client.pause();
          setTimeout(() => client.resume(), wait);
        }
      }
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      if (!stopped) client.destroy();
    });
  });
  return {
    endpoint: relay.endpoint,
    stalled: () => stalled,
    /** Cutting drops every connection and holds new ones without relaying; lifting it relays new ones again. */
    partition(on) {
      cut = on;
      if (on) relay.destroyAll();
    },
    close: relay.close,
  };
}

/**
 * A relay to the S3 server that holds back an UploadPart request part-way:
 * the server has taken the request and is reading its body when `release()`
 * lets the rest through, whether or not the store is still connected (as the
 * bytes in a paused server's socket buffer run when it resumes).
 */
export async function partHoldingRelayTo(endpoint: string): Promise<{ endpoint: string; holding(): boolean; release(): void; heldAnswer(): string; heldRequestLine(): string; close(): Promise<void> }> {
  let held: { upstream: net.Socket; rest: Buffer[]; answer: string; line: string } | undefined;
  const relay = await tcpRelay(endpoint, (client, connectUpstream) => {
    const upstream = connectUpstream();
    let holdingHere = false;
    let forwarded = 0;
    client.on('data', (chunk: Buffer) => {
      const head = chunk.subarray(0, 512).toString('latin1');
      if (!held && /^PUT [^ ]*partNumber=/.test(head)) {
        held = { upstream, rest: [], answer: '', line: head.split('\r\n')[0]! };
        holdingHere = true;
      }
      if (!holdingHere) return void upstream.write(chunk);
      // The request's head and its first MiB reach the server; the rest waits for release().
      const pass = Math.max(0, Math.min(chunk.length, MiB - forwarded));
      if (pass > 0) upstream.write(chunk.subarray(0, pass));
      forwarded += pass;
      if (pass < chunk.length) held!.rest.push(chunk.subarray(pass));
    });
    upstream.on('data', (chunk: Buffer) => {
      if (holdingHere) held!.answer += chunk.toString('latin1');
      if (!client.destroyed) client.write(chunk);
    });
    // The store hanging up does not end a held request: its bytes are the server's already.
    client.on('close', () => {
      if (!holdingHere) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  });
  return {
    endpoint: relay.endpoint,
    holding: () => held !== undefined && held.rest.length > 0,
    release() {
      for (const chunk of held?.rest ?? []) held!.upstream.write(chunk);
      if (held) held.rest = [];
    },
    heldAnswer: () => held?.answer ?? '',
    heldRequestLine: () => held?.line ?? '',
    close: relay.close,
  };
}
