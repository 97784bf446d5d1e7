/**
 * Verified end-user tokens, remembered by their exact text until they
 * expire, so that a client sending the same token on every request pays for
 * one ES256 verification, not one per request. A hit is re-checked against
 * what could have changed since: the clock (`exp`), the project, and whether
 * the signing key is still one of the project's.
 */
import { ApiError, type AccessTokenClaims } from '@baseplane/contracts';
import type { AccessTokens } from '../auth/access-tokens';
import type { DirectoryEntry } from '../directory/project-directory';

const MAX_ENTRIES = 10_000;

interface Entry {
  projectId: string;
  kid: string;
  claims: AccessTokenClaims;
}

/** The key id of a compact JWS, read from its header without trusting it (the signature was checked on the way in). */
function kidOf(token: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}

export class VerifiedTokenCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly tokens: AccessTokens) {}

  /** The token's claims; 401 as {@link AccessTokens.verify} answers when it is not valid for `project`. */
  async verify(project: DirectoryEntry, token: string): Promise<AccessTokenClaims> {
    const hit = this.entries.get(token);
    if (hit && hit.projectId === project.projectId && hit.claims.exp * 1000 > Date.now() && project.signingKeys.some((k) => k.kid === hit.kid)) {
      return hit.claims;
    }
    if (hit) this.entries.delete(token);
    const claims = await this.tokens.verify(project, token);
    const kid = kidOf(token);
    if (kid === undefined) throw new ApiError(401, 'invalid_token', 'invalid access token');
    // Oldest first out: a Map iterates in insertion order.
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { projectId: project.projectId, kid, claims });
    return claims;
  }
}
