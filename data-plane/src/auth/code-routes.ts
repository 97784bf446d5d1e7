/**
 * The `/rest/v1/auth` flows that go through an emailed code: verify-email
 * (and resend), password reset, magic links. Issuing and verifying are rate
 * limited per address and per client IP; answers never tell whether an
 * address has an account, neither by their content nor by their time (the
 * codes to existing accounts are mailed after answering).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, EmailOnlyBody, ResendBody, ResetPasswordBody, VerifyCodeBody, validate, type EndUserSession } from '@baseplane/contracts';
import * as store from '@baseplane/contracts/user-directory';
import { resolveProject, userTokenOf } from '../http/resolve-project';
import { checkPassword, newSession, normalEmail, openSession } from './auth-routes';
import { issueLimits, limit, mailCode, otpInvalid, redeem, sendCodeAfterAnswer, verifyLimits } from './code-flow';
import type { AuthDependencies } from './dependencies';
import { hashPassword } from './passwords';
import { authenticate } from './session-guard';

export const SENT = { message: 'if this address can receive a code, one is on its way' };

export function bindCodeRoutes(app: FastifyInstance, deps: AuthDependencies): void {
  app.post('/auth/resend', (request) => resend(deps, request));
  app.post('/auth/verify-email', (request) => verifyEmail(deps, request));
  app.post('/auth/forgot-password', (request) => forgotPassword(deps, request));
  app.post('/auth/reset-password', (request) => resetPassword(deps, request));
  app.post('/auth/magic-link', (request) => magicLink(deps, request));
  app.post('/auth/magic-link/verify', (request) => verifyMagicLink(deps, request));
}

async function resend(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { email, type } = validate(ResendBody, request.body);
  await limit(deps, project, issueLimits(request, email));
  const recipient = await deps.tenants.transaction(project.projectId, async (tx) => {
    // Only a change still pending to this very address: a superseded or completed one gets nothing, and the live one is not disturbed.
    if (type === 'email_change') return deps.codes.pendingEmailChange(tx, email);
    const user = await store.findUserByEmail(tx, email);
    return user && !user.emailVerified ? { userId: user.id, email: user.email } : null;
  });
  if (recipient) sendCodeAfterAnswer(deps, project, type, recipient.email, recipient.userId);
  return SENT;
}

/**
 * Confirms an address with the sign-up code; whose code it is comes from the
 * email, the Bearer token, or the code itself. The API key as the Bearer (how
 * Supabase-style clients call without a session) is no session, as on the data API.
 */
async function verifyEmail(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { otp, email } = validate(VerifyCodeBody, request.body);
  const signedIn = email === undefined && userTokenOf(request) !== undefined ? await authenticate(deps, request) : undefined;
  const owner = email !== undefined ? { email } : signedIn ? { userId: signedIn.claims.sub } : undefined;
  await limit(deps, project, verifyLimits(request, 'signup', email ?? signedIn?.claims.sub));
  const code = await redeem(deps, project, ['signup'], otp, owner);
  const user = await deps.tenants.transaction(project.projectId, async (tx) => {
    const found = code.userId ? await store.findUser(tx, code.userId) : await store.findUserByEmail(tx, code.email);
    if (!found) throw otpInvalid();
    return store.markEmailVerified(tx, found.id);
  });
  return { user: store.publicUser(user) };
}

async function forgotPassword(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { email } = validate(EmailOnlyBody, request.body);
  await limit(deps, project, issueLimits(request, email));
  const user = await deps.tenants.transaction(project.projectId, (tx) => store.findUserByEmail(tx, email));
  if (user) sendCodeAfterAnswer(deps, project, 'recovery', user.email, user.id);
  return SENT;
}

async function resetPassword(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const { otp, newPassword, email } = validate(ResetPasswordBody, request.body);
  checkPassword(project, newPassword);
  await limit(deps, project, verifyLimits(request, 'recovery', email));
  const code = await redeem(deps, project, ['recovery'], otp, email === undefined ? undefined : { email });
  const passwordHash = await hashPassword(newPassword);
  await deps.tenants.transaction(project.projectId, async (tx) => {
    if (!code.userId) throw otpInvalid();
    // The code reached the address, so the address is verified (as GoTrue's recovery does).
    await store.markEmailVerified(tx, code.userId);
    await store.setPassword(tx, code.userId, passwordHash);
    // A reset is what someone does whose password leaked: every session ends.
    await store.revokeAllSessions(tx, code.userId);
  });
  return { message: 'password changed; sign in again' };
}

/**
 * Mails a sign-in code; an unknown address becomes a user only while the
 * project takes sign-ups, and only if its code is mailed (a mail server that
 * refuses is a 503 and undoes the user, as at sign-up). An existing user's
 * code goes out after the answer: with sign-ups closed, a known and an
 * unknown address get the same answer in the same time. Requests at once
 * for a new address make one user; the others go on as for an existing one.
 */
async function magicLink(deps: AuthDependencies, request: FastifyRequest) {
  const { project } = resolveProject(deps.directory, request);
  const email = normalEmail(validate(EmailOnlyBody, request.body).email);
  await limit(deps, project, issueLimits(request, email));
  const findUser = () => deps.tenants.transaction(project.projectId, (tx) => store.findUserByEmail(tx, email));
  const found = await findUser();
  if (found) {
    sendCodeAfterAnswer(deps, project, 'magiclink', found.email, found.id);
  } else if (project.authSettings.allowSignups) {
    const created = await deps.tenants
      .transaction(project.projectId, async (tx) => {
        const user = await store.createPasswordlessUser(tx, email);
        await mailCode(deps, project, 'magiclink', user.email, await deps.codes.issue(tx, project.projectId, 'magiclink', user.email, user.id, project.authSettings.otpTtl));
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.code === 'user_already_exists') return false;
        throw error;
      });
    // A request at the same time made the user first (its insert held ours until it committed): this one is then
    // for an existing user, as if it had found them.
    if (!created) {
      const user = await findUser();
      if (user) sendCodeAfterAnswer(deps, project, 'magiclink', user.email, user.id);
    }
  }
  return SENT;
}

/** Exchanges a sign-in code (magic link, or an invitation) for a session. */
async function verifyMagicLink(deps: AuthDependencies, request: FastifyRequest): Promise<EndUserSession> {
  const { project } = resolveProject(deps.directory, request);
  const { otp, email } = validate(VerifyCodeBody, request.body);
  await limit(deps, project, verifyLimits(request, 'magiclink', email));
  const code = await redeem(deps, project, ['magiclink', 'invite'], otp, email === undefined ? undefined : { email });
  const { user, sessionId, refreshToken } = await deps.tenants.transaction(project.projectId, async (tx) => {
    if (!code.userId) throw otpInvalid();
    // The code reached the address, so the address is verified; if it was not, the password and sessions
    // of whoever signed it up go (a pre-account takeover), before this sign-in's session opens.
    await store.verifyBySignInCode(tx, code.userId);
    // The session answers the user as this sign-in leaves them (its lastSignInAt).
    const user = await store.touchSignIn(tx, code.userId);
    if (!user) throw otpInvalid();
    return { user, ...(await openSession(deps, tx, project, user.id)) };
  });
  return newSession(deps, project, user, sessionId, refreshToken);
}
