/**
 * Baseplane's JavaScript client: `createClient` for an application (data
 * API, end-user auth, storage) and `createManagementClient` for operators
 * (every `/api` operation). Every method resolves to `{ data, error }`.
 */
export { createClient, type BaseplaneClient, type ClientOptions, type SchemaClient } from './client.js';
export { createManagementClient, type ManagementClient, type ManagementOptions } from './management/management-client.js';
export type { AuthClient, Credentials, CodeInput, SessionData, SignOutScope, SignUpCredentials, UserChanges } from './auth/auth-client.js';
export type { AuthEvent, AuthListener, Subscription } from './auth/auth-events.js';
export { memoryStorage, type SessionStorage } from './auth/session-storage.js';
export type { BucketObjects, StorageClient } from './storage/storage-client.js';
export type { ListOptions, UploadOptions } from './storage/objects.js';
export type { ColumnChanges, CreateTable, Dropped, ForeignKeySpec, RowsQuery } from './management/schema-api.js';
export type { AuthSettingsUpdate, NewUser, UserUpdate } from './management/project-auth-api.js';
export type { RestSettingsUpdate } from './management/rest-settings-api.js';
export type { NewBucket } from './management/storage-api.js';
export type { ClientError, Fetch, Result } from './result.js';
// Also brings in its augmentation of postgrest-js's PostgrestError with `status`.
export type { DataClientOptions } from './data/from.js';
export type * from './types.js';
