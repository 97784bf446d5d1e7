/**
 * End-user access tokens: ES256 JWTs signed with the project's newest key
 * (from the directory, private half opened with PLATFORM_SECRET) and verified
 * against all its keys. Anything else — another project's token, alg:none, a
 * tampered or expired one — is 401 and never falls back to anon.
 *
 * Signing is node's own ECDSA (`crypto.sign`, P-256, IEEE P1363 encoding,
 * which is JWS's) on the compact form built here: jose signs through
 * WebCrypto, whose asynchronous job costs a refresh about 0.2 ms more of
 * the data plane's CPU (bench:auth). Verification stays with jose.
 *
 * A verified token is remembered by its exact text until it expires, so a
 * client sending the same token on every request pays for one ES256 check
 * (a few hundred µs), not one per request. A hit is re-checked against what
 * may have changed since: the clock, the project, and whether its signing key
 * is still one of the project's.
 */
import { createPrivateKey, sign as ecdsaSign, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, importJWK, jwtVerify, errors as joseErrors, type CryptoKey, type JWTPayload } from 'jose';
import { ApiError, SecretBox, UUID_PATTERN, setBounded, type AccessTokenClaims, type SigningKey } from '@baseplane/contracts';
import type { DirectoryEntry } from '../directory/project-directory';

/** How many verified tokens are remembered; the oldest goes first. */
const MAX_VERIFIED = 10_000;
/** Signing keys kept imported (public) and opened (private), each; past this, the oldest is made again when next needed. */
const MAX_KEYS = 1_000;

interface Verified {
  projectId: string;
  kid: string;
  claims: AccessTokenClaims;
}

export class AccessTokens {
  private readonly box: SecretBox;
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  private readonly privateKeys = new Map<string, KeyObject>();
  private readonly verified = new Map<string, Verified>();

  constructor(platformSecret: string, private readonly publicUrl: string) {
    this.box = new SecretBox(platformSecret);
  }

  issuer(): string {
    return `${this.publicUrl}/rest/v1/auth`;
  }

  /** A token for a session of `project`, living its `accessTokenTtl`. */
  async sign(project: DirectoryEntry, claims: Pick<AccessTokenClaims, 'sub' | 'email' | 'email_verified' | 'session_id'>): Promise<string> {
    const key = project.signingKeys[project.signingKeys.length - 1];
    if (!key) throw new ApiError(503, 'project_unavailable', 'the project has no signing key yet');
    const now = Math.floor(Date.now() / 1000);
    const payload = {
      role: 'authenticated',
      email: claims.email,
      email_verified: claims.email_verified,
      session_id: claims.session_id,
      ref: project.projectId,
      sub: claims.sub,
      aud: 'authenticated',
      iss: this.issuer(),
      iat: now,
      exp: now + project.authSettings.accessTokenTtl,
    };
    const input = `${base64url({ alg: 'ES256', kid: key.kid, typ: 'JWT' })}.${base64url(payload)}`;
    const signature = ecdsaSign('sha256', Buffer.from(input), { key: this.privateKey(key), dsaEncoding: 'ieee-p1363' });
    return `${input}.${signature.toString('base64url')}`;
  }

  /** Verifies a token of this project; 401 `token_expired` or `invalid_token` otherwise. */
  async verify(project: DirectoryEntry, token: string): Promise<AccessTokenClaims> {
    const hit = this.verified.get(token);
    if (hit && hit.projectId === project.projectId && hit.claims.exp * 1000 > Date.now() && project.signingKeys.some((k) => k.kid === hit.kid)) {
      return hit.claims;
    }
    if (hit) this.verified.delete(token);
    const claims = await this.verifySignature(project, token);
    // The header was checked with the signature on the way in; its kid says which key signed.
    const kid = decodeProtectedHeader(token).kid!;
    setBounded(this.verified, token, { projectId: project.projectId, kid, claims }, MAX_VERIFIED);
    return claims;
  }

  private async verifySignature(project: DirectoryEntry, token: string): Promise<AccessTokenClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          const key = project.signingKeys.find((k) => k.kid === header.kid);
          if (!key) throw new Error('unknown key');
          return this.publicKey(key);
        },
        { algorithms: ['ES256'], audience: 'authenticated', issuer: this.issuer() },
      ));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new ApiError(401, 'token_expired', 'access token expired');
      throw new ApiError(401, 'invalid_token', 'invalid access token');
    }
    if (payload.ref !== project.projectId) throw new ApiError(401, 'invalid_token', 'access token of another project');
    // Every token signed here names a user and a session by their UUIDs: claims of any other form are no session of
    // ours, and would reach the session lookup's uuid parameters as an error of PostgreSQL's.
    if (typeof payload.sub !== 'string' || !UUID_PATTERN.test(payload.sub) || typeof payload.session_id !== 'string' || !UUID_PATTERN.test(payload.session_id)) {
      throw new ApiError(401, 'invalid_token', 'invalid access token');
    }
    return payload as unknown as AccessTokenClaims;
  }

  private publicKey(key: SigningKey): Promise<CryptoKey> {
    let imported = this.imported.get(key.kid);
    if (!imported) {
      imported = importJWK(key.publicJwk, 'ES256') as Promise<CryptoKey>;
      setBounded(this.imported, key.kid, imported, MAX_KEYS);
    }
    return imported;
  }

  /** The private half, opened with PLATFORM_SECRET once per key. */
  private privateKey(key: SigningKey): KeyObject {
    let opened = this.privateKeys.get(key.kid);
    if (!opened) {
      opened = createPrivateKey({ key: JSON.parse(this.box.open(key.privateJwkCipher)), format: 'jwk' });
      setBounded(this.privateKeys, key.kid, opened, MAX_KEYS);
    }
    return opened;
  }
}

const base64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url');
