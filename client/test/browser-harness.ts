/**
 * What the browser test runs on: the test page built by Vite into a temp
 * directory, a static server for it on a free localhost port (another origin
 * than the gateway's, as an app's would be), and Debian's Chromium driven by
 * playwright-core (`BASEPLANE_CHROMIUM_BIN`, set by `npm test`, else
 * /usr/bin/chromium).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { build } from 'vite';

const PAGE_SOURCE = fileURLToPath(new URL('./browser', import.meta.url));
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.map': 'application/json' };

export interface ServedPage {
  /** The page's address; add `?baseUrl=&anonKey=`. */
  url: string;
  close(): Promise<void>;
}

/** Builds client/test/browser with Vite and serves the result on 127.0.0.1. */
export async function buildAndServePage(): Promise<ServedPage> {
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'baseplane-browser-page-'));
  await build({ root: PAGE_SOURCE, configFile: false, logLevel: 'warn', build: { outDir, emptyOutDir: true, sourcemap: true, target: 'es2022' } });
  const server = http.createServer((request, response) => {
    const pathname = new URL(request.url ?? '/', 'http://page').pathname;
    const file = path.join(outDir, pathname === '/' ? 'index.html' : pathname);
    if (!file.startsWith(outDir)) return void response.writeHead(404).end();
    readFile(file).then(
      (bytes) => response.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(bytes),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}

/** Chromium, headless, kept off the network beyond what the test asks (this machine has none). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.BASEPLANE_CHROMIUM_BIN?.trim() || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
