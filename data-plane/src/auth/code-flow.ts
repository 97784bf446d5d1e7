/**
 * The steps every emailed-code flow shares: counting a request against the
 * rate limits, issuing a code and mailing it, redeeming one. Issuing and
 * verifying are limited per address and per client IP; a code given without
 * its address also spends the project's budget of wrong code-only tries.
 */
import type { FastifyRequest } from 'fastify';
import type { PoolClient } from 'pg';
import { ApiError, emailKey } from '@baseplane/contracts';
import { giveBackAll, hitAll, takeSlots, type Buckets, type Limit } from '@baseplane/contracts/rate-limits';
import type { DirectoryEntry } from '../directory/project-directory';
import { codeEmail, type CodePurpose } from '../mail/templates';
import type { CodeOwner, RedeemedCode } from './codes';
import type { AuthDependencies } from './dependencies';
import { LIMITS, TABLE, giveBack } from './rate-limits';

/** Counts the request against each bucket, committed even when refused; 429 when any is over. */
export async function limit(deps: AuthDependencies, project: DirectoryEntry, buckets: Buckets): Promise<void> {
  const refusal = await deps.tenants.transaction(project.projectId, (tx) => hitAll(tx, TABLE, buckets));
  deps.housekeeping.wrote(project.projectId);
  if (refusal) throw refusal;
}

/** Takes a slot of every bucket before a try that counts only when it fails (contracts' {@link takeSlots}). */
export const takeFailureSlots = (tx: PoolClient, buckets: Buckets): Promise<void> => takeSlots(tx, TABLE, buckets);

/** Gives back the slots {@link takeFailureSlots} took, for a try that succeeded. */
export const giveBackSlots = (tx: PoolClient, buckets: Buckets): Promise<void> => giveBackAll(tx, TABLE, buckets);

/**
 * Buckets of issuing a code to `target` (an address, or a user id). The
 * address's bucket is one for every purpose: a magic link and a
 * recovery code each open the account, so their limits are the address's.
 */
export const issueLimits = (request: FastifyRequest, target: string): Buckets => [
  [`issue:address:${emailKey(target)}`, LIMITS.issuePerAddress],
  [`issue:ip:${request.ip}`, LIMITS.issuePerIp],
];

/**
 * The project's budget of wrong tries of codes of `purpose` given alone: such
 * a code is matched among all live codes of the purpose, so a wrong one
 * burns no code, and guesses from many IPs at many issued codes would
 * otherwise find one at a rate that grows with the square of the IPs.
 */
export const codeOnlyBudget = (purpose: CodePurpose): [string, Limit] => [`verify:${purpose}:code-only`, LIMITS.codeOnlyFailures];

/**
 * Buckets of trying a code for `purpose`; `target` when the caller names
 * whose code it is (one bucket for every purpose, as for issuing), else the
 * code-only budget (its slot, taken here before the lookup, goes back in
 * {@link redeem} when the code is accepted).
 */
export const verifyLimits = (request: FastifyRequest, purpose: CodePurpose, target: string | undefined): Buckets => [
  [`verify:ip:${request.ip}`, LIMITS.verifyPerIp],
  target ? [`verify:address:${emailKey(target)}`, LIMITS.verifyPerAddress] : codeOnlyBudget(purpose),
];

/** Buckets of failed password sign-ins: one address tried from one client IP, and all tries from that IP. */
export const signinFailureLimits = (request: FastifyRequest, email: string): Buckets => [
  [`signin-failed:${request.ip}:${emailKey(email)}`, LIMITS.signinFailuresPerAddressAndIp],
  [`signin-failed:ip:${request.ip}`, LIMITS.signinFailuresPerIp],
];

/**
 * Buckets of a sign-up from the request's client IP, every try counted (a
 * taken address too): an app's own key spends them, the service key none.
 */
export const signupLimits = (request: FastifyRequest): Buckets => [[`signup:ip:${request.ip}`, LIMITS.signupsPerIp]];

/** The email carrying `code`, in the project's words and with its code lifetime; `continueAt` is where the app takes it. */
export async function mailCode(deps: AuthDependencies, project: DirectoryEntry, purpose: CodePurpose, to: string, code: string, continueAt?: string): Promise<void> {
  const ttlMinutes = Math.max(1, Math.round(project.authSettings.otpTtl / 60));
  await deps.mailers.for(project).send({ to, projectId: project.projectId, ...codeEmail(purpose, { projectName: project.name, code, ttlMinutes, continueAt }) });
}

/**
 * Issues a code and mails it after the answer has gone, for the answers that
 * must not tell whether an address has an account (forgot-password, resend,
 * a magic link to an existing user): a known and an unknown address then
 * take the same path and the same time, and a mail server that refuses
 * cannot show as a 503 that only known addresses get. The code is committed
 * before the mail goes (so it works as soon as it arrives) and withdrawn if
 * the mail fails; the failure is logged, never with the code or the address.
 */
export function sendCodeAfterAnswer(deps: AuthDependencies, project: DirectoryEntry, purpose: CodePurpose, email: string, userId: string): void {
  deps.afterAnswer.run(() =>
    (async () => {
      const code = await deps.tenants.transaction(project.projectId, (tx) => deps.codes.issue(tx, project.projectId, purpose, email, userId, project.authSettings.otpTtl));
      try {
        await mailCode(deps, project, purpose, email, code);
      } catch (error) {
        await deps.tenants.transaction(project.projectId, (tx) => deps.codes.withdraw(tx, project.projectId, purpose, code));
        throw error;
      }
    })().catch((error: unknown) => {
      const failure = error as { code?: string; details?: unknown; cause?: unknown };
      deps.log.error({ err: failure.cause ?? error, code: failure.code, details: failure.details, projectId: project.projectId, purpose }, 'a code email sent after the answer failed; the code is withdrawn');
    }),
  );
}

/**
 * Redeems a code in its own transaction (tries and burns are kept), raising
 * the refusal after commit. A code given alone that is accepted was no
 * guess: it gives back the slot of the code-only budget of `purposes[0]` that
 * {@link verifyLimits} took for it.
 */
export async function redeem(deps: AuthDependencies, project: DirectoryEntry, purposes: [CodePurpose, ...CodePurpose[]], otp: string, owner: CodeOwner): Promise<RedeemedCode> {
  const outcome = await deps.tenants.transaction(project.projectId, async (tx) => {
    const redeemed = await deps.codes.redeem(tx, project.projectId, purposes, otp, owner);
    if (owner === undefined && !(redeemed instanceof ApiError)) await giveBack(tx, ...codeOnlyBudget(purposes[0]));
    return redeemed;
  });
  if (outcome instanceof ApiError) throw outcome;
  return outcome;
}

export const otpInvalid = () => new ApiError(422, 'otp_invalid', 'the code is invalid or has been used');
