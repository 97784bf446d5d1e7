/**
 * Where a session persists between page loads: `localStorage` in a browser,
 * memory elsewhere, or any storage the caller passes (sync or async, the
 * shape of `localStorage`).
 */

/** The part of `localStorage` the client uses; methods may also answer promises (React Native's AsyncStorage, a cookie store…). */
export interface SessionStorage {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

/** A storage that lives as long as the client's process. */
export function memoryStorage(): SessionStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/** `localStorage` when this runtime has a usable one (a browser page), else memory. */
export function defaultStorage(): { storage: SessionStorage; isLocalStorage: boolean } {
  try {
    const local = (globalThis as { localStorage?: Storage }).localStorage;
    if (local) {
      // Private modes and sandboxed frames may expose it yet refuse writes.
      local.setItem('baseplane.probe', '1');
      local.removeItem('baseplane.probe');
      return { storage: local, isLocalStorage: true };
    }
  } catch {
    /* no usable localStorage: fall through to memory */
  }
  return { storage: memoryStorage(), isLocalStorage: false };
}

/**
 * The key a client that knows its project keeps its session under: one per
 * base URL and project, as supabase-js keys it by project
 * (`sb-<ref>-auth-token`), so rotating the anon key (and redeploying the app
 * with the new one) signs nobody out.
 */
export function projectStorageKeyOf(baseUrl: string, projectId: string): string {
  return `baseplane.auth.${projectId}.${fnv1a(baseUrl)}`;
}

/**
 * The key a client that does not know its project keeps its session under:
 * one per base URL and anon key, so two projects served from one origin do
 * not share a session. Rotating the anon key changes it, which signs users
 * out; clients that know their project move a session from here (see
 * {@link projectStorageKeyOf}).
 */
export function storageKeyOf(baseUrl: string, anonKey: string): string {
  return `baseplane.auth.${fnv1a(`${baseUrl}|${anonKey}`)}`;
}

/** FNV-1a: short, synchronous and the same in every runtime; a key is a name, not a secret. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const char of text) {
    hash ^= char.codePointAt(0)!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
