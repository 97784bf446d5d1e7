/**
 * The test stack's service logs (`<logDir>/<part>.log`; the data plane's
 * second replica writes `data-plane-2.log`, and so on).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { inject } from 'vitest';

/** The lines so far of every log whose file name starts with one of `parts` (`data-plane` takes every replica's). */
export async function serviceLogLines(...parts: string[]): Promise<string[]> {
  const dir = inject('logDir');
  const files = (await readdir(dir)).filter((name) => name.endsWith('.log') && parts.some((part) => name.startsWith(part)));
  return (await Promise.all(files.map(async (name) => (await readFile(path.join(dir, name), 'utf8')).split('\n')))).flat();
}
