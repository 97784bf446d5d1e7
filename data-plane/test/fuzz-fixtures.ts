/**
 * What the auth and storage fuzz suites share: a project and a second one,
 * an end user of each (the first one's session kept live: signed in again
 * when the fuzz ends it), access tokens signed with the project's own key
 * that no sign-in would give, requests sent byte for byte as generated, and
 * what no answer may be. Each suite calls useFuzzApp() first.
 */
import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { call } from '../../deploy/test/http';
import { connectTenant, type TenantDatabase } from '../../deploy/test/tenant';
import { resignToken, restProject, type RestProject } from './rest-fixtures';

export const PASSWORD = 'correct horse battery';
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

export interface Received {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: Buffer;
  text: string;
  body: any;
}

/** One request as sent on the wire: the path exactly as given (no URL normalisation), any body bytes. */
export function send(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Received> {
  const base = new URL(inject('baseUrl'));
  const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const request = http.request({ host: base.hostname, port: base.port, method, path, agent, headers: sent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {
          parsed = undefined;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes, text, body: parsed });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

// Set by useFuzzApp()'s beforeAll; importers see them through the module's live bindings.
export let p: RestProject;
export let other: RestProject;
export let tenant: TenantDatabase;
export let otherTenant: TenantDatabase;
/** The fixture user: their email, and a live session (signed in again when the fuzz ends it). */
export const fixture = { email: '', id: '', password: PASSWORD, token: '', refreshToken: '' };
/** The other project's user: their address and access token. */
export const otherUser = { email: '', token: '' };
/** Access tokens signed with the project's own key: expired, of another project's ref, of another user, with odd claims. */
export const forged: Record<string, string> = {};
/** Every secret no answer may show, and the ones no refusal may show. */
let neverShown: string[] = [];
let neverInRefusals: string[] = [];

/** Signs the fixture user in again: a new live session. */
export async function signIn(): Promise<void> {
  const answer = await call('POST', '/rest/v1/auth/signin', { headers: { ...p.anon, 'x-forwarded-for': '10.250.0.1' }, body: { email: fixture.email, password: fixture.password } });
  expect(answer.status, answer.text).toBe(200);
  fixture.token = answer.body.accessToken;
  fixture.refreshToken = answer.body.refreshToken;
}


/** Makes the shared app before the calling suite's tests, and lets it go after them. */
export function useFuzzApp(name: string): void {
  beforeAll(async () => {
    [p, other] = await Promise.all([restProject(name), restProject(`${name} other`)]);
    [tenant, otherTenant] = await Promise.all([connectTenant(p.project.id), connectTenant(other.project.id)]);
    fixture.email = `fixture-${p.project.id}@example.com`;
    const signup = await call('POST', '/rest/v1/auth/signup', { headers: { ...p.anon, 'x-forwarded-for': '10.250.0.2' }, body: { email: fixture.email, password: PASSWORD } });
    expect(signup.status, signup.text).toBe(201);
    fixture.id = signup.body.user.id;
    await signIn();
    otherUser.email = `other-${other.project.id}@example.com`;
    const otherSignup = await call('POST', '/rest/v1/auth/signup', { headers: { ...other.anon, 'x-forwarded-for': '10.250.0.3' }, body: { email: otherUser.email, password: PASSWORD } });
    expect(otherSignup.status, otherSignup.text).toBe(201);
    otherUser.token = otherSignup.body.accessToken;
    const now = Math.floor(Date.now() / 1000);
    forged.expired = await resignToken(p, fixture.token, { exp: now - 60, iat: now - 3700 });
    forged.otherRef = await resignToken(p, fixture.token, { ref: other.project.id });
    forged.otherUser = await resignToken(p, fixture.token, { sub: otherSignup.body.user.id });
    forged.oddSession = await resignToken(p, fixture.token, { session_id: 'not-a-uuid' });
    forged.oddSub = await resignToken(p, fixture.token, { sub: 'x'.repeat(64) });
    forged.numericSub = await resignToken(p, fixture.token, { sub: 42 });
    forged.noExp = await resignToken(p, fixture.token, { exp: undefined });
    neverShown = [inject('platformSecret'), 'postgres://', 'postgresql://'];
    neverInRefusals = [p.project.serviceKey, other.project.serviceKey, PASSWORD];
  }, 120_000);

  afterAll(async () => {
    await tenant?.end();
    await otherTenant?.end();
    agent.destroy();
  });
}

/** What no answer may be: a server error, a refusal without API.md's shape, or one that shows internals or secrets. */
export function problemOf(answer: Received, method: string): string | undefined {
  const shown = answer.text.slice(0, 300);
  if (answer.status >= 500) return `status ${answer.status}: ${shown}`;
  if (/\n\s+at |node_modules|\.ts:\d+/.test(answer.text)) return `a stack trace: ${shown}`;
  if (/\$argon2(id|i|d)\$/.test(answer.text)) return `a password hash: ${shown}`;
  if (/\b(select|insert|update|delete)\b[\s\S]*\b(auth|storage)\.[a-z_]+\b|\bbp_[a-z_]+\b|\bauth_[a-z_]+\b/i.test(answer.text) && answer.status >= 400) return `our SQL: ${shown}`;
  for (const secret of neverShown) if (answer.text.includes(secret)) return `a secret (${secret.slice(0, 8)}…): ${shown}`;
  if (answer.status >= 400) {
    for (const secret of [...neverInRefusals, fixture.refreshToken, fixture.token]) if (secret && answer.text.includes(secret)) return `a secret in a refusal (${secret.slice(0, 8)}…): ${shown}`;
    if (method !== 'HEAD') {
      const shape = answer.body as Record<string, unknown> | undefined;
      if (typeof shape?.code !== 'string' || typeof shape.message !== 'string' || !('details' in shape) || !('hint' in shape)) return `not the error shape: ${shown}`;
    }
  }
  return undefined;
}

/** Mostly null (the route's own choice), now and then one of `values`. */
export const seldom = <T>(values: fc.Arbitrary<T>, weight = 6): fc.Arbitrary<T | null> => fc.oneof({ weight, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: values });

