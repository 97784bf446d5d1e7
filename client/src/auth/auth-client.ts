/**
 * `client.auth`: the end-user endpoints of `/rest/v1/auth` (API.md →
 * End-user auth) over the session keeper, which stores the session, keeps it
 * fresh and tells the listeners. Every method resolves to `{ data, error }`.
 */
import { clientError, failed, ok, request, type Fetch, type Result } from '../result.js';
import type { Message, Provider, Session, SessionAnswer, User } from '../types.js';
import { AuthListeners, type AuthListener, type Subscription } from './auth-events.js';
import { providerSignInUrl, readProviderCallback } from './provider-login.js';
import { sessionAnswerProblem, sessionIdOf } from './session.js';
import type { SessionKeeper } from './session-keeper.js';

export interface SignUpCredentials {
  email: string;
  password: string;
  firstName?: string;
  lastName?: string;
  username?: string;
}

export interface Credentials {
  email: string;
  password: string;
}

/** A code from an email, with the address it went to when known. */
export interface CodeInput {
  otp: string;
  email?: string;
}

export interface UserChanges {
  firstName?: string;
  lastName?: string;
  username?: string;
  password?: string;
}

/**
 * How far a sign-out reaches. `local` (the default, specification §5 rule 5)
 * forgets the session on this device only; `session` also revokes it on the
 * server; `global` revokes every session of the user.
 */
export type SignOutScope = 'local' | 'session' | 'global';

export interface AuthClientOptions {
  authUrl: string;
  anonKey: string;
  headers: Record<string, string>;
  fetch: Fetch;
  keeper: SessionKeeper;
}

export type SessionData = { session: Session; user: User };

/** Sign-up, sign-in and magic-link verify answer a whole session, its user included. */
const signedInAnswer = (data: unknown) => sessionAnswerProblem(data, true);

export class AuthClient {
  private readonly keeper: SessionKeeper;

  constructor(private readonly options: AuthClientOptions) {
    this.keeper = options.keeper;
  }

  /** Creates the account and signs in (SIGNED_IN). 409 `user_already_exists` for a taken email. */
  async signUp(credentials: SignUpCredentials): Promise<Result<SessionData>> {
    return this.signedIn(await this.call<SessionAnswer>('POST', '/signup', credentials, false, signedInAnswer));
  }

  /** Signs in with email and password (SIGNED_IN). 400 `invalid_credentials` otherwise. */
  async signIn(credentials: Credentials): Promise<Result<SessionData>> {
    return this.signedIn(await this.call<SessionAnswer>('POST', '/signin', credentials, false, signedInAnswer));
  }

  /**
   * Forgets the session here and emits SIGNED_OUT; with `scope` `session` or
   * `global` it is also revoked on the server first. The local session is
   * gone even when the server could not be reached; `error` then says so.
   */
  async signOut(options: { scope?: SignOutScope } = {}): Promise<Result<null>> {
    await this.keeper.ready;
    const scope = options.scope ?? 'local';
    let revoked: Result<null> = ok(null);
    if (scope !== 'local' && this.keeper.current) {
      revoked = await this.call<null>('POST', '/logout', { scope: scope === 'global' ? 'global' : 'local' }, true);
    }
    await this.keeper.clear();
    return revoked.error ? revoked : ok(null);
  }

  /** The stored session (refreshed first when it is about to expire), or null; the refresh's error when it failed and the token has expired. */
  async getSession(): Promise<Result<{ session: Session | null }>> {
    const fresh = await this.keeper.fresh();
    return fresh.error ? fresh : ok({ session: fresh.data });
  }

  /** The signed-in user as the server knows them now (`GET /me`). */
  async getUser(): Promise<Result<{ user: User }>> {
    const answer = await this.call<User>('GET', '/me', undefined, true);
    return answer.error ? answer : ok({ user: answer.data });
  }

  /** A new access token now (TOKEN_REFRESHED); a revoked session signs out (SIGNED_OUT). */
  async refreshSession(): Promise<Result<{ session: Session }>> {
    await this.keeper.ready;
    const refreshed = await this.keeper.refresh();
    return refreshed.error ? refreshed : ok({ session: refreshed.data });
  }

  /** Refreshes the token on a timer before it expires again (the default). */
  startAutoRefresh(): void {
    this.keeper.setAutoRefresh(true);
  }

  /** No more timed refreshes; a request still refreshes a token about to expire first. */
  stopAutoRefresh(): void {
    this.keeper.setAutoRefresh(false);
  }

  /** Confirms the address with the emailed code (EMAIL_VERIFIED). */
  async verifyEmail(input: CodeInput): Promise<Result<{ user: User }>> {
    return this.userChanged(await this.call<{ user: User }>('POST', '/verify-email', input, true), 'EMAIL_VERIFIED');
  }

  /** Sends the sign-up (or email-change) code again. */
  resend(input: { email: string; type: 'signup' | 'email_change' }): Promise<Result<Message>> {
    return this.call('POST', '/resend', input);
  }

  /** Emails a password-reset code; the answer is the same whether or not the address has an account. */
  forgotPassword(input: { email: string }): Promise<Result<Message>> {
    return this.call('POST', '/forgot-password', input);
  }

  /**
   * Sets a new password with the emailed code (PASSWORD_RECOVERY). The server
   * ends every session of the user: when the session kept here was one of
   * them (a signed-in user reset their own password), it is forgotten first
   * (SIGNED_OUT), and PASSWORD_RECOVERY comes with no session.
   */
  async resetPassword(input: { otp: string; newPassword: string; email?: string }): Promise<Result<Message>> {
    const answer = await this.call<Message>('POST', '/reset-password', input);
    if (answer.error) return answer;
    await this.forgetIfEnded();
    this.keeper.listeners.emit('PASSWORD_RECOVERY', this.keeper.current);
    return answer;
  }

  /** Emails a one-time sign-in code. */
  sendMagicLink(input: { email: string }): Promise<Result<Message>> {
    return this.call('POST', '/magic-link', input);
  }

  /** Exchanges the emailed sign-in code (or an invitation's) for a session (SIGNED_IN). */
  async verifyMagicLink(input: CodeInput): Promise<Result<SessionData>> {
    return this.signedIn(await this.call<SessionAnswer>('POST', '/magic-link/verify', input, false, signedInAnswer));
  }

  /** Changes the user's profile or password (USER_UPDATED). */
  async updateUser(changes: UserChanges): Promise<Result<{ user: User }>> {
    const answer = await this.call<User>('PATCH', '/me', changes, true);
    return this.userChanged(answer.error ? answer : ok({ user: answer.data }), 'USER_UPDATED');
  }

  /** Sends a code to the new address; the email changes when {@link verifyEmailChange} gets it back. */
  changeEmail(input: { newEmail: string }): Promise<Result<Message>> {
    return this.call('POST', '/change-email', input, true);
  }

  /** Confirms the new address with its code (USER_UPDATED). */
  async verifyEmailChange(input: { otp: string }): Promise<Result<{ user: User }>> {
    return this.userChanged(await this.call<{ user: User }>('POST', '/change-email/verify', input, true), 'USER_UPDATED');
  }

  /** Emails a code that proves it is still the user (before a password change, when the project asks for it). */
  reauthenticate(): Promise<Result<Message>> {
    return this.call('POST', '/reauth', undefined, true);
  }

  /** Confirms the reauthentication code; a password change is allowed until `reauthenticatedUntil`. */
  verifyReauthentication(input: { otp: string }): Promise<Result<{ reauthenticatedUntil: string }>> {
    return this.call('POST', '/reauth/verify', input, true);
  }

  /** Invites a user by email; needs a client made with the service key. */
  inviteUser(input: { email: string; redirectTo?: string }): Promise<Result<{ user: User }>> {
    return this.call('POST', '/invite', input);
  }

  /**
   * Starts social login: asks the server for the provider's URL and, in a
   * browser, goes there. `redirectTo` is a path inside the application (or
   * a full URL) where {@link handleProviderCallback} runs on the way back.
   */
  async signInWithProvider(provider: Provider, options: { redirectTo: string; skipBrowserRedirect?: boolean }): Promise<Result<{ provider: Provider; url: string }>> {
    const target = providerSignInUrl(this.options.authUrl, provider, options.redirectTo);
    if (target.error) return target;
    const answer = await request<{ url: string }>(this.options.fetch, { method: 'GET', url: target.data, headers: this.headers() });
    if (answer.error) return answer;
    const location = (globalThis as { location?: Location }).location;
    if (location && !options.skipBrowserRedirect) location.assign(answer.data.url);
    return ok({ provider, url: answer.data.url });
  }

  /**
   * Back from the provider: reads the tokens (or the error) from the URL's
   * hash — this page's by default — stores the session (SIGNED_IN) and, in a
   * browser, takes the tokens out of the address bar.
   */
  async handleProviderCallback(url?: string): Promise<Result<SessionData>> {
    const location = (globalThis as { location?: Location }).location;
    const read = readProviderCallback(url ?? location?.href ?? '');
    if (read.error) return read;
    const user = await request<User>(this.options.fetch, { method: 'GET', url: `${this.options.authUrl}/me`, headers: { ...this.headers(), authorization: `Bearer ${read.data.accessToken}` } });
    if (user.error) return user;
    if (url === undefined && location) {
      (globalThis as { history?: History }).history?.replaceState(null, '', location.pathname + location.search);
    }
    return this.signedIn(ok({ ...read.data, user: user.data }));
  }

  /** Calls `listener` on every auth event, first with INITIAL_SESSION; returns how to stop. */
  onAuthStateChange(listener: AuthListener): Subscription {
    let active = true;
    const remove = this.keeper.listeners.add(listener);
    void this.keeper.ready.then(() => {
      if (active) AuthListeners.notify(listener, 'INITIAL_SESSION', this.keeper.current);
    });
    const unsubscribe = () => {
      active = false;
      remove();
    };
    return { data: { unsubscribe }, error: null, unsubscribe };
  }

  private headers(): Record<string, string> {
    return { ...this.options.headers, apikey: this.options.anonKey };
  }

  /** One call to `/rest/v1/auth<path>`, with the user's token when `asUser`. */
  private async call<T>(method: string, path: string, body?: unknown, asUser = false, expect?: (data: unknown) => string | null): Promise<Result<T>> {
    const headers = this.headers();
    if (asUser) {
      const token = await this.keeper.accessToken();
      if (token) headers.authorization = `Bearer ${token}`;
    } else {
      await this.keeper.ready;
    }
    return request<T>(this.options.fetch, { method, url: `${this.options.authUrl}${path}`, headers, body, expect });
  }

  /**
   * After a password reset: whether the session kept here was the user's is
   * not in the answer (a code may come without the email), so `GET /me`,
   * which checks the session, says whether it still lives.
   */
  private async forgetIfEnded(): Promise<void> {
    const session = this.keeper.current;
    const sessionId = session && sessionIdOf(session);
    if (!sessionId) return;
    // A token about to expire is refreshed first; a refresh of an ended session is refused and signs out by itself.
    const me = await this.call<User>('GET', '/me', undefined, true);
    if (me.error?.code === 'invalid_token') await this.keeper.ended(sessionId);
  }

  private async signedIn(answer: Result<SessionAnswer>): Promise<Result<SessionData>> {
    if (answer.error) return answer;
    const { user, ...tokens } = answer.data;
    if (!user) return failed({ ...clientError('invalid_response', 'the server answered a session without its user'), status: 200 });
    const session = await this.keeper.establish(tokens, user);
    return ok({ session, user });
  }

  private async userChanged(answer: Result<{ user: User }>, event: 'EMAIL_VERIFIED' | 'USER_UPDATED'): Promise<Result<{ user: User }>> {
    if (!answer.error) await this.keeper.updateUser(answer.data.user, event);
    return answer;
  }
}
