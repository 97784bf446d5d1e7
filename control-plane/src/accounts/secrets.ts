/**
 * Secrets derived from PLATFORM_SECRET on the control plane's side: the
 * platform JWT key, sealing of stored secrets, and minting of new keys.
 */
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import { KEY_PREFIX, SecretBox, platformTokenKey, hashApiKey, type KeyKind, type SigningKey, type StoredKey } from '@baseplane/contracts';

export class PlatformSecrets {
  readonly jwtKey: Uint8Array;
  private readonly box: SecretBox;

  constructor(platformSecret: string) {
    this.jwtKey = platformTokenKey(platformSecret);
    this.box = new SecretBox(platformSecret);
  }

  encrypt(plain: string): string {
    return this.box.seal(plain);
  }

  decrypt(sealed: string): string {
    return this.box.open(sealed);
  }

  /** A new ES256 key pair for a project's end-user tokens: the public JWK, and the private one sealed. */
  async mintSigningKey(): Promise<SigningKey> {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const kid = randomBytes(12).toString('base64url');
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
    return { kid, publicJwk, privateJwkCipher: this.box.seal(JSON.stringify({ ...(await exportJWK(privateKey)), kid, alg: 'ES256' })) };
  }

  /** Mints a new random API key: the plain key (to show once) and what the event store keeps. */
  mintApiKey(kind: KeyKind): { plain: string; stored: StoredKey } {
    const plain = KEY_PREFIX[kind] + randomBytes(32).toString('base64url');
    return { plain, stored: { hash: hashApiKey(plain), cipher: this.encrypt(plain) } };
  }
}
