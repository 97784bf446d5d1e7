/**
 * `/rest/v1/auth/*`, the project-user directory: sign-up, sign-in, refresh,
 * me and logout. Each handler: resolve the project from the apikey, validate,
 * act in one transaction on the tenant's `auth` schema, answer.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import {
  ApiError,
  EMAIL_PATTERN,
  EndUserLogoutBody,
  EndUserRefreshBody,
  EndUserSigninBody,
  EndUserSignupBody,
  validate,
  type AccessTokenClaims,
  type EndUserSession,
} from '@baseplane/contracts';
import type { DirectoryEntry, ProjectDirectory } from '../directory/project-directory';
import { apiKeyOf, resolveProject } from '../http/resolve-project';
import type { OwnerPools } from '../tenants/owner-pools';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokens } from './access-tokens';
import { hashPassword, verifyPassword } from './passwords';
import * as store from './user-store';
import type { CodeBook } from './codes';
import type { Mailer } from '../mail/mailer';

export interface AuthDependencies {
  directory: ProjectDirectory;
  tenants: OwnerPools;
  tokens: AccessTokens;
  codes: CodeBook;
  mailer: Mailer;
}

export const MIN_PASSWORD_LENGTH = 8;

export function bindAuthRoutes(app: FastifyInstance, deps: AuthDependencies): void {
  app.post('/auth/signup', (request, reply) => signup(deps, request).then((session) => reply.status(201).send(session)));
  app.post('/auth/signin', (request) => signin(deps, request));
  app.post('/auth/refresh', (request) => refresh(deps, request));
  app.get('/auth/me', (request) => me(deps, request));
  app.post('/auth/logout', (request, reply) => logout(deps, request).then(() => reply.status(204).send()));
}

export async function newSession(deps: AuthDependencies, project: DirectoryEntry, user: store.StoredUser, sessionId: string, refreshToken: string): Promise<EndUserSession> {
  const accessToken = await deps.tokens.sign(project, { sub: user.id, email: user.email, email_verified: user.emailVerified, session_id: sessionId });
  return { accessToken, refreshToken, expiresIn: ACCESS_TOKEN_TTL_SECONDS, tokenType: 'bearer', user: store.publicUser(user) };
}

async function signup(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const body = validate(EndUserSignupBody, request.body);
  if (!EMAIL_PATTERN.test(body.email)) throw new ApiError(400, 'invalid_email', 'invalid email address');
  if (body.password.length < MIN_PASSWORD_LENGTH) throw new ApiError(400, 'weak_password', `password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  const passwordHash = await hashPassword(body.password);
  const { user, sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    const user = await store.createUser(tx, { ...body, passwordHash });
    const sessionId = await store.startSession(tx, user.id);
    return { user, sessionId, refreshToken: await store.issueRefreshToken(tx, sessionId, user.id) };
  });
  return newSession(deps, project, user, sessionId, refreshToken);
}

async function signin(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const body = validate(EndUserSigninBody, request.body);
  const found = await deps.tenants.transaction(project.projectId, (tx) => store.findUserByEmail(tx, body.email));
  // Same answer, same work, for an unknown email and a wrong password.
  if (!(await verifyPassword(found?.passwordHash, body.password)) || !found) throw new ApiError(400, 'invalid_credentials', 'invalid email or password');
  const { sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    await store.touchSignIn(tx, found.id);
    const sessionId = await store.startSession(tx, found.id);
    return { sessionId, refreshToken: await store.issueRefreshToken(tx, sessionId, found.id) };
  });
  return newSession(deps, project, found, sessionId, refreshToken);
}

async function refresh(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const { refreshToken } = validate(EndUserRefreshBody, request.body);
  const outcome = await deps.tenants.transaction(project.projectId, async (tx) => {
    const spent = await store.spendRefreshToken(tx, refreshToken);
    if (spent.kind !== 'spent') return spent;
    const user = await store.findUser(tx, spent.userId);
    if (!user) return { kind: 'invalid' as const };
    return { kind: 'renewed' as const, user, sessionId: spent.sessionId, refreshToken: await store.issueRefreshToken(tx, spent.sessionId, spent.userId) };
  });
  // Refused only after commit: a reuse has revoked the session for good.
  if (outcome.kind === 'reused') throw new ApiError(401, 'refresh_token_reused', 'refresh token was already used; the session is revoked');
  if (outcome.kind === 'invalid') throw new ApiError(401, 'refresh_token_invalid', 'refresh token is invalid or expired');
  const { user: _, ...session } = await newSession(deps, project, outcome.user, outcome.sessionId, outcome.refreshToken);
  return session;
}

/**
 * The caller's verified token, whose session must still be live. The project
 * comes from the apikey when one is sent (the token must then be of that
 * project), else from the token's `ref` claim — `GET /me` takes the token alone.
 */
async function authenticate(deps: AuthDependencies, request: FastifyRequest): Promise<{ project: DirectoryEntry; claims: AccessTokenClaims }> {
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
  if (!match) throw new ApiError(401, 'no_session', 'Authorization: Bearer <access token> is required');
  const token = match[1]!;
  const project = apiKeyOf(request) ? resolveProject(deps.directory, request).project : projectOfToken(deps.directory, token);
  const claims = await deps.tokens.verify(project, token);
  const live = await deps.tenants.transaction(project.projectId, (tx) => store.sessionIsLive(tx, claims.session_id));
  if (!live) throw new ApiError(401, 'invalid_token', 'the session of this token has ended');
  return { project, claims };
}

/** The project a token names, before its signature is checked (verify() checks it against that project's keys). */
function projectOfToken(directory: ProjectDirectory, token: string): DirectoryEntry {
  let ref: unknown;
  try {
    ref = decodeJwt(token).ref;
  } catch {
    throw new ApiError(401, 'invalid_token', 'invalid access token');
  }
  const project = typeof ref === 'string' ? directory.project(ref) : undefined;
  if (!project || project.status === 'deleted') throw new ApiError(401, 'invalid_token', 'invalid access token');
  if (project.status !== 'active') throw new ApiError(503, 'project_unavailable', `project is ${project.status}`);
  return project;
}

async function me(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims } = await authenticate(deps, request);
  const user = await deps.tenants.transaction(project.projectId, (tx) => store.findUser(tx, claims.sub));
  if (!user) throw new ApiError(401, 'invalid_token', 'the user of this token no longer exists');
  return store.publicUser(user);
}

async function logout(deps: AuthDependencies, request: FastifyRequest): Promise<void> {
  const { project, claims } = await authenticate(deps, request);
  const { scope } = validate(EndUserLogoutBody, request.body ?? {});
  await deps.tenants.transaction(project.projectId, (tx) =>
    scope === 'global' ? store.revokeAllSessions(tx, claims.sub) : store.revokeSession(tx, claims.session_id),
  );
}
