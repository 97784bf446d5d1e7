/**
 * Shared set-up of the client tests: a project made through the management
 * API (by the shared harness), clients of it, a fetch that records what the
 * client sent (the real fetch underneath), listeners that keep the events
 * they saw, the address of a port nothing listens on and of a server that
 * answers garbage.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { expect, inject } from 'vitest';
import { createClient, type AuthEvent, type BaseplaneClient, type ClientOptions, type Session } from '../src/index';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';

export const PASSWORD = 'correct horse battery';
export const newEmail = (label = 'user') => `${label}-${randomUUID()}@example.com`;

export interface ClientProject {
  operator: Operator;
  project: ProjectAnswer;
}

export async function clientProject(name: string): Promise<ClientProject> {
  const operator = await signUpOperator(name);
  return { operator, project: await createProject(operator, name) };
}

export const appClient = (p: ClientProject, options: ClientOptions = {}): BaseplaneClient => createClient(inject('baseUrl'), p.project.anonKey, options);

/** Creates a table through the management API (API.md → Tables). */
export async function createTable(p: ClientProject, body: { name: string; access?: string; columns: Array<Record<string, unknown>> }): Promise<void> {
  const answer = await call('POST', `/api/projects/${p.project.id}/tables`, { headers: bearer(p.operator.token), body });
  expect(answer.status, answer.text).toBe(201);
}

export async function updateAuthSettings(p: ClientProject, settings: Record<string, unknown>): Promise<void> {
  const answer = await call('PATCH', `/api/projects/${p.project.id}/auth/settings`, { headers: bearer(p.operator.token), body: settings });
  expect(answer.status, answer.text).toBe(200);
}

/** The real fetch, with a record of every request made through it. */
export function recordingFetch(): { fetch: typeof fetch; requests: Array<{ method: string; url: string; headers: Headers }> } {
  const requests: Array<{ method: string; url: string; headers: Headers }> = [];
  return {
    requests,
    fetch: (input, init) => {
      requests.push({ method: init?.method ?? 'GET', url: String(input), headers: new Headers(init?.headers) });
      return fetch(input, init);
    },
  };
}

export const refreshCalls = (requests: Array<{ method: string; url: string }>) => requests.filter((r) => r.method === 'POST' && r.url.endsWith('/auth/refresh')).length;

/** Keeps every auth event a client emits, in order. */
export function eventLog(client: BaseplaneClient): { events: AuthEvent[]; sessions: Array<Session | null>; stop: () => void } {
  const events: AuthEvent[] = [];
  const sessions: Array<Session | null> = [];
  const { unsubscribe } = client.auth.onAuthStateChange((event, session) => {
    events.push(event);
    sessions.push(session);
  });
  return { events, sessions, stop: unsubscribe };
}

/** A base URL where nothing listens: the port was bound, then released. */
export async function deadBaseUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** A real HTTP server that answers every request with what `answer` says (a broken proxy, a wrong base URL). */
export async function garbageServer(answer: (request: http.IncomingMessage) => { status: number; body: string; type?: string }): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    const { status, body, type } = answer(request);
    response.writeHead(status, { 'content-type': type ?? 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
