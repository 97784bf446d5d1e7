/**
 * Refresh tokens: opaque to clients, made here. A token names its session
 * and its generation (how many rotations came before it) and carries an
 * HMAC of both under a key of the project (derived from PLATFORM_SECRET),
 * so a token this project never issued is refused without a query, and a
 * genuine older token of a session, presented again, is recognised as a
 * reuse. The database keeps only the session's current generation and the
 * SHA-256 of its current token.
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { deriveSecret, setBounded } from '@baseplane/contracts';
import type { PresentedRefreshToken } from '@baseplane/contracts/user-directory';

const ID_BYTES = 16;
const GENERATION_BYTES = 4;
const MAC_BYTES = 32;
const TOKEN_BYTES = ID_BYTES + GENERATION_BYTES + MAC_BYTES;

/** Projects whose MAC key is kept ready; past this, the oldest is derived again when next needed. */
const MAX_KEYS = 1_000;

export class RefreshTokens {
  private readonly keys = new Map<string, KeyObject>();

  constructor(private readonly platformSecret: string) {}

  /** The token of `sessionId` at `generation`. */
  mint(projectId: string, sessionId: string, generation: number): string {
    const body = Buffer.alloc(ID_BYTES + GENERATION_BYTES);
    body.write(sessionId.replace(/-/g, ''), 'hex');
    body.writeUInt32BE(generation, ID_BYTES);
    return Buffer.concat([body, this.mac(projectId, body)]).toString('base64url');
  }

  /** What a presented token names, with its hash; null for anything this project did not issue. */
  read(projectId: string, token: string): PresentedRefreshToken | null {
    const bytes = Buffer.from(token, 'base64url');
    if (bytes.length !== TOKEN_BYTES || bytes.toString('base64url') !== token) return null;
    const body = bytes.subarray(0, ID_BYTES + GENERATION_BYTES);
    if (!timingSafeEqual(bytes.subarray(ID_BYTES + GENERATION_BYTES), this.mac(projectId, body))) return null;
    const hex = body.toString('hex', 0, ID_BYTES);
    const sessionId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    return { sessionId, generation: body.readUInt32BE(ID_BYTES), hash: hashOf(token) };
  }

  private mac(projectId: string, body: Buffer): Buffer {
    return createHmac('sha256', this.key(projectId)).update(body).digest();
  }

  /** The project's MAC key, derived once (a refresh uses it twice). */
  private key(projectId: string): KeyObject {
    let key = this.keys.get(projectId);
    if (!key) {
      key = createSecretKey(Buffer.from(deriveSecret(this.platformSecret, `refresh-tokens:${projectId}`)));
      setBounded(this.keys, projectId, key, MAX_KEYS);
    }
    return key;
  }
}

/** What the session row keeps of its current token. */
export const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');
