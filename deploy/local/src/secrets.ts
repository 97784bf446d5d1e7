/**
 * Secrets the local stack generates once and keeps in the data directory
 * (the platform secret, the embedded PostgreSQL password), so that a restart
 * on the same data finds the same values.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';

/** A fresh random secret: `bytes` random bytes, base64url (safe in URLs and env vars). */
export function generateSecret(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Returns the secret stored in `file`, creating it (mode 0600) with
 * `generateSecret(bytes)` when the file does not exist yet.
 */
export async function readOrCreateSecretFile(file: string, bytes: number): Promise<string> {
  const existing = await readSecret(file);
  if (existing !== undefined) return existing;
  const secret = generateSecret(bytes);
  try {
    // 'wx' so that two stacks racing on one data directory agree on a single value.
    await fs.writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readSecret(file);
    if (winner === undefined) throw new Error(`${file} exists but is empty`);
    return winner;
  }
}

async function readSecret(file: string): Promise<string | undefined> {
  try {
    const text = (await fs.readFile(file, 'utf8')).trim();
    return text === '' ? undefined : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
