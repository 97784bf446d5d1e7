/**
 * Keeps the signed-in session: loads it from storage, saves every change,
 * refreshes it a margin before expiry (one refresh at a time, across tabs
 * too), follows other tabs' changes, and tells the listeners.
 *
 * A refresh token is spent on use and a second use revokes the session, so
 * every refresh runs under one lock per storage key (the Web Locks API where
 * there is one, an in-process queue elsewhere) and first re-reads storage: a
 * tab that lost the race takes the session the winner stored instead of
 * spending the old token again. Where storage can lag behind another tab's
 * write (`localStorage`), a ledger that cannot lag (IndexedDB) says whether
 * what was read has already been replaced.
 */
import { failed, ok, clientError, type ClientError, type Result } from '../result.js';
import type { Session, SessionAnswer, User } from '../types.js';
import { AuthListeners, type AuthEvent } from './auth-events.js';
import { parseStoredSession, refreshMarginOf, secondsLeft, sessionFrom, sessionIdOf } from './session.js';
import { LEDGER_HISTORY, type LedgerEntry, type SessionLedger } from './session-ledger.js';
import type { SessionStorage } from './session-storage.js';

export interface SessionKeeperOptions {
  storage: SessionStorage;
  storageKey: string;
  /**
   * Where the session was stored before this key (the anon key's key, for a
   * client now given its project id): read once when nothing is stored under
   * `storageKey`, and moved over, so the change of key signs nobody out.
   */
  previousStorageKey?: string;
  /** Follow `storage` events of other tabs (only meaningful for `localStorage`). */
  followOtherTabs: boolean;
  /** Where changes are also written for other tabs to read without lag; null when storage itself does not lag. */
  ledger: SessionLedger | null;
  autoRefresh: boolean;
  /** Seconds before expiry to refresh; default a minute, or a quarter of a short lifetime. */
  refreshMargin?: number;
  /** POST /auth/refresh. */
  callRefresh(refreshToken: string): Promise<Result<SessionAnswer>>;
}

/** After a refresh that got no answer (network, 5xx), the next try comes this much later. */
const RETRY_AFTER_FAILURE_MS = 5_000;

/** The refresh timer never fires sooner than this, whatever the margin asks. */
const MIN_TIMER_MS = 1_000;

/** Without Web Locks (Node), clients of one process sharing a storage key queue here, one at a time. */
const queues = new Map<string, Promise<unknown>>();

export class SessionKeeper {
  readonly listeners = new AuthListeners();
  /** Settles once the stored session is loaded (and refreshed when it was near expiry). */
  readonly ready: Promise<void>;
  private session: Session | null = null;
  private refreshing: Promise<Result<Session>> | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private autoRefresh: boolean;

  constructor(private readonly options: SessionKeeperOptions) {
    this.autoRefresh = options.autoRefresh;
    let first: ReturnType<SessionStorage['getItem']>;
    try {
      first = options.storage.getItem(options.storageKey);
    } catch (error) {
      first = Promise.reject(error);
    }
    // A storage that answers at once (localStorage, memory) shows its session before `ready`: getPublicUrl,
    // which makes no request and cannot wait, reads the project from it. `load` still settles what it is.
    if (typeof first === 'string' || first === null) this.session = parseStoredSession(first);
    this.ready = this.load(first);
    if (options.followOtherTabs) this.followOtherTabs();
  }

  get current(): Session | null {
    return this.session;
  }

  /** The access token to send now, refreshed first when it is about to expire; null when signed out. */
  async accessToken(): Promise<string | null> {
    await this.fresh();
    return this.session?.accessToken ?? null;
  }

  /**
   * The session, refreshed first when it is about to expire. A refresh that
   * failed and left a token already past its expiry is an error, not a session.
   */
  async fresh(): Promise<Result<Session | null>> {
    await this.ready;
    if (!this.session || !this.nearExpiry(this.session)) return ok(this.session);
    const refreshed = await this.refresh();
    if (refreshed.error && this.session && secondsLeft(this.session) <= 0) return failed(refreshed.error);
    return ok(this.session);
  }

  /** A new session from a sign-in kind of answer: stored, then announced. */
  async establish(answer: SessionAnswer, user: User, event: AuthEvent = 'SIGNED_IN'): Promise<Session> {
    const session = sessionFrom(answer, user);
    await this.exclusively(() => this.save(session));
    this.listeners.emit(event, session);
    return session;
  }

  /**
   * The signed-in user changed (profile, verification, email): stored, then
   * announced. Only `user` changes, on the session as stored now: a refresh
   * that ended while the change was on its way (here or in another client of
   * this storage) rotated the tokens, and putting back the ones it spent
   * would make the next refresh a reuse, which revokes the session.
   */
  async updateUser(user: User, event: AuthEvent): Promise<void> {
    await this.exclusively(async () => {
      const stored = parseStoredSession(await this.readStored());
      // Someone else's session (or none) now: the change is not for what is stored.
      if (stored && stored.user.id === user.id) await this.save({ ...stored, user });
    });
    this.listeners.emit(event, this.session);
  }

  /**
   * Forgets the session here (storage included) and announces SIGNED_OUT,
   * whether or not there was one, as supabase-js's signOut does: a listener
   * that routes to the sign-in page hears every sign-out it asked for.
   */
  async clear(): Promise<void> {
    await this.exclusively(() => this.forget());
    this.listeners.emit('SIGNED_OUT', null);
  }

  /**
   * The server ended the session `sessionId` names (a password reset ends
   * every session of its user): forgotten here and in storage, then
   * SIGNED_OUT. A session signed in since (another id) is left alone.
   */
  async ended(sessionId: string): Promise<void> {
    const dropped = await this.exclusively(async () => {
      const stored = parseStoredSession(await this.readStored());
      if (stored && sessionIdOf(stored) === sessionId) await this.store(null);
      if (!this.session || sessionIdOf(this.session) !== sessionId) return false;
      this.session = null;
      this.schedule();
      return true;
    });
    if (dropped) this.listeners.emit('SIGNED_OUT', null);
  }

  /** Starts or stops refreshing on a timer (a page in the background, a process about to end). */
  setAutoRefresh(on: boolean): void {
    this.autoRefresh = on;
    this.schedule();
  }

  /** Refreshes now; concurrent calls share one refresh. A refusal (revoked, reused, expired) signs out. */
  refresh(): Promise<Result<Session>> {
    // What to compare storage with is the session as it was when asked: another tab's
    // new session may reach this one (storage event) before the lock does.
    const asked = this.session;
    this.refreshing ??= this.exclusively(() => this.refreshUnderLock(asked)).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async refreshUnderLock(asked: Session | null): Promise<Result<Session>> {
    const stored = parseStoredSession(await this.readStored());
    if (!stored) {
      // Another tab signed out (or nothing was ever stored).
      if (this.session) this.dropAndAnnounce();
      return failed(clientError('no_session', 'there is no session to refresh', 'sign in first'));
    }
    if (stored.refreshToken !== asked?.refreshToken && !this.nearExpiry(stored)) {
      // Another tab refreshed (or signed in) since we asked: its session is ours now.
      if (stored.refreshToken !== this.session?.refreshToken) this.adopt(stored, this.arrivalOf(stored));
      return ok(stored);
    }
    const event = this.arrivalOf(stored);
    const answer = await this.options.callRefresh(stored.refreshToken);
    if (answer.error) return this.refreshFailed(answer.error);
    const session = sessionFrom(answer.data, stored.user);
    await this.save(session);
    this.listeners.emit(event, session);
    return ok(session);
  }

  /** How a session found in storage arrives here: new tokens of the user signed in here, or a sign-in (nobody here, or someone else). */
  private arrivalOf(session: Session): AuthEvent {
    return this.session?.user.id === session.user.id ? 'TOKEN_REFRESHED' : 'SIGNED_IN';
  }

  /** The server refused the refresh token: the session is over. Anything else: keep it and try again soon. */
  private async refreshFailed(error: ClientError): Promise<Result<Session>> {
    if (error.status >= 400 && error.status < 500 && error.status !== 429) {
      await this.forget();
      this.listeners.emit('SIGNED_OUT', null);
    } else {
      this.schedule(RETRY_AFTER_FAILURE_MS);
    }
    return failed(error);
  }

  /** `first` is storage's answer the constructor already asked for. */
  private async load(first: ReturnType<SessionStorage['getItem']>): Promise<void> {
    let stored: Session | null = null;
    try {
      stored = parseStoredSession(await this.readStored(first));
      const previousKey = this.options.previousStorageKey;
      if (!stored && previousKey !== undefined) stored = await this.exclusively(() => this.moveFrom(previousKey));
    } catch (error) {
      console.error('baseplane: could not read the stored session', error);
    }
    this.session = stored;
    if (!stored || !this.nearExpiry(stored) || !this.autoRefresh) return this.schedule();
    // A storage that refuses the refreshed session must not leave every method waiting on a rejected start.
    await this.refresh().catch((error: unknown) => console.error('baseplane: could not store the refreshed session', error));
  }

  /**
   * Under the lock: the session stored under `previousKey`, now stored under
   * this key and removed from there, so a sign-out here is not undone by the
   * next load moving it again. A tab that moved it first leaves it to us. A
   * tab of an older client still open keeps using the previous key and lock,
   * and spends the refresh token this copy holds, until it is reloaded.
   */
  private async moveFrom(previousKey: string): Promise<Session | null> {
    const current = parseStoredSession(await this.readStored());
    if (current) return current;
    const { value } = await this.readCurrent(undefined, previousKey);
    const previous = parseStoredSession(value);
    if (!previous) return null;
    await this.store(value);
    await this.options.storage.removeItem(previousKey);
    return previous;
  }

  /** The stored session as every tab would read it now (the ledger's value when storage still shows one it replaced). */
  private async readStored(answer?: ReturnType<SessionStorage['getItem']>): Promise<string | null> {
    return (await this.readCurrent(answer)).value;
  }

  /** `answer`: storage's answer when already asked for, else it is asked now. */
  private async readCurrent(answer?: ReturnType<SessionStorage['getItem']>, key = this.options.storageKey): Promise<{ value: string | null; entry: LedgerEntry | null }> {
    const value = await (answer === undefined ? this.options.storage.getItem(key) : answer);
    const entry = await this.readLedger(key);
    const replaced = entry !== null && entry.stored !== value && entry.replaced.includes(value);
    return { value: replaced ? entry.stored : value, entry };
  }

  private async readLedger(key: string): Promise<LedgerEntry | null> {
    try {
      return (await this.options.ledger?.read(key)) ?? null;
    } catch (error) {
      console.error('baseplane: could not read the session ledger', error);
      return null;
    }
  }

  /** Under the lock: records the change in the ledger first, so a tab that takes the lock next cannot miss it. */
  private async store(value: string | null): Promise<void> {
    const { ledger, storage, storageKey } = this.options;
    if (ledger) {
      try {
        const { value: current, entry } = await this.readCurrent();
        await ledger.write(storageKey, { replaced: [current, ...(entry?.replaced ?? [])].slice(0, LEDGER_HISTORY), stored: value });
      } catch (error) {
        // Without the ledger a lagging tab may refresh once more; the session itself is still kept.
        console.error('baseplane: could not write the session ledger', error);
      }
    }
    if (value === null) await storage.removeItem(storageKey);
    else await storage.setItem(storageKey, value);
  }

  private async save(session: Session): Promise<void> {
    await this.store(JSON.stringify(session));
    this.session = session;
    this.schedule();
  }

  private async forget(): Promise<void> {
    this.session = null;
    this.schedule();
    await this.store(null);
  }

  private adopt(session: Session, event: AuthEvent): void {
    this.session = session;
    this.schedule();
    this.listeners.emit(event, session);
  }

  private dropAndAnnounce(): void {
    this.session = null;
    this.schedule();
    this.listeners.emit('SIGNED_OUT', null);
  }

  private nearExpiry(session: Session): boolean {
    return secondsLeft(session) <= refreshMarginOf(session, this.options.refreshMargin);
  }

  /** Arms the refresh timer for the current session; it never keeps a Node process alive. */
  private schedule(delayMs?: number): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const session = this.session;
    if (!session || !this.autoRefresh) return;
    const due = (secondsLeft(session) - refreshMarginOf(session, this.options.refreshMargin)) * 1000;
    // A margin as long as the token's life would make each new token due at once: a refresh loop.
    this.timer = setTimeout(() => void this.refresh(), Math.max(MIN_TIMER_MS, Math.min(delayMs ?? due, 2 ** 31 - 1)));
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Runs `work` alone among every client sharing this storage key: across tabs through Web Locks, else within this process. */
  private exclusively<T>(work: () => Promise<T>): Promise<T> {
    const name = `${this.options.storageKey}.lock`;
    const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
    // The lock's promise settles as `work`'s does (DOM's typing leaves it nested).
    if (locks) return locks.request(name, work) as unknown as Promise<T>;
    const run = (queues.get(name) ?? Promise.resolve()).then(work, work);
    const tail = run.catch(() => undefined);
    queues.set(name, tail);
    void tail.then(() => {
      if (queues.get(name) === tail) queues.delete(name);
    });
    return run;
  }

  /** Another tab stored, replaced or removed the session: follow it here. */
  private followOtherTabs(): void {
    const target = globalThis as { addEventListener?: Window['addEventListener']; document?: Document };
    target.addEventListener?.('storage', (event: StorageEvent) => {
      if (event.key !== this.options.storageKey) return;
      const session = parseStoredSession(event.newValue);
      if (!session) {
        if (this.session) this.dropAndAnnounce();
      } else if (session.refreshToken !== this.session?.refreshToken) {
        this.adopt(session, this.arrivalOf(session));
      }
    });
    // Timers sleep in background tabs: catch up when the tab shows again.
    target.document?.addEventListener('visibilitychange', () => {
      if (target.document?.visibilityState === 'visible' && this.session && this.nearExpiry(this.session)) void this.refresh();
    });
  }
}
