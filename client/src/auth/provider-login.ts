/**
 * Social login's two URL steps (specification §4.2 rule 4): where to ask
 * for the provider's address, given a redirect path inside the application,
 * and what the callback put in the hash of the address it sent the user back
 * to (`#accessToken=…&refreshToken=…&expiresIn=…&tokenType=bearer`, or
 * `#error=…&error_description=…`).
 */
import { clientError, failed, ok, type Result } from '../result.js';
import type { Provider, SessionAnswer } from '../types.js';

/** `GET {authUrl}/signin/:provider?redirect_to=<absolute URL>`; a path is taken relative to this page. */
export function providerSignInUrl(authUrl: string, provider: Provider, redirectTo: string): Result<string> {
  const page = (globalThis as { location?: Location }).location?.href;
  let target: URL;
  try {
    target = new URL(redirectTo, page);
  } catch {
    return failed(clientError('invalid_request', `redirectTo "${redirectTo}" is neither a URL nor a path of this page's site`, 'outside a browser, pass a full URL'));
  }
  return ok(`${authUrl}/signin/${encodeURIComponent(provider)}?redirect_to=${encodeURIComponent(target.href)}`);
}

/** The session (or the provider's refusal) carried in the hash of `url`. */
export function readProviderCallback(url: string): Result<SessionAnswer> {
  const hash = url.includes('#') ? url.slice(url.indexOf('#') + 1) : '';
  const params = new URLSearchParams(hash);
  const error = params.get('error');
  if (error) return failed(clientError(error, params.get('error_description') ?? error));
  const accessToken = params.get('accessToken');
  const refreshToken = params.get('refreshToken');
  const expiresIn = Number(params.get('expiresIn'));
  if (!accessToken || !refreshToken || !Number.isFinite(expiresIn) || expiresIn <= 0) {
    return failed(clientError('no_session', 'this address carries no session from a provider', 'call handleProviderCallback on the page signInWithProvider redirected back to'));
  }
  return ok({ accessToken, refreshToken, expiresIn, tokenType: 'bearer' });
}
