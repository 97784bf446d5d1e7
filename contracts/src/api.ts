/**
 * Request and response shapes of the control plane's HTTP API (API.md), as
 * TypeBox schemas so one definition gives both validation and types.
 */
import { Type, type Static } from '@sinclair/typebox';
import { checkEmailAddress } from './auth';
import { ApiError } from './errors';

// An address's form and a password's length are checked after the shape, by checkOperatorCredentials, so that they
// answer API.md's own codes (`invalid_email`, `weak_password`) as the end users' do, not `invalid_request`.
const Email = Type.String({ maxLength: 320 });
const Password = Type.String({ maxLength: 1024 });

/** An operator's password: at least this long. */
export const PLATFORM_PASSWORD_MIN_LENGTH = 8;

/** A sign-up's address and password, once the body has its shape: 400 `invalid_email` or `weak_password`. */
export function checkOperatorCredentials(email: string, password: string): void {
  checkEmailAddress(email);
  if (password.length < PLATFORM_PASSWORD_MIN_LENGTH) {
    throw new ApiError(400, 'weak_password', `password must have at least ${PLATFORM_PASSWORD_MIN_LENGTH} characters`);
  }
}
const Name = Type.String({ minLength: 1, maxLength: 200 });
/**
 * An id, in lower case as the API hands ids out. Not any case: an id also names things that are not
 * compared as UUIDs (a project's database, its event stream, its objects' keys, its workflow), so an id
 * in another case would reach a different name, or none.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const Uuid = Type.String({ pattern: UUID_PATTERN.source, patternMessage: 'must be a UUID in lower case' });

export const PlatformSignupBody = Type.Object(
  { email: Email, password: Password, name: Type.Optional(Name) },
  { additionalProperties: false },
);
export type PlatformSignupBody = Static<typeof PlatformSignupBody>;

export const PlatformLoginBody = Type.Object(
  { email: Type.String({ maxLength: 320 }), password: Type.String({ maxLength: 1024 }) },
  { additionalProperties: false },
);
export type PlatformLoginBody = Static<typeof PlatformLoginBody>;

export const RefreshBody = Type.Object({ refreshToken: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });
export type RefreshBody = Static<typeof RefreshBody>;

export const CreateTeamBody = Type.Object({ name: Name }, { additionalProperties: false });
export type CreateTeamBody = Static<typeof CreateTeamBody>;

export const TeamRole = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')]);
export const AddMemberBody = Type.Object({ email: Email, role: Type.Optional(TeamRole) }, { additionalProperties: false });
export type AddMemberBody = Static<typeof AddMemberBody>;

export const ProjectName = Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', patternMessage: 'must not be blank' });
export const CreateProjectBody = Type.Object(
  { name: ProjectName, teamId: Type.Optional(Uuid) },
  { additionalProperties: false },
);
export type CreateProjectBody = Static<typeof CreateProjectBody>;

export const ListProjectsQuery = Type.Object({ teamId: Type.Optional(Uuid) }, { additionalProperties: false });
export type ListProjectsQuery = Static<typeof ListProjectsQuery>;

/** A path id: projects, teams and operations are addressed by UUID. */
export const IdParam = Type.Object({ id: Uuid });
export type IdParam = Static<typeof IdParam>;

export const RotateKeyBody = Type.Object(
  { kind: Type.Union([Type.Literal('anon'), Type.Literal('service')]) },
  { additionalProperties: false },
);
export type RotateKeyBody = Static<typeof RotateKeyBody>;

export const EventsQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ pattern: '^\\d{1,12}$', patternMessage: 'must be a whole number of at most 12 digits' })),
    limit: Type.Optional(Type.String({ pattern: '^\\d{1,4}$', patternMessage: 'must be a whole number of at most 4 digits' })),
  },
  { additionalProperties: false },
);
export type EventsQuery = Static<typeof EventsQuery>;

export type ProjectStatus = 'provisioning' | 'active' | 'failed' | 'deleting' | 'deleted';
export type OperationStatus = 'pending' | 'running' | 'succeeded' | 'failed';

/** The project record of API.md. Keys are present for team members only. */
export interface ProjectRecord {
  id: string;
  name: string;
  teamId: string;
  status: ProjectStatus;
  statusDetail: string | null;
  anonKey: string | null;
  serviceKey: string | null;
  restUrl: string;
  authUrl: string;
  createdAt: string;
}

export interface OperationRecord {
  id: string;
  command: string;
  status: OperationStatus;
  workflowId: string | null;
  startedAt: string;
  finishedAt: string | null;
  error: unknown;
}

/**
 * The mail header naming the project a message is sent for: the data plane's
 * mailer sets it, and the dev inbox shows the message to that project's team
 * only. Mail servers and readers ignore it.
 */
export const MAIL_PROJECT_HEADER = 'X-Baseplane-Project';

/** One message the local stack's dev inbox received (`GET /api/dev/inbox`). */
export interface DevInboxMessage {
  id: string;
  to: string[];
  subject: string;
  text: string;
  html: string | null;
  /** When the inbox received it (ISO-8601, UTC). */
  at: string;
}
