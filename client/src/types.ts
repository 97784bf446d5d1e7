/**
 * The records the client hands back, as API.md pins them. The package
 * carries its own copy of these shapes so that it depends on nothing private.
 */

/** An end user of a project (API.md → End-user auth). */
export interface User {
  id: string;
  email: string;
  username: string | null;
  emailVerified: boolean;
  firstName: string | null;
  lastName: string | null;
  avatarUrl: string | null;
  providers: string[];
  createdAt: string;
  updatedAt: string;
  lastSignInAt: string | null;
}

/** A signed-in end user's session as the client keeps it. */
export interface Session {
  accessToken: string;
  refreshToken: string;
  /** Lifetime of the access token in seconds, as the server gave it. */
  expiresIn: number;
  /** When the access token expires, in Unix seconds (worked out when the session arrived). */
  expiresAt: number;
  tokenType: 'bearer';
  user: User;
}

/** A session as the auth endpoints answer it; `/refresh` leaves out `user`. */
export interface SessionAnswer {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType?: 'bearer';
  user?: User;
}

/** `{ message }`, the answer of the endpoints that send a code. */
export interface Message {
  message: string;
}

export type Provider = 'google' | 'github';

/** A storage bucket (API.md → Storage). */
export interface Bucket {
  name: string;
  public: boolean;
  fileSizeLimit: number | null;
  allowedMimeTypes: string[] | null;
  createdAt: string;
}

/** An object in a bucket. */
export interface StoredObject {
  path: string;
  size: number;
  contentType: string;
  etag: string;
  updatedAt: string;
  owner: string | null;
}

/** One page of a bucket listing: objects at this level and the prefixes ("folders") below it. */
export interface ObjectList {
  objects: StoredObject[];
  prefixes: string[];
}

export interface SignedUrl {
  url: string;
  expiresAt: string;
}

/** What a file upload takes: anything `fetch` can send as a multipart part. */
export type FileBody = Blob | ArrayBuffer | ArrayBufferView | string;

/** Platform account (operator) session (API.md → Platform accounts). */
export interface PlatformSession {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  user?: { id: string; email: string; name: string | null };
  team?: { id: string; name: string };
}

export interface PlatformAccount {
  id: string;
  email: string;
  name: string | null;
  teams: Array<{ id: string; name: string; role: string }>;
}

export interface Team {
  id: string;
  name: string;
  role?: string;
}

export interface TeamMember {
  teamId: string;
  accountId: string;
  email: string;
  role: string;
}

export type ProjectStatus = 'provisioning' | 'active' | 'failed' | 'deleting' | 'deleted';

/** A project record; keys are shown to team members only. */
export interface Project {
  id: string;
  name: string;
  teamId: string;
  status: ProjectStatus;
  anonKey: string | null;
  serviceKey: string | null;
  restUrl: string;
  authUrl: string;
  createdAt: string;
  statusDetail: string | null;
}

export interface ProjectKeys {
  anonKey: string;
  serviceKey: string;
}

/** A command's record (API.md → Projects → operations). */
export interface Operation {
  id: string;
  command: string;
  status: 'pending' | 'running' | 'succeeded' | 'failed';
  workflowId: string | null;
  startedAt: string;
  finishedAt: string | null;
  error: unknown;
}

/** What a command answers after 30 s, or at once with `{ async: true }`: the operation to follow. */
export interface OperationAnswer {
  operation: Operation;
}

export interface ProjectEvent {
  version: number;
  globalPosition: string | number;
  type: string;
  data: unknown;
  metadata: { actor: unknown; at: string; correlationId: string | null; causationId: string | null };
}

export interface Column {
  name: string;
  type: string;
  nullable: boolean;
  default: string | null;
  unique: boolean;
  isPrimaryKey: boolean;
  isIdentity: boolean;
}

export interface ForeignKey {
  name: string;
  columns: string[];
  references: { table: string; columns: string[] };
  onDelete?: string;
  onUpdate?: string;
}

export interface Table {
  name: string;
  schema: string;
  columns: Column[];
  primaryKey: string[];
  foreignKeys: ForeignKey[];
  rlsEnabled: boolean;
  access: string | null;
  policies: Array<{ name: string; command: string; roles: string[]; using: string | null; check: string | null }>;
}

export type TableAccess = 'public-read' | 'authenticated' | 'owner' | 'private' | 'custom';

export interface ColumnSpec {
  name: string;
  type: string;
  nullable?: boolean;
  default?: string | number | boolean | null;
  unique?: boolean;
  primaryKey?: boolean;
}

export type Row = Record<string, unknown>;

export interface RowsPage {
  rows: Row[];
  total: number;
}

export interface SqlResult {
  columns: Array<{ name: string; dataType: string }>;
  rows: Row[];
  rowCount: number;
  duration: number;
  truncated?: boolean;
}

/** A project's auth settings (API.md → Project auth settings). */
export interface AuthSettings {
  requireEmailVerification: boolean;
  allowSignups: boolean;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  otpTtl: number;
  passwordMinLength: number;
  siteUrl: string | null;
  redirectUrls: string[];
  requireReauthForPasswordChange: boolean;
  smtp: { url: string; from: string } | null;
}

/** A project's data API settings (`/api/projects/:id/rest/settings`). */
export interface RestSettings {
  /** The schemas the data API serves, the first one by default. */
  exposedSchemas: string[];
  /** The most rows a read answers; null keeps the platform's default (1,000). */
  maxRows: number | null;
}

export interface ProviderSettings {
  provider: Provider;
  enabled: boolean;
  clientId: string | null;
  hasSecret: boolean;
  redirectUri: string;
}

export interface InboxMessage {
  id: string;
  to: string[];
  subject: string;
  text: string;
  html: string | null;
  at: string;
}
