/**
 * Auth state changes and who listens to them (specification §6): listeners
 * get `(event, session)` in the order they registered, and one that throws
 * does not stop the others or the client.
 */
import type { Session } from '../types.js';

export type AuthEvent =
  | 'INITIAL_SESSION'
  | 'SIGNED_IN'
  | 'SIGNED_OUT'
  | 'TOKEN_REFRESHED'
  | 'EMAIL_VERIFIED'
  | 'USER_UPDATED'
  | 'PASSWORD_RECOVERY';

export type AuthListener = (event: AuthEvent, session: Session | null) => void;

/** What `onAuthStateChange` answers: `unsubscribe` at the top and, Supabase-style, under `data`. */
export interface Subscription {
  data: { unsubscribe: () => void };
  error: null;
  unsubscribe: () => void;
}

export class AuthListeners {
  private readonly listeners = new Set<AuthListener>();

  add(listener: AuthListener): () => void {
    // A wrapper per registration, so the same function registered twice is two subscriptions.
    const entry: AuthListener = (event, session) => listener(event, session);
    this.listeners.add(entry);
    return () => void this.listeners.delete(entry);
  }

  /** Calls one listener only (INITIAL_SESSION goes to the new listener alone). */
  static notify(listener: AuthListener, event: AuthEvent, session: Session | null): void {
    try {
      listener(event, session);
    } catch (error) {
      // A listener's bug must not break sign-in or refresh; it is still reported.
      console.error('baseplane: an onAuthStateChange listener threw', error);
    }
  }

  emit(event: AuthEvent, session: Session | null): void {
    for (const listener of [...this.listeners]) AuthListeners.notify(listener, event, session);
  }
}
