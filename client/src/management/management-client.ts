/**
 * `createManagementClient(baseUrl, { accessToken })`: every `/api`
 * operation of API.md, grouped by resource with the project id first, under
 * the same `{ data, error }` rule. It sends an operator's platform token
 * and/or a project's service key; `auth.signUp`, `auth.signIn` and
 * `auth.refresh` switch it to the token they obtain.
 */
import { ok, type Fetch, type Result } from '../result.js';
import { segment, send, type Transport } from '../transport.js';
import type { InboxMessage, Operation, OperationAnswer, PlatformAccount, PlatformSession, Project, TeamMember, ProjectEvent, ProjectKeys, SqlResult, Team } from '../types.js';
import { authSettingsApi, providersApi, usersApi } from './project-auth-api.js';
import { restSettingsApi } from './rest-settings-api.js';
import { columnsApi, foreignKeysApi, rowsApi, tablesApi } from './schema-api.js';
import { storageApi } from './storage-api.js';

export interface ManagementOptions {
  /** An operator's platform JWT (`POST /api/auth/login`). */
  accessToken?: string;
  /** A project's service key: project-scoped operations of that project only. */
  serviceKey?: string;
  headers?: Record<string, string>;
  fetch?: Fetch;
}

/** Credentials held by one management client; the auth calls replace them. */
interface Credentials {
  accessToken?: string;
  refreshToken?: string;
}

export type ManagementClient = ReturnType<typeof createManagementClient>;

export function createManagementClient(baseUrl: string, options: ManagementOptions = {}) {
  const held: Credentials = { accessToken: options.accessToken };
  const t: Transport = {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    headers: async () => ({
      ...options.headers,
      ...(options.serviceKey ? { apikey: options.serviceKey } : {}),
      ...(held.accessToken ? { authorization: `Bearer ${held.accessToken}` } : {}),
    }),
  };
  const project = (id: string) => `/api/projects/${segment(id)}`;
  const keep = async <T extends PlatformSession>(answer: Promise<Result<T>>): Promise<Result<T>> => {
    const settled = await answer;
    if (!settled.error) Object.assign(held, { accessToken: settled.data.accessToken, refreshToken: settled.data.refreshToken });
    return settled;
  };

  return {
    /** Platform accounts (API.md → Platform accounts). */
    auth: {
      signUp: (account: { email: string; password: string; name?: string }) => keep(send<PlatformSession>(t, 'POST', '/api/auth/signup', { body: account })),
      signIn: (credentials: { email: string; password: string }) => keep(send<PlatformSession>(t, 'POST', '/api/auth/login', { body: credentials })),
      /** A new platform token, from the given refresh token or the one this client holds. */
      refresh: (refreshToken?: string) => keep(send<PlatformSession>(t, 'POST', '/api/auth/refresh', { body: { refreshToken: refreshToken ?? held.refreshToken ?? '' } })),
      me: (): Promise<Result<PlatformAccount>> => send(t, 'GET', '/api/auth/me'),
      /** The platform token this client sends now. */
      getAccessToken: (): Result<{ accessToken: string | null }> => ok({ accessToken: held.accessToken ?? null }),
    },
    teams: {
      list: (): Promise<Result<Team[]>> => send(t, 'GET', '/api/teams'),
      create: (team: { name: string }): Promise<Result<Team>> => send(t, 'POST', '/api/teams', { body: team }),
      addMember: (teamId: string, member: { email: string; role?: 'owner' | 'admin' | 'member' }): Promise<Result<TeamMember>> =>
        send(t, 'POST', `/api/teams/${segment(teamId)}/members`, { body: member }),
    },
    projects: {
      /** Answers once the project is active, or `{ operation }` to follow when it is not after 30 s (API.md → Waiting). */
      create: (input: { name: string; teamId?: string }): Promise<Result<Project | OperationAnswer>> => send(t, 'POST', '/api/projects', { body: input }),
      list: (query: { teamId?: string } = {}): Promise<Result<Project[]>> => send(t, 'GET', '/api/projects', { query }),
      get: (projectId: string): Promise<Result<Project>> => send(t, 'GET', project(projectId)),
      /** Answers once the project is deleted, or `{ operation }` to follow when it is not after 30 s. */
      delete: (projectId: string): Promise<Result<Project | OperationAnswer>> => send(t, 'DELETE', project(projectId)),
    },
    keys: {
      get: (projectId: string): Promise<Result<ProjectKeys>> => send(t, 'GET', `${project(projectId)}/keys`),
      /** A new key of that kind; the old one stops working within a second. */
      rotate: (projectId: string, kind: 'anon' | 'service'): Promise<Result<ProjectKeys>> => send(t, 'POST', `${project(projectId)}/keys/rotate`, { body: { kind } }),
    },
    tables: tablesApi(t),
    columns: columnsApi(t),
    foreignKeys: foreignKeysApi(t),
    rows: rowsApi(t),
    storage: storageApi(t),
    sql: {
      /** Runs SQL as the project's owner role; the last statement's result. */
      execute: (projectId: string, query: string): Promise<Result<SqlResult>> => send(t, 'POST', '/api/sql/execute', { body: { projectId, query } }),
    },
    users: usersApi(t),
    authSettings: authSettingsApi(t),
    providers: providersApi(t),
    restSettings: restSettingsApi(t),
    history: {
      events: (projectId: string, query: { after?: number; limit?: number } = {}): Promise<Result<{ events: ProjectEvent[] }>> => send(t, 'GET', `${project(projectId)}/events`, { query }),
      operations: (projectId: string): Promise<Result<Operation[]>> => send(t, 'GET', `${project(projectId)}/operations`),
      operation: (projectId: string, operationId: string): Promise<Result<Operation>> => send(t, 'GET', `${project(projectId)}/operations/${segment(operationId)}`),
    },
    /** The local stack's dev inbox (only when it runs its own SMTP server). */
    devInbox: {
      list: (to: string): Promise<Result<InboxMessage[]>> => send(t, 'GET', '/api/dev/inbox', { query: { to } }),
    },
  };
}
