/**
 * Sessions as the client keeps them: made from the server's answer with an
 * absolute expiry, stored as JSON, and the claims of their access token read
 * (never verified: the server does that) for the project id and expiry.
 */
import type { Session, SessionAnswer, User } from '../types.js';

/** The claims the client reads from an access token (API.md → End-user auth). */
export interface AccessClaims {
  sub: string;
  exp: number;
  iat: number;
  email?: string;
  session_id?: string;
  /** The project id. */
  ref?: string;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A session from an answer of sign-up, sign-in, refresh or the provider callback; `user` carries over when the answer has none. */
export function sessionFrom(answer: SessionAnswer, user: User): Session {
  // The token's own `exp` is the truth; `expiresIn` counts from when the server answered.
  const exp = claimsOf(answer.accessToken)?.exp;
  return {
    accessToken: answer.accessToken,
    refreshToken: answer.refreshToken,
    expiresIn: answer.expiresIn,
    expiresAt: typeof exp === 'number' ? exp : nowSeconds() + answer.expiresIn,
    tokenType: 'bearer',
    user,
  };
}

/**
 * What is wrong with an answer that should be a session (null when nothing):
 * tokens and a positive `expiresIn`, and the user when the endpoint sends one.
 */
export function sessionAnswerProblem(data: unknown, withUser: boolean): string | null {
  const answer = (typeof data === 'object' && data !== null ? data : {}) as Partial<Record<keyof SessionAnswer, unknown>>;
  const tokens = typeof answer.accessToken === 'string' && answer.accessToken !== '' && typeof answer.refreshToken === 'string' && answer.refreshToken !== '';
  const lifetime = typeof answer.expiresIn === 'number' && Number.isFinite(answer.expiresIn) && answer.expiresIn > 0;
  if (!tokens || !lifetime) return 'no session (tokens and expiresIn)';
  if (withUser && (typeof answer.user !== 'object' || answer.user === null)) return 'a session without its user';
  return null;
}

/** Seconds until the access token expires (negative once it has). */
export const secondsLeft = (session: Session) => session.expiresAt - Date.now() / 1000;

/** How long before expiry a token is refreshed: a minute, or a quarter of a short lifetime. */
export function refreshMarginOf(session: Session, configured?: number): number {
  return configured ?? Math.min(60, session.expiresIn / 4);
}

export function parseStoredSession(text: string | null): Session | null {
  if (!text) return null;
  try {
    const value = JSON.parse(text) as Partial<Session>;
    const complete = typeof value.accessToken === 'string' && typeof value.refreshToken === 'string' && typeof value.expiresAt === 'number' && typeof value.user === 'object' && value.user !== null;
    return complete ? (value as Session) : null;
  } catch {
    return null;
  }
}

/** The server's id of a session (its access token's `session_id`), which stays the same across refreshes. */
export const sessionIdOf = (session: Session): string | null => claimsOf(session.accessToken)?.session_id ?? null;

/** The payload of a JWT, or null when it is not one. */
export function claimsOf(token: string): AccessClaims | null {
  const payload = token.split('.')[1];
  if (!payload) return null;
  try {
    const base64 = payload.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(payload.length / 4) * 4, '=');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as AccessClaims;
  } catch {
    return null;
  }
}
