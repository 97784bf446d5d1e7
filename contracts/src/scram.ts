/**
 * A login's password as PostgreSQL stores it (a SCRAM-SHA-256 verifier), made
 * here so that `create role … password` / `alter role … password` never send
 * the password itself. PostgreSQL takes a verifier as it is, and logs in with
 * the password as before; but a statement's text goes where the password must
 * not: the server log (every statement it refuses, with
 * log_min_error_statement's default, and every one with log_statement =
 * 'ddl'), pg_stat_statements and pg_stat_activity.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';

/** PostgreSQL's default `scram_iterations`. */
const ITERATIONS = 4096;

/**
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (RFC 5802, 7677), with a fresh salt.
 * The password must be ASCII without control characters (SASLprep leaves it as it is): the derived ones are base64url.
 */
export function scramVerifier(password: string): string {
  if (!/^[\x20-\x7e]*$/.test(password)) throw new Error('scramVerifier takes printable ASCII only');
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, ITERATIONS, 32, 'sha256');
  const storedKey = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
