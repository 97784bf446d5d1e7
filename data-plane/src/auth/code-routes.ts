/**
 * The `/rest/v1/auth` flows that go through an emailed code: verify-email
 * (and resend), password reset, magic links. Issuing and verifying are rate
 * limited per address and per client IP; answers never tell whether an
 * address has an account.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ApiError,
  EMAIL_PATTERN,
  EmailOnlyBody,
  ResendBody,
  ResetPasswordBody,
  VerifyCodeBody,
  validate,
  type EndUserSession,
} from '@baseplane/contracts';
import type { DirectoryEntry } from '../directory/project-directory';
import { resolveProject } from '../http/resolve-project';
import { codeEmail, type CodePurpose } from '../mail/templates';
import { CODE_TTL_SECONDS } from './codes';
import { hashPassword } from './passwords';
import { LIMITS, hit, type Limit } from './rate-limits';
import { MIN_PASSWORD_LENGTH, newSession, type AuthDependencies } from './auth-routes';
import * as store from './user-store';

const SENT = { message: 'if this address can receive a code, one is on its way' };

export function bindCodeRoutes(app: FastifyInstance, deps: AuthDependencies): void {
  app.post('/auth/resend', (request) => resend(deps, request));
  app.post('/auth/verify-email', (request) => verifyEmail(deps, request));
  app.post('/auth/forgot-password', (request) => forgotPassword(deps, request));
  app.post('/auth/reset-password', (request) => resetPassword(deps, request));
  app.post('/auth/magic-link', (request) => magicLink(deps, request));
  app.post('/auth/magic-link/verify', (request) => verifyMagicLink(deps, request));
}

/** Counts the request against each bucket, committed even when refused; 429 when any is over. */
async function limit(deps: AuthDependencies, project: DirectoryEntry, buckets: [string, Limit][]): Promise<void> {
  const refusal = await deps.tenants.transaction(project.projectId, async (tx) => {
    for (const [bucket, limit] of buckets) {
      const over = await hit(tx, bucket, limit);
      if (over) return over;
    }
    return undefined;
  });
  if (refusal) throw refusal;
}

const issueLimits = (request: FastifyRequest, purpose: CodePurpose, email: string): [string, Limit][] => [
  [`issue:${purpose}:${email.toLowerCase()}`, LIMITS.issuePerAddress],
  [`issue:ip:${request.ip}`, LIMITS.issuePerIp],
];
const verifyLimits = (request: FastifyRequest, purpose: CodePurpose, email: string | undefined): [string, Limit][] => [
  ...(email ? [[`verify:${purpose}:${email.toLowerCase()}`, LIMITS.verifyPerAddress] as [string, Limit]] : []),
  [`verify:ip:${request.ip}`, LIMITS.verifyPerIp],
];

/** Issues a code (committed first) and mails it; a mail server that refuses is a 503, not a silent success. */
async function sendCode(deps: AuthDependencies, project: DirectoryEntry, purpose: CodePurpose, email: string, userId: string | null): Promise<void> {
  const code = await deps.tenants.transaction(project.projectId, (tx) => deps.codes.issue(tx, project.projectId, purpose, email, userId));
  await deps.mailer.send({ to: email, ...codeEmail(purpose, { projectName: project.name, code, ttlMinutes: CODE_TTL_SECONDS / 60 }) });
}

/** Redeems a code in its own transaction (tries and burns are kept), raising the refusal after commit. */
async function redeem(deps: AuthDependencies, project: DirectoryEntry, purpose: CodePurpose, otp: string, email?: string) {
  const outcome = await deps.tenants.transaction(project.projectId, (tx) => deps.codes.redeem(tx, project.projectId, purpose, otp, email));
  if (outcome instanceof ApiError) throw outcome;
  return outcome;
}

async function resend(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { email, type } = validate(ResendBody, request.body);
  await limit(deps, project, issueLimits(request, type, email));
  if (type === 'signup') {
    const user = await deps.tenants.transaction(project.projectId, (tx) => store.findUserByEmail(tx, email));
    if (user && !user.emailVerified) await sendCode(deps, project, 'signup', user.email, user.id);
  }
  return SENT;
}

async function verifyEmail(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { otp, email } = validate(VerifyCodeBody, request.body);
  await limit(deps, project, verifyLimits(request, 'signup', email));
  const code = await redeem(deps, project, 'signup', otp, email);
  const user = await deps.tenants.transaction(project.projectId, async (tx) => {
    const found = code.userId ? await store.findUser(tx, code.userId) : await store.findUserByEmail(tx, code.email);
    if (!found) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
    return store.markEmailVerified(tx, found.id);
  });
  return { user: store.publicUser(user) };
}

async function forgotPassword(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { email } = validate(EmailOnlyBody, request.body);
  await limit(deps, project, issueLimits(request, 'recovery', email));
  const user = await deps.tenants.transaction(project.projectId, (tx) => store.findUserByEmail(tx, email));
  if (user) await sendCode(deps, project, 'recovery', user.email, user.id);
  return SENT;
}

async function resetPassword(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { otp, newPassword, email } = validate(ResetPasswordBody, request.body);
  if (newPassword.length < MIN_PASSWORD_LENGTH) throw new ApiError(400, 'weak_password', `password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  await limit(deps, project, verifyLimits(request, 'recovery', email));
  const code = await redeem(deps, project, 'recovery', otp, email);
  const passwordHash = await hashPassword(newPassword);
  await deps.tenants.transaction(project.projectId, async (tx) => {
    if (!code.userId) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
    await store.setPassword(tx, code.userId, passwordHash);
    // A reset is what someone does whose password leaked: every session ends.
    await store.revokeAllSessions(tx, code.userId);
  });
  return { message: 'password changed; sign in again' };
}

async function magicLink(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { email } = validate(EmailOnlyBody, request.body);
  if (!EMAIL_PATTERN.test(email)) throw new ApiError(400, 'invalid_email', 'invalid email address');
  await limit(deps, project, issueLimits(request, 'magiclink', email));
  const user = await deps.tenants.transaction(project.projectId, async (tx) => (await store.findUserByEmail(tx, email)) ?? store.createPasswordlessUser(tx, email));
  await sendCode(deps, project, 'magiclink', user.email, user.id);
  return SENT;
}

async function verifyMagicLink(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const { otp, email } = validate(VerifyCodeBody, request.body);
  await limit(deps, project, verifyLimits(request, 'magiclink', email));
  const code = await redeem(deps, project, 'magiclink', otp, email);
  const { user, sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    if (!code.userId) throw new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
    // The code reached the address, so the address is verified.
    const user = await store.markEmailVerified(tx, code.userId);
    await store.touchSignIn(tx, user.id);
    const sessionId = await store.startSession(tx, user.id);
    return { user, sessionId, refreshToken: await store.issueRefreshToken(tx, sessionId, user.id) };
  });
  return newSession(deps, project, user, sessionId, refreshToken);
}
