/**
 * Shared harness for HTTP tests: a small fetch wrapper, operator sign-up, and
 * PocketBase-style scenario tables (name, method, url, headers, expected
 * status, expected content, expected events recorded by the request).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect, inject, it } from 'vitest';

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function call<T = any>(method: string, url: string, options: { headers?: Record<string, string>; body?: unknown; raw?: string } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(new URL(url, inject('baseUrl')), { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON: keep the text */
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const apikey = (key: string) => ({ apikey: key });

export interface Operator {
  token: string;
  refreshToken: string;
  accountId: string;
  teamId: string;
  email: string;
}

/** A client address of its own per call, so that the per-IP limits stay out of the way (the stack trusts X-Forwarded-For from loopback). */
/**
 * An ingress's address in the TRUSTED_PROXIES the test stack runs with, and
 * one outside it: `X-Forwarded-For: <client>, <ingress>` is what an ingress in
 * front of the gateway passes on.
 */
export const TRUSTED_INGRESS = '192.0.2.10';
export const someUntrustedIngress = () => `198.51.100.${Math.floor(Math.random() * 254) + 1}`;

export const someIp = () => `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`;

/** A new operator with a team of their own, signed up from an address of its own (the sign-up limit is per IP). */
export async function signUpOperator(name = 'Operator'): Promise<Operator> {
  const email = `op-${randomUUID()}@example.com`;
  const answer = await call('POST', '/api/auth/signup', { headers: { 'x-forwarded-for': someIp() }, body: { email, password: 'correct horse battery', name } });
  expect(answer.status).toBe(201);
  return { token: answer.body.accessToken, refreshToken: answer.body.refreshToken, accountId: answer.body.user.id, teamId: answer.body.team.id, email };
}

export interface ProjectAnswer {
  id: string;
  anonKey: string;
  serviceKey: string;
  status: string;
  teamId: string;
}

export async function createProject(operator: Operator, name = 'test project'): Promise<ProjectAnswer> {
  const answer = await call<ProjectAnswer>('POST', '/api/projects', { headers: bearer(operator.token), body: { name } });
  expect(answer.status, answer.text).toBe(201);
  expect(answer.body.status).toBe('active');
  return answer.body;
}

/** Event types recorded in a project's stream after `afterVersion`. */
export async function projectEventTypes(projectId: string, afterVersion = 0): Promise<string[]> {
  const db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  try {
    const { rows } = await db.query<{ type: string }>(
      'select type from events where stream_id = $1 and stream_version > $2 order by stream_version',
      [`project-${projectId}`, afterVersion],
    );
    return rows.map((r) => r.type);
  } finally {
    await db.end();
  }
}

/**
 * Waits until every data-plane replica follows the project events recorded
 * so far (its `/healthz` position): what a change's answer promises only
 * "within a second" (auth settings) is then there on every replica. Fails
 * after `withinMs`.
 */
export async function dataPlanesCaughtUp(withinMs = 1000): Promise<void> {
  const db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
  let recorded: number;
  try {
    const { rows } = await db.query<{ position: string | null }>(`select max(global_position) as position from events where stream_id like 'project-%'`);
    recorded = Number(rows[0]?.position ?? 0);
  } finally {
    await db.end();
  }
  const deadline = Date.now() + withinMs;
  for (const port of inject('servicePorts').dataPlanes) {
    for (;;) {
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { position?: number };
      if ((health.position ?? 0) >= recorded) break;
      if (Date.now() > deadline) throw new Error(`data plane on port ${port} is at event ${health.position}, not ${recorded}, after ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

export async function streamVersion(projectId: string): Promise<number> {
  return (await projectEventTypes(projectId)).length;
}

export interface Scenario {
  name: string;
  method: string;
  url: string | (() => string);
  headers?: Record<string, string> | (() => Record<string, string>);
  body?: unknown;
  raw?: string;
  expectedStatus: number;
  /** Substrings the raw body must contain. */
  expectedContent?: string[];
  /** Substrings the raw body must not contain. */
  notExpectedContent?: string[];
  /** Event types the request must have appended to this project's stream (none when []). */
  expectedEvents?: { projectId: () => string; types: string[] };
}

/** Registers one test per scenario. */
export function scenarios(table: Scenario[]): void {
  for (const s of table) {
    it(s.name, async () => {
      const before = s.expectedEvents ? await streamVersion(s.expectedEvents.projectId()) : 0;
      const url = typeof s.url === 'function' ? s.url() : s.url;
      const headers = typeof s.headers === 'function' ? s.headers() : s.headers;
      const answer = await call(s.method, url, { headers, body: s.body, raw: s.raw });
      expect(answer.status, answer.text).toBe(s.expectedStatus);
      for (const text of s.expectedContent ?? []) expect(answer.text).toContain(text);
      for (const text of s.notExpectedContent ?? []) expect(answer.text).not.toContain(text);
      if (answer.status >= 400) {
        expect(Object.keys(answer.body ?? {}).sort()).toEqual(['code', 'details', 'hint', 'message']);
      }
      if (s.expectedEvents) {
        expect(await projectEventTypes(s.expectedEvents.projectId(), before)).toEqual(s.expectedEvents.types);
      }
    });
  }
}
