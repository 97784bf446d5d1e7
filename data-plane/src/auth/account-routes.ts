/**
 * `/rest/v1/auth` for a signed-in user changing their account — PATCH /me,
 * change-email, reauth — and the service key's invite. A password change,
 * and a request to change the email (the way to a password reset through
 * another address), may need a recent reauthentication (the project's
 * `requireReauthForPasswordChange`), which it spends: the next needs another.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, ChangeEmailBody, InviteBody, OtpOnlyBody, UpdateMeBody, validate } from '@baseplane/contracts';
import * as store from '@baseplane/contracts/user-directory';
import type { DirectoryEntry } from '../directory/project-directory';
import { resolveProject } from '../http/resolve-project';
import { checkPassword, normalEmail } from './auth-routes';
import { issueLimits, limit, mailCode, redeem, verifyLimits } from './code-flow';
import type { AuthDependencies } from './dependencies';
import { hashPassword } from './passwords';
import { authenticate } from './session-guard';

export function bindAccountRoutes(app: FastifyInstance, deps: AuthDependencies): void {
  app.patch('/auth/me', (request) => updateMe(deps, request));
  app.post('/auth/change-email', (request) => changeEmail(deps, request));
  app.post('/auth/change-email/verify', (request) => verifyEmailChange(deps, request));
  app.post('/auth/reauth', (request) => reauth(deps, request));
  app.post('/auth/reauth/verify', (request) => verifyReauth(deps, request));
  app.post('/auth/invite', (request) => invite(deps, request));
}

const noUser = () => new ApiError(401, 'invalid_token', 'the user of this token no longer exists');
const sessionEnded = () => new ApiError(401, 'invalid_token', 'the session of this token has ended');
const reauthRequired = (change: string) =>
  new ApiError(403, 'reauthentication_required', `${change} needs a recent reauthentication`, null, 'POST /rest/v1/auth/reauth, then /rest/v1/auth/reauth/verify with the emailed code');

async function updateMe(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims } = await authenticate(deps, request);
  const { password, ...profile } = validate(UpdateMeBody, request.body);
  if (password !== undefined) checkPassword(project, password);
  const passwordHash = password === undefined ? undefined : await hashPassword(password);
  const user = await deps.tenants.transaction(project.projectId, async (tx) => {
    if (passwordHash !== undefined) {
      // The token was checked before the password was hashed: a reset or a takeover since then has ended its session.
      if (!(await store.holdForSessionChange(tx, claims.sub, claims.session_id))) throw sessionEnded();
      if (project.authSettings.requireReauthForPasswordChange && !(await store.spendReauthentication(tx, claims.session_id))) {
        throw reauthRequired('changing the password');
      }
      await store.setPassword(tx, claims.sub, passwordHash);
      // Whoever else holds a session of this account loses it; the one making the change stays.
      await store.revokeOtherSessions(tx, claims.sub, claims.session_id);
    }
    return Object.keys(profile).length > 0 ? store.updateUser(tx, claims.sub, profile) : store.findUser(tx, claims.sub);
  });
  if (!user) throw noUser();
  return store.publicUser(user);
}

/**
 * Sends a code to the new address; the email changes only when that code
 * comes back. Where a password change needs a reauthentication, so does this
 * request (else a stolen token moves the account to its holder's address and
 * resets the password there), and the request spends it, not its verify: the
 * code to the new address then proves only that address. Spent in the
 * transaction that issues the code, first: a refusal (a taken address, a
 * mail server that fails) gives it back, and tells nothing before it.
 */
async function changeEmail(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims } = await authenticate(deps, request);
  const newEmail = normalEmail(validate(ChangeEmailBody, request.body).newEmail);
  await limit(deps, project, issueLimits(request, newEmail));
  await deps.tenants.transaction(project.projectId, async (tx) => {
    if (project.authSettings.requireReauthForPasswordChange && !(await store.spendReauthentication(tx, claims.session_id))) {
      throw reauthRequired('changing the email');
    }
    const holder = await store.findUserByEmail(tx, newEmail);
    if (holder) throw new ApiError(409, 'user_already_exists', holder.id === claims.sub ? 'this is already your email' : 'a user with this email already exists');
    const code = await deps.codes.issue(tx, project.projectId, 'email_change', newEmail, claims.sub, project.authSettings.otpTtl);
    await mailCode(deps, project, 'email_change', newEmail, code);
  });
  return { message: `a code was sent to ${newEmail}` };
}

async function verifyEmailChange(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims } = await authenticate(deps, request);
  const { otp } = validate(OtpOnlyBody, request.body);
  await limit(deps, project, verifyLimits(request, 'email_change', claims.sub));
  const code = await redeem(deps, project, ['email_change'], otp, { userId: claims.sub });
  // The code reached the new address: it becomes the email, verified.
  const user = await deps.tenants.transaction(project.projectId, (tx) => store.updateUser(tx, claims.sub, { email: code.email, emailVerified: true }));
  if (!user) throw noUser();
  return { user: store.publicUser(user) };
}

async function reauth(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims, user } = await authenticate(deps, request);
  await limit(deps, project, issueLimits(request, claims.sub));
  await deps.tenants.transaction(project.projectId, async (tx) => {
    const code = await deps.codes.issue(tx, project.projectId, 'reauthentication', user.email, user.id, project.authSettings.otpTtl);
    await mailCode(deps, project, 'reauthentication', user.email, code);
  });
  return { message: 'a code was sent to your email' };
}

async function verifyReauth(deps: AuthDependencies, request: FastifyRequest) {
  const { project, claims } = await authenticate(deps, request);
  const { otp } = validate(OtpOnlyBody, request.body);
  await limit(deps, project, verifyLimits(request, 'reauthentication', claims.sub));
  await redeem(deps, project, ['reauthentication'], otp, { userId: claims.sub });
  const until = await deps.tenants.transaction(project.projectId, (tx) => store.markReauthenticated(tx, claims.session_id));
  return { reauthenticatedUntil: until.toISOString() };
}

/** A redirect target must lie under the project's site URL or one of its redirect URLs. */
function checkRedirect(project: DirectoryEntry, redirectTo: string): void {
  const allowed = [project.authSettings.siteUrl, ...project.authSettings.redirectUrls].filter((url): url is string => url !== null);
  let target: URL;
  try {
    target = new URL(redirectTo);
  } catch {
    throw new ApiError(400, 'redirect_to_not_allowed', 'redirectTo is not a URL');
  }
  // Under a path means that path or below it, segment by segment: /welcome allows /welcome/team, not /welcome-evil.
  const under = (base: string) => {
    // Settings recorded before the API checked their URLs may hold one that does not parse: it allows nothing.
    if (!URL.canParse(base)) return false;
    const root = new URL(base);
    const folder = root.pathname.endsWith('/') ? root.pathname : `${root.pathname}/`;
    return target.origin === root.origin && (target.pathname === root.pathname || target.pathname.startsWith(folder));
  };
  if (!allowed.some(under)) {
    throw new ApiError(400, 'redirect_to_not_allowed', 'redirectTo is not among the project’s redirect URLs', null, 'add it to siteUrl or redirectUrls in the project’s auth settings');
  }
}

/** Service key only: makes a passwordless user and mails a code that signs them in (POST /auth/magic-link/verify). */
async function invite(deps: AuthDependencies, request: FastifyRequest) {
  const { project, kind } = resolveProject(deps.directory, request);
  if (kind !== 'service') throw new ApiError(403, 'service_key_required', 'inviting users needs the service key');
  const { email: typed, redirectTo } = validate(InviteBody, request.body);
  const email = normalEmail(typed);
  if (redirectTo !== undefined) checkRedirect(project, redirectTo);
  const user = await deps.tenants.transaction(project.projectId, async (tx) => {
    const user = await store.createPasswordlessUser(tx, email);
    const code = await deps.codes.issue(tx, project.projectId, 'invite', user.email, user.id, project.authSettings.otpTtl);
    await mailCode(deps, project, 'invite', user.email, code, redirectTo);
    return user;
  });
  return { user: store.publicUser(user) };
}
