/**
 * Platform (operator) access tokens: HS256 JWTs keyed by a secret derived
 * from PLATFORM_SECRET. The control plane issues them; both planes verify
 * them (the data plane for the storage object endpoints, which operators call
 * too), so the key, the claims and the check live here, once.
 */
import { hkdfSync } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { setBounded } from './bounded-map';
import { ApiError } from './errors';

export const PLATFORM_TOKEN_ISSUER = 'baseplane-platform';

/** The HS256 key of platform tokens. */
export function platformTokenKey(platformSecret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', platformSecret, 'baseplane', 'platform-jwt', 32));
}

/** Who a verified platform token speaks for. */
export interface PlatformIdentity {
  accountId: string;
  email: string;
}

/** A platform token for `identity`, living `ttlSeconds`. */
export function signPlatformToken(key: Uint8Array, identity: PlatformIdentity, ttlSeconds: number): Promise<string> {
  return new SignJWT({ email: identity.email, typ: 'platform' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(identity.accountId)
    .setIssuer(PLATFORM_TOKEN_ISSUER)
    .setAudience(PLATFORM_TOKEN_ISSUER)
    .setIssuedAt()
    .setExpirationTime(`${ttlSeconds}s`)
    .sign(key);
}

/** Tokens already verified, per key, with what they say: an operator's client sends the same one with every call. */
const verifiedByKey = new WeakMap<Uint8Array, Map<string, { identity: PlatformIdentity; expiresAt: number }>>();
/** Verified tokens kept per key; past it the oldest goes first. */
const MAX_VERIFIED_TOKENS = 1000;

/**
 * Verifies a platform token; 401 `token_expired` or `invalid_token`
 * otherwise. A token verified once is known until it expires (they cannot be
 * revoked before), so a client's next calls skip jose's WebCrypto round trip.
 */
export async function verifyPlatformToken(key: Uint8Array, token: string): Promise<PlatformIdentity> {
  let verified = verifiedByKey.get(key);
  const known = verified?.get(token);
  if (known && known.expiresAt > Date.now() / 1000) return known.identity;
  try {
    const { payload } = await jwtVerify(token, key, { issuer: PLATFORM_TOKEN_ISSUER, audience: PLATFORM_TOKEN_ISSUER, algorithms: ['HS256'] });
    if (payload.typ !== 'platform' || typeof payload.sub !== 'string') throw new ApiError(401, 'invalid_token', 'not a platform token');
    const identity = { accountId: payload.sub, email: String(payload.email ?? '') };
    if (typeof payload.exp === 'number') {
      if (!verified) verifiedByKey.set(key, (verified = new Map()));
      setBounded(verified, token, { identity, expiresAt: payload.exp }, MAX_VERIFIED_TOKENS);
    }
    return identity;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (error instanceof joseErrors.JWTExpired) throw new ApiError(401, 'token_expired', 'platform token expired');
    throw new ApiError(401, 'invalid_token', 'invalid platform token');
  }
}
