/**
 * End-user passwords: argon2id at contracts' PASSWORD_HASH_COST (OWASP's
 * minimum), and a verification that costs the same whether or not the user exists.
 */
import argon2 from 'argon2';
import { PASSWORD_HASH_COST } from '@baseplane/contracts';

const OPTIONS = { type: argon2.argon2id, ...PASSWORD_HASH_COST } as const;
let dummyHash: Promise<string> | undefined;

export const hashPassword = (password: string) => argon2.hash(password, OPTIONS);

/** Verifies against the stored hash, or against a dummy one so an unknown email takes as long. */
export async function verifyPassword(storedHash: string | null | undefined, password: string): Promise<boolean> {
  dummyHash ??= argon2.hash('not the password of anyone', OPTIONS);
  const ok = await argon2.verify(storedHash ?? (await dummyHash), password);
  return ok && storedHash !== null && storedHash !== undefined;
}
