/**
 * The one eviction rule of the process-local caches (verified tokens, key
 * hashes, derived keys): a Map iterates in insertion order, so its first key
 * is the oldest, and that one goes when the cache is full.
 */

/** Sets `key` as the newest entry of `map`, first dropping the oldest when `map` already holds `max`. */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
}
