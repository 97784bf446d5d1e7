/**
 * Ports of the local stack: chosen below the kernel's ephemeral range, so that
 * no outgoing connection nor `listen(0)` takes one between its choice and its
 * bind; and the Temporal dev server started again on other ports when one was
 * taken all the same.
 */
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePorts, pickablePorts } from '../local/src/net';
import type { StackLog } from '../local/src/stack-log';
import { resolveTemporalBin, startTemporalDevServer } from '../local/src/temporal';

let dir: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'baseplane-ports-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

/** A stack log that keeps its lines in memory. */
function memoryLog(): StackLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    line: (part, text) => lines.push(`[${part}] ${text}`),
    follow(part: string, stream: Readable) {
      readline.createInterface({ input: stream }).on('line', (text) => lines.push(`[${part}] ${text}`));
    },
    close: async () => {},
  };
}

describe('free ports', () => {
  it('are looked for below the ephemeral range the kernel names, and by the kernel when it leaves no room', async () => {
    const file = path.join(dir, 'range');
    await fs.writeFile(file, '32768\t60999\n');
    expect(pickablePorts(file)).toEqual({ from: 20_000, to: 32_768 });
    await fs.writeFile(file, '1024\t65535\n');
    expect(pickablePorts(file)).toBeUndefined();
    expect(pickablePorts(path.join(dir, 'no-such-file'))).toBeUndefined();
  });

  it('are distinct, outside the ephemeral range, and free to bind', async () => {
    const range = pickablePorts();
    const ports = Object.values(await findFreePorts(Array.from({ length: 30 }, (_, i) => `port${i}`)));
    expect(new Set(ports).size).toBe(30);
    if (range) for (const port of ports) expect(port >= range.from && port < range.to).toBe(true);
    const servers = await Promise.all(
      ports.map(
        (port) =>
          new Promise<net.Server>((resolve, reject) => {
            const server = net.createServer();
            server.once('error', reject);
            server.listen(port, '127.0.0.1', () => resolve(server));
          }),
      ),
    );
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
});

describe('the Temporal dev server', () => {
  /**
   * A stand-in for a port taken between its choice and the server's bind: a
   * wrapper around the real Temporal CLI that, its first `failures` runs, says
   * what Temporal says then and exits 1.
   */
  async function cliFailingFirst(failures: number): Promise<string> {
    const script = path.join(dir, `temporal-failing-${failures}`);
    const count = `${script}.runs`;
    await fs.writeFile(
      script,
      [
        '#!/bin/sh',
        `runs=$(cat '${count}' 2>/dev/null || echo 0)`,
        `echo $((runs + 1)) > '${count}'`,
        `if [ "$runs" -lt ${failures} ]; then`,
        `  echo '{"level":"FATAL","message":"listen tcp 127.0.0.1:1: bind: address already in use"}' >&2`,
        '  exit 1',
        'fi',
        `exec '${resolveTemporalBin(process.env)}' "$@"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    return script;
  }

  it('starts again on other ports when one it was given was taken meanwhile', async () => {
    const log = memoryLog();
    const dataDir = path.join(dir, 'twice');
    const server = await startTemporalDevServer({ bin: await cliFailingFirst(2), dataDir, namespace: 'default', log });
    try {
      expect(server.isRunning()).toBe(true);
      const response = await fetch(server.uiUrl);
      expect(response.status).toBe(200);
      await response.body?.cancel();
      expect(log.lines.filter((line) => line.includes('starting it again on other ports'))).toHaveLength(2);
      expect(await fs.readFile(path.join(dir, 'temporal-failing-2.runs'), 'utf8')).toBe('3\n');
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('gives up after three tries, with the cause', async () => {
    const log = memoryLog();
    const start = startTemporalDevServer({ bin: await cliFailingFirst(99), dataDir: path.join(dir, 'never'), namespace: 'default', log });
    await expect(start).rejects.toThrow('Temporal dev server: exited during start');
    expect(await fs.readFile(path.join(dir, 'temporal-failing-99.runs'), 'utf8')).toBe('3\n');
  });

  it('is not started again when it failed for another reason', async () => {
    const script = path.join(dir, 'temporal-broken');
    await fs.writeFile(script, `#!/bin/sh\necho x >> '${script}.runs'\necho 'unable to open database file' >&2\nexit 1\n`, { mode: 0o755 });
    await expect(startTemporalDevServer({ bin: script, dataDir: path.join(dir, 'broken'), namespace: 'default', log: memoryLog() })).rejects.toThrow(
      'exited during start',
    );
    expect(await fs.readFile(`${script}.runs`, 'utf8')).toBe('x\n');
  });
});
