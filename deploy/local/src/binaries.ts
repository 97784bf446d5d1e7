/**
 * Where the local stack finds the servers it builds with Go (the Temporal CLI,
 * versitygw): an explicit override, else the copy baseplane.mjs caches, else
 * the name on PATH. The cache fallback is for runs that skip baseplane.mjs,
 * such as `npx vitest`.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `env[override]`, else `<cache>/baseplane/<name>-<version>/<name>` when it exists, else `name`. */
export function cachedBinary(env: Record<string, string | undefined>, override: string, name: string, version: string): string {
  const explicit = env[override]?.trim();
  if (explicit) return explicit;
  const cacheRoot = env.XDG_CACHE_HOME?.trim() || path.join(os.homedir(), '.cache');
  const cached = path.join(cacheRoot, 'baseplane', `${name}-${version}`, name);
  return existsSync(cached) ? cached : name;
}
