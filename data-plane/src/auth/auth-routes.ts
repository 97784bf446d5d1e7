/**
 * `/rest/v1/auth/*`, the project-user directory: sign-up, sign-in, refresh,
 * me and logout. Each handler: resolve the project from the apikey, validate,
 * act in one transaction on the tenant's `auth` schema, answer. The project's
 * auth settings (from the directory) decide sign-ups, verification and lifetimes.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ApiError,
  checkEmailAddress,
  emailKey,
  EndUserLogoutBody,
  EndUserRefreshBody,
  EndUserSigninBody,
  EndUserSignupBody,
  validate,
  type EndUserSession,
} from '@baseplane/contracts';
import * as store from '@baseplane/contracts/user-directory';
import type { SqlClient } from '@baseplane/contracts/user-directory';
import type { DirectoryEntry } from '../directory/project-directory';
import { resolveProject } from '../http/resolve-project';
import { giveBackSlots, issueLimits, limit, mailCode, signinFailureLimits, signupLimits, takeFailureSlots } from './code-flow';
import type { AuthDependencies } from './dependencies';
import { hashPassword, verifyPassword } from './passwords';
import { hashOf } from './refresh-tokens';
import { authenticate } from './session-guard';

export function bindAuthRoutes(app: FastifyInstance, deps: AuthDependencies): void {
  app.post('/auth/signup', (request, reply) => signup(deps, request).then((session) => reply.status(201).send(session)));
  app.post('/auth/signin', (request) => signin(deps, request));
  app.post('/auth/refresh', (request) => refresh(deps, request));
  app.get('/auth/me', (request) => me(deps, request));
  app.post('/auth/logout', (request, reply) => logout(deps, request).then(() => reply.status(204).send()));
}

/** A new session of `userId` and its first refresh token, living as long as the project says. */
export async function openSession(deps: AuthDependencies, tx: SqlClient, project: DirectoryEntry, userId: string): Promise<{ sessionId: string; refreshToken: string }> {
  const sessionId = randomUUID();
  const refreshToken = deps.refreshTokens.mint(project.projectId, sessionId, 0);
  await store.startSession(tx, userId, { id: sessionId, refreshHash: hashOf(refreshToken), ttlSeconds: project.authSettings.refreshTokenTtl });
  deps.housekeeping.wrote(project.projectId);
  return { sessionId, refreshToken };
}

export async function newSession(deps: AuthDependencies, project: DirectoryEntry, user: store.StoredUser, sessionId: string, refreshToken: string): Promise<EndUserSession> {
  const accessToken = await deps.tokens.sign(project, { sub: user.id, email: user.email, email_verified: user.emailVerified, session_id: sessionId });
  return { accessToken, refreshToken, expiresIn: project.authSettings.accessTokenTtl, tokenType: 'bearer', user: store.publicUser(user) };
}

/** A new password must be as long as the project asks (its `passwordMinLength`). */
export function checkPassword(project: DirectoryEntry, password: string): void {
  const min = project.authSettings.passwordMinLength;
  if (password.length < min) throw new ApiError(400, 'weak_password', `password must have at least ${min} characters`);
}

/** An address as it is stored: checked, and in its normal form (contracts' `emailKey`). */
export function normalEmail(email: string): string {
  return emailKey(checkEmailAddress(email));
}

const notVerified = () => new ApiError(403, 'email_not_verified', 'confirm your email address first', null, 'enter the emailed code through POST /rest/v1/auth/verify-email; POST /rest/v1/auth/resend sends another');

async function signup(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project, kind } = resolveProject(deps.directory, request);
  const body = validate(EndUserSignupBody, request.body);
  const settings = project.authSettings;
  if (!settings.allowSignups) throw new ApiError(403, 'signups_disabled', 'this project does not take sign-ups');
  const email = normalEmail(body.email);
  checkPassword(project, body.password);
  // Counted before the password is hashed: a flood of sign-ups is refused before it costs argon2id's time and memory.
  const limits = [...(kind === 'service' ? [] : signupLimits(request)), ...(settings.requireEmailVerification ? issueLimits(request, email) : [])];
  if (limits.length > 0) await limit(deps, project, limits);
  const passwordHash = await hashPassword(body.password);
  const { password: _, ...profile } = body;
  const { user, sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    const user = await store.createUser(tx, { ...profile, email, passwordHash, signingIn: true });
    // The code goes out before the user is committed: a mail server that refuses undoes the sign-up.
    if (settings.requireEmailVerification) {
      await mailCode(deps, project, 'signup', user.email, await deps.codes.issue(tx, project.projectId, 'signup', user.email, user.id, settings.otpTtl));
    }
    return { user, ...(await openSession(deps, tx, project, user.id)) };
  });
  return newSession(deps, project, user, sessionId, refreshToken);
}

async function signin(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const body = validate(EndUserSigninBody, request.body);
  const failures = signinFailureLimits(request, body.email);
  const found = await deps.tenants.transaction(project.projectId, async (tx) => {
    // Every try takes a failure slot before its password is checked; with none left it is held back, the right
    // password too: guessing stops there, however many tries come at once.
    await takeFailureSlots(tx, failures);
    return store.findUserByEmail(tx, body.email);
  });
  deps.housekeeping.wrote(project.projectId);
  // Same answer, same work, for an unknown email and a wrong password; both keep their slots as failures.
  if (!(await verifyPassword(found?.passwordHash, body.password)) || !found) {
    throw new ApiError(400, 'invalid_credentials', 'invalid email or password');
  }
  // The right password: a sign-in that succeeds never counts, nor one refused for an unverified address.
  if (project.authSettings.requireEmailVerification && !found.emailVerified) {
    await deps.tenants.transaction(project.projectId, (tx) => giveBackSlots(tx, failures));
    throw notVerified();
  }
  const { user, sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    await giveBackSlots(tx, failures);
    // Only if the password checked is still the user's (a reset or a takeover may have come meanwhile); the
    // session answers the user as this sign-in leaves them (its lastSignInAt).
    const user = await store.touchPasswordSignIn(tx, found.id, found.passwordHash!);
    if (!user) throw new ApiError(400, 'invalid_credentials', 'invalid email or password');
    return { user, ...(await openSession(deps, tx, project, user.id)) };
  });
  return newSession(deps, project, user, sessionId, refreshToken);
}

async function refresh(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const { refreshToken } = validate(EndUserRefreshBody, request.body);
  const settings = project.authSettings;
  const invalid = () => new ApiError(401, 'refresh_token_invalid', 'refresh token is invalid or expired');
  const presented = deps.refreshTokens.read(project.projectId, refreshToken);
  if (!presented) throw invalid();
  const next = deps.refreshTokens.mint(project.projectId, presented.sessionId, presented.generation + 1);
  const nextHash = hashOf(next);
  const renewed = await deps.tenants.quick(project.projectId, (db) =>
    store.renewRefreshToken(db, presented, nextHash, settings.refreshTokenTtl, settings.requireEmailVerification),
  );
  // Anything but the current token is judged on the pool, where a revocation is committed durably.
  const outcome: store.RotatedRefreshToken = renewed
    ? { kind: 'renewed', user: renewed }
    : await deps.tenants.read(project.projectId, (db) => store.judgeRefreshToken(db, presented, nextHash, settings.requireEmailVerification));
  // A reuse has revoked the session for good, in the same statement.
  if (outcome.kind === 'reused') throw new ApiError(401, 'refresh_token_reused', 'refresh token was already used; the session is revoked');
  if (outcome.kind === 'invalid') throw invalid();
  if (outcome.kind === 'unverified') throw notVerified();
  const { user: _, ...session } = await newSession(deps, project, outcome.user, presented.sessionId, next);
  return session;
}

async function me(deps: AuthDependencies, request: FastifyRequest) {
  return store.publicUser((await authenticate(deps, request, { tokenAlone: true })).user);
}

async function logout(deps: AuthDependencies, request: FastifyRequest): Promise<void> {
  const { project, claims } = await authenticate(deps, request);
  const { scope } = validate(EndUserLogoutBody, request.body ?? {});
  await deps.tenants.transaction(project.projectId, (tx) =>
    scope === 'global' ? store.revokeAllSessions(tx, claims.sub) : store.revokeSession(tx, claims.session_id),
  );
}
