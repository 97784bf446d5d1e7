/**
 * The page of the browser test (built by Vite): the client as an app would
 * make it — default storage (localStorage), default refresh — for the base
 * URL and anon key in the page's query, with every auth event it hears kept
 * in `window.app.events` for the test to read.
 */
import { createClient, type AuthEvent, type BaseplaneClient } from '../../src/index';

export interface HeardEvent {
  event: AuthEvent;
  userId: string | null;
  accessToken: string | null;
}

type RefreshAnswer = Awaited<ReturnType<BaseplaneClient['auth']['refreshSession']>>;

declare global {
  interface Window {
    app: {
      client: BaseplaneClient;
      events: HeardEvent[];
      /** Takes the lock every tab's client refreshes under (Web Locks) and keeps it until `releaseRefreshLock`. */
      holdRefreshLock(): Promise<void>;
      releaseRefreshLock(): void;
      /** How many requests wait for that lock. */
      waitingForRefreshLock(): Promise<number>;
      /** Starts `refreshSession` without waiting for it; `startedRefresh` is its answer. */
      startRefresh(): void;
      startedRefresh(): Promise<RefreshAnswer> | null;
    };
  }
}

const query = new URLSearchParams(location.search);
const client = createClient(query.get('baseUrl')!, query.get('anonKey')!);
const events: HeardEvent[] = [];
client.auth.onAuthStateChange((event, session) => {
  events.push({ event, userId: session?.user.id ?? null, accessToken: session?.accessToken ?? null });
});
/** The client's lock: its storage key (the one key it keeps in localStorage) and `.lock`. */
const refreshLock = () => `${Object.keys(localStorage).find((key) => key.startsWith('baseplane.auth.'))}.lock`;
let release: (() => void) | null = null;
let started: Promise<RefreshAnswer> | null = null;
window.app = {
  client,
  events,
  holdRefreshLock: () =>
    new Promise<void>((granted) => {
      void navigator.locks.request(refreshLock(), () => {
        granted();
        return new Promise<void>((resolve) => (release = resolve));
      });
    }),
  releaseRefreshLock: () => release?.(),
  waitingForRefreshLock: async () => ((await navigator.locks.query()).pending ?? []).filter((lock) => lock.name === refreshLock()).length,
  startRefresh: () => {
    started = client.auth.refreshSession();
  },
  startedRefresh: () => started,
};
document.getElementById('status')!.textContent = 'ready';
