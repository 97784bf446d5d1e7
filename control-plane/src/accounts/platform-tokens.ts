/**
 * Platform (operator) tokens: a short-lived JWT (HS256, jose) and an opaque
 * refresh token stored hashed and rotated on use.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { ApiError, signPlatformToken, verifyPlatformToken, type PlatformIdentity } from '@baseplane/contracts';
import type { PlatformSecrets } from './secrets';

export const PLATFORM_TOKEN_TTL_SECONDS = 3600;
const REFRESH_TTL_SECONDS = 30 * 24 * 3600;

export interface PlatformTokens {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export class PlatformTokenService {
  constructor(private readonly db: Pool, private readonly secrets: PlatformSecrets) {}

  async issue(accountId: string, email: string): Promise<PlatformTokens> {
    const accessToken = await signPlatformToken(this.secrets.jwtKey, { accountId, email }, PLATFORM_TOKEN_TTL_SECONDS);
    const refreshToken = randomBytes(32).toString('base64url');
    await this.db.query(
      `insert into platform_refresh_tokens (token_hash, account_id, expires_at) values ($1, $2, now() + make_interval(secs => $3))`,
      [hashToken(refreshToken), accountId, REFRESH_TTL_SECONDS],
    );
    return { accessToken, refreshToken, expiresIn: PLATFORM_TOKEN_TTL_SECONDS };
  }

  /** Verifies a platform JWT and returns the account id. */
  verify(token: string): Promise<PlatformIdentity> {
    return verifyPlatformToken(this.secrets.jwtKey, token);
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
