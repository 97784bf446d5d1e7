/**
 * Platform (operator) tokens: a short-lived JWT (HS256, jose) and an opaque
 * refresh token stored hashed and rotated on use.
 */
import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Pool } from 'pg';
import { ApiError } from '@baseplane/contracts';
import type { PlatformSecrets } from './secrets';

export const PLATFORM_TOKEN_TTL_SECONDS = 3600;
const REFRESH_TTL_SECONDS = 30 * 24 * 3600;
const ISSUER = 'baseplane-platform';

export interface PlatformTokens {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export class PlatformTokenService {
  constructor(private readonly db: Pool, private readonly secrets: PlatformSecrets) {}

  async issue(accountId: string, email: string): Promise<PlatformTokens> {
    const accessToken = await new SignJWT({ email, typ: 'platform' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(accountId)
      .setIssuer(ISSUER)
      .setAudience(ISSUER)
      .setIssuedAt()
      .setExpirationTime(`${PLATFORM_TOKEN_TTL_SECONDS}s`)
      .sign(this.secrets.jwtKey);
    const refreshToken = randomBytes(32).toString('base64url');
    await this.db.query(
      `insert into platform_refresh_tokens (token_hash, account_id, expires_at) values ($1, $2, now() + make_interval(secs => $3))`,
      [hashToken(refreshToken), accountId, REFRESH_TTL_SECONDS],
    );
    return { accessToken, refreshToken, expiresIn: PLATFORM_TOKEN_TTL_SECONDS };
  }

  /** Verifies a platform JWT and returns the account id. */
  async verify(token: string): Promise<{ accountId: string; email: string }> {
    try {
      const { payload } = await jwtVerify(token, this.secrets.jwtKey, { issuer: ISSUER, audience: ISSUER, algorithms: ['HS256'] });
      if (payload.typ !== 'platform' || typeof payload.sub !== 'string') throw new ApiError(401, 'invalid_token', 'not a platform token');
      return { accountId: payload.sub, email: String(payload.email ?? '') };
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new ApiError(401, 'token_expired', 'platform token expired');
      throw new ApiError(401, 'invalid_token', 'invalid platform token');
    }
  }

  /** Exchanges a refresh token for new tokens; the old one is spent. */
  async refresh(refreshToken: string): Promise<PlatformTokens> {
    const { rows } = await this.db.query<{ account_id: string; email: string }>(
      `update platform_refresh_tokens t set revoked_at = now()
       from accounts a
       where t.token_hash = $1 and t.revoked_at is null and t.expires_at > now() and a.id = t.account_id
       returning t.account_id, a.email`,
      [hashToken(refreshToken)],
    );
    const row = rows[0];
    if (!row) throw new ApiError(401, 'refresh_token_invalid', 'refresh token is invalid, expired or already used');
    return this.issue(row.account_id, row.email);
  }
}
