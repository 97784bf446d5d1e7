/**
 * Platform (operator) access tokens: HS256 JWTs keyed by a secret derived
 * from PLATFORM_SECRET. The control plane issues them; both planes verify
 * them (the data plane for the storage object endpoints, which operators call
 * too), so the key, the claims and the check live here, once.
 */
import { hkdfSync } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
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

/** Verifies a platform token; 401 `token_expired` or `invalid_token` otherwise. */
export async function verifyPlatformToken(key: Uint8Array, token: string): Promise<PlatformIdentity> {
  try {
    const { payload } = await jwtVerify(token, key, { issuer: PLATFORM_TOKEN_ISSUER, audience: PLATFORM_TOKEN_ISSUER, algorithms: ['HS256'] });
    if (payload.typ !== 'platform' || typeof payload.sub !== 'string') throw new ApiError(401, 'invalid_token', 'not a platform token');
    return { accountId: payload.sub, email: String(payload.email ?? '') };
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (error instanceof joseErrors.JWTExpired) throw new ApiError(401, 'token_expired', 'platform token expired');
    throw new ApiError(401, 'invalid_token', 'invalid platform token');
  }
}
