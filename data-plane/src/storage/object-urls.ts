/**
 * The URLs objects are read at without a key: a public bucket's
 * (`/storage/v1/object/public/:projectId/:bucket/<path>`) and a signed one
 * (`/storage/v1/object/sign/:projectId/:bucket/<path>?token=`), whose token is
 * an HS256 JWT (jose) over the project, bucket and path with an expiry. A
 * token for another object, a tampered one or one of another key is 403
 * `invalid_signature`; an expired one 400 `url_expired`.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { ApiError, deriveSecret } from '@baseplane/contracts';

const ISSUER = 'baseplane-storage';
const SIGNING_PURPOSE = 'storage-signed-url';

/** An object addressed from outside: which project, bucket and path. */
export interface ObjectAddress {
  projectId: string;
  bucket: string;
  path: string;
}

/** The path part of an object's URL: each segment percent-encoded, the `/` between them kept. */
export function encodeObjectPath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export class ObjectUrls {
  private readonly key: Uint8Array;

  constructor(platformSecret: string, private readonly publicUrl: string) {
    this.key = new TextEncoder().encode(deriveSecret(platformSecret, SIGNING_PURPOSE));
  }

  publicUrlOf(address: ObjectAddress): string {
    return `${this.publicUrl}/storage/v1/object/public/${address.projectId}/${address.bucket}/${encodeObjectPath(address.path)}`;
  }

  /** A URL reading the object until `expiresIn` seconds from now. */
  async sign(address: ObjectAddress, expiresIn: number): Promise<{ url: string; expiresAt: string }> {
    const expiresAt = Math.floor(Date.now() / 1000) + expiresIn;
    const token = await new SignJWT({ b: address.bucket, o: address.path })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(ISSUER)
      .setAudience(address.projectId)
      .setExpirationTime(expiresAt)
      .sign(this.key);
    const url = `${this.publicUrl}/storage/v1/object/sign/${address.projectId}/${address.bucket}/${encodeObjectPath(address.path)}?token=${token}`;
    return { url, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  /** Checks that `token` was signed here for exactly this object and has not expired. */
  async verify(address: ObjectAddress, token: string): Promise<void> {
    let claims: Record<string, unknown>;
    try {
      ({ payload: claims } = await jwtVerify(token, this.key, { issuer: ISSUER, audience: address.projectId, algorithms: ['HS256'] }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new ApiError(400, 'url_expired', 'this signed URL has expired', null, 'ask for a new signed URL');
      throw invalidSignature();
    }
    if (claims.b !== address.bucket || claims.o !== address.path) throw invalidSignature();
  }
}

const invalidSignature = () => new ApiError(403, 'invalid_signature', 'the signed URL is invalid for this object');
