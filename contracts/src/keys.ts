/**
 * API keys: how they look and how they are looked up. A key is random and
 * bound to one project; the stores keep only its SHA-256 (and the control
 * plane an encrypted copy to show operators).
 */
import { createHash, createHmac } from 'node:crypto';
import type { KeyKind } from './events';

export const KEY_PREFIX: Record<KeyKind, string> = { anon: 'bp_anon_', service: 'bp_service_' };

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The kind a key claims by its prefix; the lookup by hash decides whether it is real. */
export function keyKindOf(key: string): KeyKind | undefined {
  if (key.startsWith(KEY_PREFIX.anon)) return 'anon';
  if (key.startsWith(KEY_PREFIX.service)) return 'service';
  return undefined;
}

/**
 * A secret derived from PLATFORM_SECRET for one purpose (a tenant owner's or
 * a data-API login's database password), so it never has to be stored.
 */
export function deriveSecret(platformSecret: string, purpose: string): string {
  return createHmac('sha256', platformSecret).update(purpose).digest('base64url');
}

export const ownerPasswordPurpose = (projectId: string) => `tenant-owner:${projectId}`;
export const applyPasswordPurpose = (projectId: string) => `tenant-apply:${projectId}`;
/** By database name, so the worker can make the login of every tenant database it finds (`tenantAuthenticatorRole`). */
export const authenticatorPasswordPurpose = (databaseName: string) => `tenant-authenticator:${databaseName}`;
