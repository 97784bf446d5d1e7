/**
 * Management of a project's end users, auth settings and social-login
 * providers (API.md → End-user auth, operator side).
 */
import type { Result } from '../result.js';
import { segment, send, type Transport } from '../transport.js';
import type { AuthSettings, Provider, ProviderSettings, User } from '../types.js';

const authPath = (projectId: string, rest: string) => `/api/projects/${segment(projectId)}/auth/${rest}`;

export interface NewUser {
  email: string;
  password?: string;
  emailVerified?: boolean;
  firstName?: string;
  lastName?: string;
  username?: string;
}

export interface UserUpdate {
  email?: string;
  password?: string;
  emailVerified?: boolean;
  firstName?: string | null;
  lastName?: string | null;
  username?: string | null;
}

export type AuthSettingsUpdate = Partial<AuthSettings>;

export function usersApi(t: Transport) {
  return {
    list: (projectId: string, query: { search?: string; limit?: number; offset?: number } = {}): Promise<Result<{ users: User[]; total: number }>> =>
      send(t, 'GET', authPath(projectId, 'users'), { query }),
    create: (projectId: string, user: NewUser): Promise<Result<User>> => send(t, 'POST', authPath(projectId, 'users'), { body: user }),
    update: (projectId: string, userId: string, changes: UserUpdate): Promise<Result<User>> => send(t, 'PATCH', authPath(projectId, `users/${segment(userId)}`), { body: changes }),
    remove: (projectId: string, userId: string): Promise<Result<User>> => send(t, 'DELETE', authPath(projectId, `users/${segment(userId)}`)),
  };
}

export function authSettingsApi(t: Transport) {
  return {
    get: (projectId: string): Promise<Result<AuthSettings>> => send(t, 'GET', authPath(projectId, 'settings')),
    update: (projectId: string, changes: AuthSettingsUpdate): Promise<Result<AuthSettings>> => send(t, 'PATCH', authPath(projectId, 'settings'), { body: changes }),
  };
}

/** Social-login providers; served once social login lands (their paths are pinned in API.md). */
export function providersApi(t: Transport) {
  return {
    list: (projectId: string): Promise<Result<ProviderSettings[]>> => send(t, 'GET', authPath(projectId, 'providers')),
    update: (projectId: string, provider: Provider, settings: { enabled: boolean; clientId?: string; clientSecret?: string }): Promise<Result<ProviderSettings>> =>
      send(t, 'PUT', authPath(projectId, `providers/${segment(provider)}`), { body: settings }),
  };
}
