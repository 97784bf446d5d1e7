/**
 * Each project has its own ES256 signing key, issued as an event with the
 * private half sealed; the data plane publishes the public half as JWKS.
 */
import { SignJWT, createLocalJWKSet, importJWK, jwtVerify } from 'jose';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { SecretBox } from '@baseplane/contracts';
import { call, createProject, scenarios, signUpOperator, type ProjectAnswer } from '../../deploy/test/http';

let first: ProjectAnswer;
let second: ProjectAnswer;

async function sealedPrivateKey(projectId: string): Promise<Record<string, unknown>> {
  const db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  try {
    const { rows } = await db.query<{ data: { key: { privateJwkCipher: string } } }>(
      `select data from events where stream_id = $1 and type = 'SigningKeyIssued'`,
      [`project-${projectId}`],
    );
    return JSON.parse(new SecretBox(inject('platformSecret')).open(rows[0]!.data.key.privateJwkCipher));
  } finally {
    await db.end();
  }
}

beforeAll(async () => {
  const operator = await signUpOperator('Keys');
  [first, second] = [await createProject(operator, 'first'), await createProject(operator, 'second')];
});

describe('GET /rest/v1/auth/.well-known/jwks.json', () => {
  it('publishes one public ES256 key per project, and no private part', async () => {
    const answer = await call('GET', '/rest/v1/auth/.well-known/jwks.json', { headers: { apikey: first.anonKey } });
    expect(answer.status).toBe(200);
    expect(answer.body.keys).toEqual([{ kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String), kid: expect.any(String), alg: 'ES256', use: 'sig' }]);
    const other = await call('GET', '/api/rest/v1/auth/.well-known/jwks.json', { headers: { apikey: second.anonKey } });
    expect(other.body.keys[0].kid).not.toBe(answer.body.keys[0].kid);
    expect(other.body.keys[0].x).not.toBe(answer.body.keys[0].x);
  });

  it('verifies what the sealed private key signs, and not what another project’s key signs', async () => {
    const jwks = createLocalJWKSet((await call('GET', '/rest/v1/auth/.well-known/jwks.json', { headers: { apikey: first.anonKey } })).body);
    const sign = async (projectId: string) => {
      const jwk = await sealedPrivateKey(projectId);
      return new SignJWT({ role: 'authenticated' }).setProtectedHeader({ alg: 'ES256', kid: String(jwk.kid) }).setSubject('u').sign(await importJWK(jwk, 'ES256'));
    };
    await expect(jwtVerify(await sign(first.id), jwks)).resolves.toMatchObject({ payload: { sub: 'u' } });
    await expect(jwtVerify(await sign(second.id), jwks)).rejects.toThrow();
  });

  it('verifies, with jose, the access tokens the data plane signs: ES256 under the published key, issuer and audience', async () => {
    const jwks = createLocalJWKSet((await call('GET', '/rest/v1/auth/.well-known/jwks.json', { headers: { apikey: first.anonKey } })).body);
    const email = `jwks-${Date.now()}@example.com`;
    const signedUp = await call('POST', '/rest/v1/auth/signup', { headers: { apikey: first.anonKey }, body: { email, password: 'correct horse battery' } });
    expect(signedUp.status).toBe(201);
    const refreshed = await call('POST', '/rest/v1/auth/refresh', { headers: { apikey: first.anonKey }, body: { refreshToken: signedUp.body.refreshToken } });
    expect(refreshed.status).toBe(200);
    for (const token of [signedUp.body.accessToken, refreshed.body.accessToken]) {
      const { payload, protectedHeader } = await jwtVerify(token, jwks, {
        algorithms: ['ES256'],
        audience: 'authenticated',
        issuer: `${inject('publicUrl')}/rest/v1/auth`,
        requiredClaims: ['exp', 'iat', 'sub', 'session_id'],
      });
      expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'JWT' });
      expect(payload).toMatchObject({ sub: signedUp.body.user.id, role: 'authenticated', email, ref: first.id });
      expect(payload.exp! - payload.iat!).toBe(3600);
    }
    // A bit changed in the signature: refused.
    const token: string = refreshed.body.accessToken;
    const tampered = `${token.slice(0, -2)}${token.endsWith('A') ? 'B' : 'A'}${token.slice(-1)}`;
    await expect(jwtVerify(tampered, jwks)).rejects.toThrow();
  });

  scenarios([
    { name: 'without an apikey it is 401', method: 'GET', url: '/rest/v1/auth/.well-known/jwks.json', expectedStatus: 401, expectedContent: ['missing_api_key'] },
  ]);
});
