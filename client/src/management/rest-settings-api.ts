/**
 * A project's data API settings (README → Try it: rest/settings): which schemas
 * `/rest/v1` serves, as PostgREST's `db-schemas`, and its row cap (`maxRows`).
 */
import type { Result } from '../result.js';
import { segment, send, type Transport } from '../transport.js';
import type { RestSettings } from '../types.js';

const settingsPath = (projectId: string) => `/api/projects/${segment(projectId)}/rest/settings`;

export type RestSettingsUpdate = Partial<RestSettings>;

export function restSettingsApi(t: Transport) {
  return {
    get: (projectId: string): Promise<Result<RestSettings>> => send(t, 'GET', settingsPath(projectId)),
    /** The data plane follows a change within a second or so of it being answered. */
    update: (projectId: string, changes: RestSettingsUpdate): Promise<Result<RestSettings>> => send(t, 'PATCH', settingsPath(projectId), { body: changes }),
  };
}
