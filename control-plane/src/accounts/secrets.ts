/**
 * Secrets derived from PLATFORM_SECRET: the platform JWT key and the key that
 * encrypts stored secrets (API keys shown to operators, later provider
 * secrets), AES-256-GCM.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { KEY_PREFIX, hashApiKey, type KeyKind, type StoredKey } from '@baseplane/contracts';

export class PlatformSecrets {
  readonly jwtKey: Uint8Array;
  private readonly encryptionKey: Buffer;

  constructor(platformSecret: string) {
    this.jwtKey = new Uint8Array(hkdfSync('sha256', platformSecret, 'baseplane', 'platform-jwt', 32));
    this.encryptionKey = Buffer.from(hkdfSync('sha256', platformSecret, 'baseplane', 'stored-secrets', 32));
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  decrypt(sealed: string): string {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== 'v1' || !iv || !body || !tag) throw new Error('unknown sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Mints a new random API key: the plain key (to show once) and what the event store keeps. */
  mintApiKey(kind: KeyKind): { plain: string; stored: StoredKey } {
    const plain = KEY_PREFIX[kind] + randomBytes(32).toString('base64url');
    return { plain, stored: { hash: hashApiKey(plain), cipher: this.encrypt(plain) } };
  }
}
