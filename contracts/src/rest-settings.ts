/**
 * A project's data API settings (`/api/projects/:id/rest/settings`): which
 * schemas `/rest/v1` serves, as PostgREST's `db-schemas` (Supabase's
 * "Exposed schemas"), and the most rows a read answers (`db-max-rows`,
 * Supabase's "Max rows"). Recorded as `RestSettingsUpdated` events and followed
 * by the data plane's directory, as the auth settings are.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ApiError } from './errors';

export interface RestSettings {
  /**
   * The schemas the data API serves, the first one by default: another is
   * chosen with `Accept-Profile` (reads) or `Content-Profile` (writes).
   */
  exposedSchemas: string[];
  /**
   * The most rows a read, or an rpc returning a set, answers for this
   * project; null keeps the platform's `DATA_API_MAX_ROWS` (1,000 by default).
   */
  maxRows: number | null;
}

export const DEFAULT_REST_SETTINGS: RestSettings = { exposedSchemas: ['public'], maxRows: null };

/**
 * Schemas the platform keeps for itself: end users' credentials and
 * sessions (`auth`), objects' metadata (`storage`), the apply marker
 * (`baseplane_meta`) and PostgreSQL's catalogs. The data API never serves them.
 */
const RESERVED_SCHEMAS = new Set(['auth', 'storage', 'baseplane_meta', 'information_schema']);

/** `PATCH /api/projects/:id/rest/settings`: any subset. */
export const UpdateRestSettingsBody = Type.Object(
  {
    exposedSchemas: Type.Optional(
      Type.Array(
        Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', patternMessage: 'must be a schema name: a letter or _, then letters, digits or _, 63 at most' }),
        { minItems: 1, maxItems: 16, uniqueItems: true },
      ),
    ),
    maxRows: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateRestSettingsBody = Static<typeof UpdateRestSettingsBody>;

/** A settings change once the body has its shape: no schema the platform keeps (400 `invalid_request` naming it). */
export function checkRestSettings(body: UpdateRestSettingsBody): void {
  const reserved = (body.exposedSchemas ?? []).filter((name) => RESERVED_SCHEMAS.has(name) || /^pg_/i.test(name));
  if (reserved.length > 0) {
    throw new ApiError(400, 'invalid_request', `the schema "${reserved[0]}" is the platform's own and cannot be exposed`, null, 'expose schemas your app made, such as public or api');
  }
}
