/**
 * `createClient(baseUrl, anonKey, options)`: the application's client — the
 * data API (`from`, `rpc`, `schema`), end-user auth (`auth`) and storage
 * (`storage`) — sharing one session, so every request carries the user's
 * token once signed in.
 */
import type { PostgrestClient, PostgrestClientOptions } from '@supabase/postgrest-js';
import { AuthClient } from './auth/auth-client.js';
import { claimsOf, sessionAnswerProblem } from './auth/session.js';
import { SessionKeeper } from './auth/session-keeper.js';
import { indexedDbLedger } from './auth/session-ledger.js';
import { defaultStorage, projectStorageKeyOf, storageKeyOf, type SessionStorage } from './auth/session-storage.js';
import { dataClient, settled } from './data/from.js';
import { request, type Fetch } from './result.js';
import { StorageClient } from './storage/storage-client.js';
import type { Transport } from './transport.js';

/** The schema names of a generated `Database` type. */
type SchemaNames<Database> = string & keyof Omit<Database, '__InternalSupabase'>;
/** The schema a client reads when not told: `public` when the `Database` type has one, as postgrest-js's. */
type DefaultSchema<Database> = 'public' extends SchemaNames<Database> ? 'public' : SchemaNames<Database>;

export interface ClientOptions<SchemaName extends string = string> {
  /**
   * The project's id; storage needs it before anyone signs in (a user token
   * names the project too). It also keys the stored session, so that rotating
   * the anon key signs nobody out.
   */
  projectId?: string;
  auth?: {
    /** Where the session persists: `localStorage` in a browser, memory elsewhere by default. */
    storage?: SessionStorage;
    /** The key the session is stored under; defaults to one derived from the base URL and the project id, or the anon key when `projectId` is not given. */
    storageKey?: string;
    /** Refresh the access token before it expires (default true). */
    autoRefreshToken?: boolean;
    /** Seconds before expiry to refresh; default a minute, or a quarter of a short token lifetime. */
    refreshMargin?: number;
  };
  db?: {
    /**
     * The schema `from()` and `rpc()` use, one the project exposes; sent as
     * `Accept-Profile`/`Content-Profile`. Without it the server picks its
     * first exposed schema (`public` unless changed). With a generated
     * `Database` type, name it in the type too, as with supabase-js:
     * `createClient<Database, 'api'>(…, { db: { schema: 'api' } })`.
     */
    schema?: SchemaName;
  };
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The fetch to use; defaults to the runtime's. */
  fetch?: Fetch;
}

/** The data API of one schema: postgrest-js's client for it. */
type SchemaData<Database, SchemaName extends string> = PostgrestClient<
  Database,
  Database extends { __InternalSupabase: infer I extends PostgrestClientOptions } ? I : {},
  SchemaName & keyof Omit<Database, '__InternalSupabase'>
>;

/** `from` and `rpc` on one schema, as `client.schema(name)` answers them. */
export interface SchemaClient<Database = any, SchemaName extends string = string & keyof Database> {
  /** A query on a table or view of the schema: the PostgREST builder (select, insert, update, upsert, delete, filters, order, range, single…). */
  from: SchemaData<Database, SchemaName>['from'];
  /** Calls a SQL function of the schema (`POST /rest/v1/rpc/:fn`). */
  rpc: SchemaData<Database, SchemaName>['rpc'];
}

export interface BaseplaneClient<Database = any, SchemaName extends SchemaNames<Database> = DefaultSchema<Database>> {
  /** A query on a table or view of the client's schema: the PostgREST builder (select, insert, update, upsert, delete, filters, order, range, single…). */
  from: SchemaData<Database, SchemaName>['from'];
  /** Calls a SQL function of the client's schema (`POST /rest/v1/rpc/:fn`). */
  rpc: SchemaData<Database, SchemaName>['rpc'];
  /**
   * `from` and `rpc` on another schema the project exposes (supabase-js's
   * `supabase.schema('api').from('things')`); one it does not expose
   * resolves 406 `invalid_schema`.
   */
  schema<Other extends SchemaNames<Database>>(name: Other): SchemaClient<Database, Other>;
  auth: AuthClient;
  storage: StorageClient;
}

export function createClient<Database = any, SchemaName extends SchemaNames<Database> = DefaultSchema<Database>>(
  baseUrl: string,
  anonKey: string,
  options: ClientOptions<SchemaName> = {},
): BaseplaneClient<Database, SchemaName> {
  const root = baseUrl.replace(/\/+$/, '');
  const fetchImpl: Fetch = options.fetch ?? ((input, init) => fetch(input, init));
  const headers = { ...options.headers };
  const keeper = sessionKeeper(root, anonKey, options, fetchImpl);
  const accessToken = () => keeper.accessToken();
  const data = dataClient<Database>({ restUrl: `${root}/rest/v1`, anonKey, headers, fetch: fetchImpl, accessToken, schema: options.db?.schema });
  const userTransport: Transport = {
    baseUrl: root,
    fetch: fetchImpl,
    headers: async () => {
      const token = await accessToken();
      return { ...headers, apikey: anonKey, ...(token ? { authorization: `Bearer ${token}` } : {}) };
    },
  };
  const projectId = () => options.projectId ?? (keeper.current ? (claimsOf(keeper.current.accessToken)?.ref ?? null) : null);
  return {
    ...(settledData(data) as SchemaClient<Database, SchemaName>),
    schema: ((name: string) => settledData(data.schema(name as never))) as BaseplaneClient<Database, SchemaName>['schema'],
    auth: new AuthClient({ authUrl: `${root}/rest/v1/auth`, anonKey, headers, fetch: fetchImpl, keeper }),
    storage: new StorageClient(userTransport, projectId),
  };
}

/** `from` and `rpc` of one PostgrestClient, each answer through the result rule. */
function settledData(data: PostgrestClient<any, any, any>): SchemaClient {
  return {
    from: ((relation: string, queryOptions?: object) => settled(data.from(relation, queryOptions))) as SchemaClient['from'],
    rpc: ((fn: string, args?: object, rpcOptions?: object) => settled(data.rpc(fn, args, rpcOptions))) as SchemaClient['rpc'],
  };
}

function sessionKeeper(root: string, anonKey: string, options: ClientOptions, fetchImpl: Fetch): SessionKeeper {
  const given = options.auth?.storage;
  const chosen = given ? { storage: given, isLocalStorage: given === (globalThis as { localStorage?: unknown }).localStorage } : defaultStorage();
  const refreshUrl = `${root}/rest/v1/auth/refresh`;
  const ownKey = options.auth?.storageKey;
  const keyedByProject = ownKey === undefined && options.projectId !== undefined;
  return new SessionKeeper({
    storage: chosen.storage,
    storageKey: ownKey ?? (options.projectId !== undefined ? projectStorageKeyOf(root, options.projectId) : storageKeyOf(root, anonKey)),
    // A client given its project id after an earlier one without it: its users' sessions are under the anon key's key.
    previousStorageKey: keyedByProject ? storageKeyOf(root, anonKey) : undefined,
    followOtherTabs: chosen.isLocalStorage,
    // Only localStorage lags between tabs; a storage the caller passes is taken as it is.
    ledger: chosen.isLocalStorage ? indexedDbLedger() : null,
    autoRefresh: options.auth?.autoRefreshToken ?? true,
    refreshMargin: options.auth?.refreshMargin,
    callRefresh: (refreshToken) => request(fetchImpl, { method: 'POST', url: refreshUrl, headers: { ...options.headers, apikey: anonKey }, body: { refreshToken }, expect: (data) => sessionAnswerProblem(data, false) }),
  });
}
