/**
 * Role statements carry a SCRAM-SHA-256 verifier, never the password: their
 * text reaches PostgreSQL's log whenever one is refused (a role another
 * attempt made first), and every one of them under log_statement = 'ddl'.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { expect, it } from 'vitest';
import { scramVerifier } from '@baseplane/contracts';
import { applyRoleSql, authenticatorRoleSql, createOwnerRoleSql } from '../src/tenant-sql';

const password = 'k1dHY022HCZQrs1dy0ITKiCKIQ3piSWgz1bWBcoHpSM';

it('makes the verifier PostgreSQL stores, with a fresh salt each time', () => {
  const verifier = scramVerifier(password);
  const match = /^SCRAM-SHA-256\$4096:([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(verifier);
  expect(match).not.toBeNull();
  const [, salt, storedKey, serverKey] = match!;
  const salted = pbkdf2Sync(password, Buffer.from(salt!, 'base64'), 4096, 32, 'sha256');
  expect(Buffer.from(storedKey!, 'base64')).toEqual(createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest());
  expect(Buffer.from(serverKey!, 'base64')).toEqual(createHmac('sha256', salted).update('Server Key').digest());
  expect(Buffer.from(salt!, 'base64')).toHaveLength(16);
  expect(scramVerifier(password)).not.toBe(verifier);
  expect(() => scramVerifier('pässword')).toThrow();
});

it('puts no password into a role statement', () => {
  const statements = [createOwnerRoleSql('p_x_owner', password), ...applyRoleSql('p_x_apply', 'p_x_owner', 'p_x', password), ...authenticatorRoleSql('p_x_authenticator', 'p_x', password)];
  for (const sql of statements) expect(sql).not.toContain(password);
  expect(statements.filter((sql) => sql.includes("password 'SCRAM-SHA-256$4096:"))).toHaveLength(5);
});
