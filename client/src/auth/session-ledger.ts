/**
 * What the last refresh (or sign-in, or sign-out) of any tab replaced, kept
 * where every tab of the origin reads the same thing once a write is done:
 * IndexedDB.
 *
 * `localStorage` is not such a place. Chromium gives each tab its own copy
 * and sends one tab's writes to the others a little later, so a tab that
 * gets the refresh lock right after another tab refreshed can still read the
 * old session (40 handovers in 198, measured with two headless tabs) and
 * spend its refresh token a second time. The keeper writes each change here
 * before `localStorage` and, under the lock, asks this ledger whether what it
 * read from `localStorage` is a value that has already been replaced (by the
 * last change or one of the changes before it: a tab that sat out a few
 * refreshes of the others can be that many behind).
 * `localStorage` stays where the session lives between page loads and what
 * other tabs' `storage` events come from.
 */

export interface SessionLedger {
  /** The last change written under `key`, with the values it and the changes before it replaced; null when there is none. */
  read(key: string): Promise<LedgerEntry | null>;
  write(key: string, entry: LedgerEntry): Promise<void>;
}

export interface LedgerEntry {
  /** The stored values replaced so far, newest first (at most `LEDGER_HISTORY`): a tab can lag by more than one change. */
  replaced: Array<string | null>;
  /** What is stored now (null: signed out). */
  stored: string | null;
}

/** Replaced values the ledger remembers: more changes than a tab's copy of `localStorage` lags behind. */
export const LEDGER_HISTORY = 16;

const DATABASE = 'baseplane.auth';
const STORE = 'changes';

/** The ledger in this origin's IndexedDB; null where there is none (Node, some private modes). */
export function indexedDbLedger(): SessionLedger | null {
  const factory = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!factory) return null;
  let opened: Promise<IDBDatabase | null> | undefined;
  const database = () =>
    (opened ??= new Promise<IDBDatabase | null>((resolve) => {
      try {
        const request = factory.open(DATABASE, 1);
        request.onupgradeneeded = () => request.result.createObjectStore(STORE);
        request.onsuccess = () => resolve(request.result);
        // Refused (a private mode, a blocked upgrade): the keeper goes on with localStorage alone.
        request.onerror = () => resolve(null);
        request.onblocked = () => resolve(null);
      } catch {
        resolve(null);
      }
    }));
  const transact = async <T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest | undefined): Promise<T | null> => {
    const db = await database();
    if (!db) return null;
    return new Promise<T | null>((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const request = work(transaction.objectStore(STORE));
      // Resolve on commit, not on the request's success: only a committed change is what the next tab reads.
      transaction.oncomplete = () => resolve((request?.result as T | undefined) ?? null);
      transaction.onerror = () => reject(transaction.error ?? new Error('the session ledger refused a change'));
      transaction.onabort = () => reject(transaction.error ?? new Error('the session ledger change was aborted'));
    });
  };
  return {
    read: async (key) => {
      const entry = await transact<{ replaced: LedgerEntry['replaced'] | string | null; stored: string | null }>('readonly', (store) => store.get(key));
      // An entry of the first ledger kept only the last value replaced.
      return entry && { stored: entry.stored, replaced: Array.isArray(entry.replaced) ? entry.replaced : [entry.replaced] };
    },
    write: async (key, entry) => {
      await transact('readwrite', (store) => store.put(entry, key));
    },
  };
}
