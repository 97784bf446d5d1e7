/**
 * `client.auth`'s emailed-code flows and account changes against the real
 * stack, codes read from the stack's dev inbox: email verification (and
 * resend), password reset, magic links, profile and password changes, email
 * change, reauthentication and invitations — each with its event, and each
 * refusal resolved as an error with its status.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, memoryStorage, type BaseplaneClient } from '../src/index';
import { codeFor, inbox } from '../../deploy/test/inbox';
import { appClient, clientProject, eventLog, newEmail, PASSWORD, type ClientProject } from './client-fixtures';

let p: ClientProject;
const code = (to: string, options?: { after?: number; mentions?: string }) => codeFor(p.operator.token, to, options);

beforeAll(async () => {
  p = await clientProject('client codes');
});

async function signedUp(): Promise<{ client: BaseplaneClient; email: string; log: ReturnType<typeof eventLog> }> {
  const client = appClient(p);
  const log = eventLog(client);
  const email = newEmail();
  expect((await client.auth.signUp({ email, password: PASSWORD })).error).toBeNull();
  return { client, email, log };
}

describe('email verification', () => {
  it('resends the sign-up code and confirms the address with it (EMAIL_VERIFIED, the kept user updated)', async () => {
    const { client, email, log } = await signedUp();
    expect(await client.auth.resend({ email, type: 'signup' })).toEqual({ data: { message: expect.any(String) }, error: null });
    const { data, error } = await client.auth.verifyEmail({ otp: await code(email) });
    expect(error).toBeNull();
    expect(data!.user).toMatchObject({ email, emailVerified: true });
    expect(log.events.at(-1)).toBe('EMAIL_VERIFIED');
    expect(log.sessions.at(-1)?.user.emailVerified).toBe(true);
    expect((await client.auth.getSession()).data?.session?.user.emailVerified).toBe(true);
  });

  it('refuses a wrong code with 422 otp_invalid, and a resend of an unknown kind with 400', async () => {
    const { client, email } = await signedUp();
    expect((await client.auth.verifyEmail({ otp: '000000', email })).error).toMatchObject({ code: 'otp_invalid', status: 422 });
    expect((await client.auth.resend({ email, type: 'recovery' as 'signup' })).error).toMatchObject({ code: 'invalid_request', status: 400 });
  });
});

describe('password reset', () => {
  it('mails a code, sets the new password with it (PASSWORD_RECOVERY) and the new password signs in', async () => {
    const { email } = await signedUp();
    const client = appClient(p);
    const log = eventLog(client);
    expect((await client.auth.forgotPassword({ email })).data).toEqual({ message: expect.any(String) });
    const { error } = await client.auth.resetPassword({ otp: await code(email), newPassword: 'a brand new password', email });
    expect(error).toBeNull();
    expect(log.events).toEqual(['INITIAL_SESSION', 'PASSWORD_RECOVERY']);
    expect((await client.auth.signIn({ email, password: PASSWORD })).error?.code).toBe('invalid_credentials');
    expect((await client.auth.signIn({ email, password: 'a brand new password' })).error).toBeNull();
  });

  it('forgets the session of a client that reset its own user’s password (the server ended it): SIGNED_OUT, then PASSWORD_RECOVERY', async () => {
    const storage = memoryStorage();
    const client = appClient(p, { auth: { storage, storageKey: 'own-reset' } });
    const log = eventLog(client);
    const email = newEmail();
    expect((await client.auth.signUp({ email, password: PASSWORD })).error).toBeNull();
    const before = (await inbox(p.operator.token, email)).length;
    expect((await client.auth.forgotPassword({ email })).error).toBeNull();
    const { error } = await client.auth.resetPassword({ otp: await code(email, { after: before }), newPassword: 'a brand new password' });
    expect(error).toBeNull();
    expect(log.events).toEqual(['INITIAL_SESSION', 'SIGNED_IN', 'SIGNED_OUT', 'PASSWORD_RECOVERY']);
    expect(log.sessions.slice(2)).toEqual([null, null]);
    expect((await client.auth.getSession()).data).toEqual({ session: null });
    expect(await storage.getItem('own-reset')).toBeNull();
    expect((await client.auth.signIn({ email, password: 'a brand new password' })).error).toBeNull();
  });

  it('keeps the session of a client that reset another user’s password', async () => {
    const { client, log } = await signedUp();
    const { email: other } = await signedUp();
    const before = (await inbox(p.operator.token, other)).length;
    expect((await client.auth.forgotPassword({ email: other })).error).toBeNull();
    expect((await client.auth.resetPassword({ otp: await code(other, { after: before }), newPassword: 'a brand new password', email: other })).error).toBeNull();
    expect(log.events).toEqual(['INITIAL_SESSION', 'SIGNED_IN', 'PASSWORD_RECOVERY']);
    expect(log.sessions.at(-1)).not.toBeNull();
    expect((await client.auth.getUser()).error).toBeNull();
  });

  it('refuses a wrong code with 422, and an unknown key with 401', async () => {
    const client = appClient(p);
    expect((await client.auth.resetPassword({ otp: '000000', newPassword: 'a brand new password', email: newEmail() })).error).toMatchObject({ code: 'otp_invalid', status: 422 });
    const wrongKey = createClient(inject('baseUrl'), 'bp_anon_unknown');
    expect((await wrongKey.auth.forgotPassword({ email: newEmail() })).error).toMatchObject({ code: 'invalid_api_key', status: 401 });
  });
});

describe('magic links', () => {
  it('mails a sign-in code and exchanges it for a session (SIGNED_IN)', async () => {
    const email = newEmail('magic');
    const client = appClient(p);
    const log = eventLog(client);
    expect((await client.auth.sendMagicLink({ email })).data).toEqual({ message: expect.any(String) });
    const { data, error } = await client.auth.verifyMagicLink({ otp: await code(email), email });
    expect(error).toBeNull();
    expect(data!.user).toMatchObject({ email, emailVerified: true });
    expect(log.events).toEqual(['INITIAL_SESSION', 'SIGNED_IN']);
    expect((await client.auth.getUser()).data?.user.email).toBe(email);
  });

  it('refuses a wrong code with 422 and a bad address with 400', async () => {
    const client = appClient(p);
    expect((await client.auth.verifyMagicLink({ otp: '000000', email: newEmail() })).error).toMatchObject({ code: 'otp_invalid', status: 422 });
    expect((await client.auth.sendMagicLink({ email: 'nope' })).error).toMatchObject({ status: 400 });
  });
});

describe('account changes', () => {
  it('updates the profile (USER_UPDATED) and refuses a short password with 400 weak_password', async () => {
    const { client, log } = await signedUp();
    const { data, error } = await client.auth.updateUser({ firstName: 'Grace', username: `grace${Date.now()}` });
    expect(error).toBeNull();
    expect(data!.user.firstName).toBe('Grace');
    expect(log.events.at(-1)).toBe('USER_UPDATED');
    expect(log.sessions.at(-1)?.user.firstName).toBe('Grace');
    expect((await client.auth.updateUser({ password: 'short' })).error).toMatchObject({ code: 'weak_password', status: 400 });
    expect((await appClient(p).auth.updateUser({ firstName: 'Nobody' })).error).toMatchObject({ code: 'no_session', status: 401 });
  });

  it('changes the email with the code sent to the new address (USER_UPDATED), and refuses a taken one with 409', async () => {
    const { client, log } = await signedUp();
    const { email: taken } = await signedUp();
    expect((await client.auth.changeEmail({ newEmail: taken })).error).toMatchObject({ code: 'user_already_exists', status: 409 });
    const next = newEmail('moved');
    expect((await client.auth.changeEmail({ newEmail: next })).data).toEqual({ message: expect.any(String) });
    expect((await client.auth.verifyEmailChange({ otp: '000000' })).error).toMatchObject({ code: 'otp_invalid', status: 422 });
    const { data, error } = await client.auth.verifyEmailChange({ otp: await code(next) });
    expect(error).toBeNull();
    expect(data!.user).toMatchObject({ email: next, emailVerified: true });
    expect(log.events.at(-1)).toBe('USER_UPDATED');
    expect((await client.auth.getSession()).data?.session?.user.email).toBe(next);
  });

  it('reauthenticates with the emailed code, and refuses a wrong one and a signed-out caller', async () => {
    const { client, email } = await signedUp();
    expect((await client.auth.reauthenticate()).data).toEqual({ message: expect.any(String) });
    expect((await client.auth.verifyReauthentication({ otp: '000000' })).error).toMatchObject({ code: 'otp_invalid', status: 422 });
    const { data, error } = await client.auth.verifyReauthentication({ otp: await code(email) });
    expect(error).toBeNull();
    expect(new Date(data!.reauthenticatedUntil).getTime()).toBeGreaterThan(Date.now());
    expect((await appClient(p).auth.reauthenticate()).error).toMatchObject({ code: 'no_session', status: 401 });
  });
});

describe('invitations', () => {
  it('invites with the service key; the invitee signs in with the emailed code', async () => {
    const email = newEmail('invited');
    const admin = createClient(inject('baseUrl'), p.project.serviceKey);
    const { data, error } = await admin.auth.inviteUser({ email });
    expect(error).toBeNull();
    expect(data!.user.email).toBe(email);
    const invitee = appClient(p);
    expect((await invitee.auth.verifyMagicLink({ otp: await code(email), email })).data?.user.email).toBe(email);
  });

  it('refuses an invitation with the anon key: 403 service_key_required', async () => {
    expect((await appClient(p).auth.inviteUser({ email: newEmail() })).error).toMatchObject({ code: 'service_key_required', status: 403 });
  });
});
