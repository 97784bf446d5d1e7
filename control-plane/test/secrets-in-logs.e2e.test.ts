/**
 * No secret in the logs, and none in an answer that is not meant to carry it.
 * The test handles every kind of secret the service knows — PLATFORM_SECRET
 * and the tenant role passwords derived from it, the superuser's and S3's
 * credentials, API keys (rotated ones too), operators' and end users'
 * passwords, their hashes and tokens, refresh tokens, one-time codes,
 * signed-URL tokens, SMTP credentials — and drives the paths that log:
 * failed sign-ins, bad codes and tokens, bad SQL, keys in query strings of
 * failing requests, mail that fails before and after its answer (a dead SMTP
 * server, one refusing the credentials), an unreachable tenant database, a
 * deleted project, a role statement PostgreSQL refuses. Then it reads every
 * file under the stack's log directory (all services, PostgreSQL, Temporal,
 * versitygw, the dev inbox), every process's command line and the projects'
 * workflow histories, and requires none of those values there, nor any URL
 * carrying a password; and no secret in any refusal, nor one its caller was
 * never given in any answer. (Here rather than in deploy/test for
 * @temporalio/client, a dependency of the control plane.)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { afterAll, expect, inject, it } from 'vitest';
import {
  applyPasswordPurpose,
  authenticatorPasswordPurpose,
  deriveSecret,
  ownerPasswordPurpose,
  projectWorkflowId,
  tenantDatabaseName,
  tenantOwnerRole,
} from '@baseplane/contracts';
import { createOwnerRoleSql } from '../../workers/src/tenant-sql';
import { findFreePort } from '../../deploy/local/src/net';
import { apikey, bearer, call as plainCall, someIp, type Answer } from '../../deploy/test/http';
import { codeFor } from '../../deploy/test/inbox';

/** name → value of every secret the test handled. */
const secrets = new Map<string, string>();
const keep = (name: string, value: unknown): string => {
  expect(typeof value === 'string' && value.length >= 6, `${name} is a secret string`).toBe(true);
  secrets.set(name, value as string);
  return value as string;
};
/** One-time codes are 6 digits: matched as a number of their own (see found()). */
const codes = new Map<string, string>();
const keepCode = (name: string, code: string): string => {
  codes.set(name, code);
  return code;
};
/** Secrets whose owner may be answered them (the keys to a team member, a session to its user): never in a refusal. */
const answerable = new Set<string>();
/** Every answer the test got, with what it asked. */
const answers: Array<{ what: string; answer: Answer }> = [];

/** The auth calls come from an address of their own, so the per-IP limits other files' calls count are not this file's concern. */
const clientIp = `10.${randomBytes(3).join('.')}`;

async function call(method: string, url: string, options: Parameters<typeof plainCall>[2] = {}): Promise<Answer> {
  if (url.startsWith('/rest/v1/auth/')) options = { ...options, headers: { 'x-forwarded-for': clientIp, ...options.headers } };
  const answer = await plainCall(method, url, options);
  answers.push({ what: `${method} ${url.split('?')[0]} → ${answer.status}`, answer });
  return answer;
}

const password = () => `pw-${randomBytes(12).toString('base64url')}`;
const address = () => `leak-${randomUUID()}@example.com`;
const platformDb = () => new pg.Client({ connectionString: inject('databaseUrl') });

let temporal: Connection | undefined;
let projectId: string;
let doomedId: string;

afterAll(async () => {
  await temporal?.close();
});

// One test drives it all (expect.poll, which reading codes uses, runs in tests only); the checks follow it.
it('hands every kind of secret to the service, and makes it fail in every way that logs', async () => {
  // The stack's own secrets.
  const platformSecret = keep('PLATFORM_SECRET', inject('platformSecret'));
  keep('superuser password (DATABASE_URL)', decodeURIComponent(new URL(inject('databaseUrl')).password));
  keep('superuser password (TENANT_DATABASE_URL)', decodeURIComponent(new URL(inject('tenantDatabaseUrl')).password));
  keep('S3 secret access key', inject('s3').secretAccessKey);

  // An operator: sign-up, a failed and a good login, a refresh, a forged and a spent refresh token.
  const operatorEmail = address();
  const operatorPassword = keep('operator password', password());
  const ip = { 'x-forwarded-for': someIp() };
  const signedUp = await call('POST', '/api/auth/signup', { headers: ip, body: { email: operatorEmail, password: operatorPassword, name: 'Leak' } });
  expect(signedUp.status, signedUp.text).toBe(201);
  keep('operator access token', signedUp.body.accessToken);
  keep('operator refresh token', signedUp.body.refreshToken);
  const wrongOperatorPassword = keep('operator wrong password', password());
  expect((await call('POST', '/api/auth/login', { headers: ip, body: { email: operatorEmail, password: wrongOperatorPassword } })).status).toBe(400);
  const login = await call('POST', '/api/auth/login', { headers: ip, body: { email: operatorEmail, password: operatorPassword } });
  expect(login.status, login.text).toBe(200);
  const token = keep('operator access token (login)', login.body.accessToken);
  const refreshed = await call('POST', '/api/auth/refresh', { body: { refreshToken: keep('operator refresh token (login)', login.body.refreshToken) } });
  expect(refreshed.status, refreshed.text).toBe(200);
  keep('operator access token (refreshed)', refreshed.body.accessToken);
  keep('operator refresh token (refreshed)', refreshed.body.refreshToken);
  await call('POST', '/api/auth/refresh', { body: { refreshToken: login.body.refreshToken } });
  await call('POST', '/api/auth/refresh', { body: { refreshToken: `${refreshed.body.refreshToken}x` } });
  await call('GET', '/api/auth/me', { headers: bearer(`${token.slice(0, -4)}AAAA`) });
  for (const name of ['operator access token', 'operator refresh token', 'operator access token (login)', 'operator refresh token (login)', 'operator access token (refreshed)', 'operator refresh token (refreshed)']) answerable.add(name);
  const h = bearer(token);

  // A project, its keys (one rotated), the tenant role passwords derived for it.
  const created = await call('POST', '/api/projects', { headers: h, body: { name: 'leak audit' } });
  expect(created.status, created.text).toBe(201);
  projectId = created.body.id;
  const oldAnon = keep('anon key (rotated away)', created.body.anonKey);
  const service = keep('service key', created.body.serviceKey);
  const rotated = await call('POST', `/api/projects/${projectId}/keys/rotate`, { headers: h, body: { kind: 'anon' } });
  expect(rotated.status, rotated.text).toBe(200);
  const anon = keep('anon key', rotated.body.anonKey);
  for (const name of ['anon key (rotated away)', 'service key', 'anon key']) answerable.add(name);
  const database = tenantDatabaseName(projectId);
  keep('tenant owner password', deriveSecret(platformSecret, ownerPasswordPurpose(projectId)));
  keep('tenant apply password', deriveSecret(platformSecret, applyPasswordPurpose(projectId)));
  keep('tenant data-API login password', deriveSecret(platformSecret, authenticatorPasswordPurpose(database)));
  // Wait until the old anon key is refused (rotation reaches the data plane within a second), so later calls use the new one.
  await expect.poll(async () => (await plainCall('GET', '/rest/v1/', { headers: apikey(oldAnon) })).status, { timeout: 5000 }).toBe(401);
  await call('GET', '/rest/v1/', { headers: apikey(oldAnon) });
  await call('GET', `/api/projects/${projectId}/events`, { headers: h });
  await call('GET', `/api/projects/${projectId}/operations`, { headers: h });

  // End users: sign-up, failed and good sign-ins, refresh rotation and reuse, a password change.
  const userEmail = address();
  const userPassword = keep('user password', password());
  const user = await call('POST', '/rest/v1/auth/signup', { headers: apikey(anon), body: { email: userEmail, password: userPassword } });
  expect(user.status, user.text).toBe(201);
  keep('user access token', user.body.accessToken);
  keep('user refresh token', user.body.refreshToken);
  const wrongUserPassword = keep('user wrong password', password());
  expect((await call('POST', '/rest/v1/auth/signin', { headers: apikey(anon), body: { email: userEmail, password: wrongUserPassword } })).status).toBe(400);
  const signIn = await call('POST', '/rest/v1/auth/signin', { headers: apikey(anon), body: { email: userEmail, password: userPassword } });
  expect(signIn.status, signIn.text).toBe(200);
  const userToken = keep('user access token (sign-in)', signIn.body.accessToken);
  const userRefresh = await call('POST', '/rest/v1/auth/refresh', { headers: apikey(anon), body: { refreshToken: keep('user refresh token (sign-in)', signIn.body.refreshToken) } });
  expect(userRefresh.status, userRefresh.text).toBe(200);
  keep('user access token (refreshed)', userRefresh.body.accessToken);
  keep('user refresh token (refreshed)', userRefresh.body.refreshToken);
  await call('POST', '/rest/v1/auth/refresh', { headers: apikey(anon), body: { refreshToken: signIn.body.refreshToken } }); // reuse: revokes the session
  await call('POST', '/rest/v1/auth/refresh', { headers: apikey(anon), body: { refreshToken: `${userRefresh.body.refreshToken.slice(0, -2)}xx` } });
  await call('GET', '/rest/v1/auth/me', { headers: { ...apikey(anon), ...bearer(`${userToken.slice(0, -4)}AAAA`) } });
  const newUserPassword = keep('user new password', password());
  expect((await call('PATCH', '/rest/v1/auth/me', { headers: { ...apikey(anon), ...bearer(user.body.accessToken) }, body: { password: newUserPassword } })).status).toBe(200);
  await call('POST', '/rest/v1/auth/signup', { headers: apikey(anon), body: { email: address(), password: 'short' } });
  for (const name of ['user access token', 'user refresh token', 'user access token (sign-in)', 'user refresh token (sign-in)', 'user access token (refreshed)', 'user refresh token (refreshed)']) answerable.add(name);

  // One-time codes: verify-email, password reset, magic link, each tried wrong first.
  expect((await call('POST', '/rest/v1/auth/resend', { headers: apikey(anon), body: { email: userEmail, type: 'signup' } })).status).toBe(200);
  const verifyCode = keepCode('verify-email code', await codeFor(token, userEmail));
  const wrong = verifyCode === '000000' ? '000001' : '000000';
  await call('POST', '/rest/v1/auth/verify-email', { headers: apikey(anon), body: { otp: wrong, email: userEmail } });
  expect((await call('POST', '/rest/v1/auth/verify-email', { headers: apikey(anon), body: { otp: verifyCode, email: userEmail } })).status).toBe(200);
  expect((await call('POST', '/rest/v1/auth/forgot-password', { headers: apikey(anon), body: { email: userEmail } })).status).toBe(200);
  const resetCode = keepCode('reset code', await codeFor(token, userEmail, { after: 1 }));
  const resetPassword = keep('user reset password', password());
  expect((await call('POST', '/rest/v1/auth/reset-password', { headers: apikey(anon), body: { otp: resetCode, email: userEmail, newPassword: resetPassword } })).status).toBe(200);
  const magicEmail = address();
  expect((await call('POST', '/rest/v1/auth/magic-link', { headers: apikey(anon), body: { email: magicEmail } })).status).toBe(200);
  const magicCode = keepCode('magic-link code', await codeFor(token, magicEmail));
  // The scan finds a code where one is: in the mail itself (the dev inbox answers it to the operator).
  const mail = await plainCall('GET', `/api/dev/inbox?to=${encodeURIComponent(magicEmail)}`, { headers: h });
  expect(found(mail.text)).toContain('magic-link code');
  const magic = await call('POST', '/rest/v1/auth/magic-link/verify', { headers: apikey(anon), body: { otp: magicCode, email: magicEmail } });
  expect(magic.status, magic.text).toBe(200);
  keep('magic-link access token', magic.body.accessToken);
  keep('magic-link refresh token', magic.body.refreshToken);
  answerable.add('magic-link access token').add('magic-link refresh token');
  await call('POST', '/rest/v1/auth/magic-link/verify', { headers: apikey(anon), body: { otp: magicCode, email: magicEmail } });
  const invited = address();
  expect((await call('POST', '/rest/v1/auth/invite', { headers: apikey(service), body: { email: invited } })).status).toBe(200);
  keepCode('invite code', await codeFor(token, invited));

  // Password hashes, as stored.
  const db = platformDb();
  await db.connect();
  try {
    keep('operator password hash', (await db.query('select password_hash from accounts where lower(email) = lower($1)', [operatorEmail])).rows[0].password_hash);
  } finally {
    await db.end();
  }
  const tenantUrl = new URL(inject('tenantDatabaseUrl'));
  tenantUrl.pathname = `/${database}`;
  const tenant = new pg.Client({ connectionString: tenantUrl.toString() });
  await tenant.connect();
  try {
    keep('user password hash', (await tenant.query('select encrypted_password from auth.users where lower(email) = lower($1)', [userEmail])).rows[0].encrypted_password);
  } finally {
    await tenant.end();
  }
  await call('GET', `/api/projects/${projectId}/auth/users?search=leak`, { headers: h });
  await call('GET', `/api/projects/${projectId}/auth/users`, { headers: apikey(service) });
  const adminPassword = keep('password set by an operator', password());
  await call('POST', `/api/projects/${projectId}/auth/users`, { headers: h, body: { email: address(), password: adminPassword, emailVerified: true } });

  // Storage: an object, its signed URL (good, tampered), a download.
  expect((await call('POST', `/api/projects/${projectId}/storage/buckets`, { headers: h, body: { name: 'vault' } })).status).toBe(201);
  const form = new FormData();
  form.append('file', new Blob(['not much'], { type: 'text/plain' }), 'a.txt');
  const uploaded = await fetch(new URL(`/api/projects/${projectId}/storage/buckets/vault/objects?path=dir/a.txt`, inject('baseUrl')), { method: 'POST', headers: apikey(service), body: form });
  expect(uploaded.status).toBe(201);
  const signed = await call('GET', `/api/projects/${projectId}/storage/buckets/vault/objects/url?path=dir/a.txt&expiresIn=600`, { headers: apikey(service) });
  expect(signed.status, signed.text).toBe(200);
  const signedUrl = new URL(signed.body.url);
  keep('signed-URL token', signedUrl.searchParams.get('token'));
  answerable.add('signed-URL token');
  expect((await call('GET', signedUrl.pathname + signedUrl.search)).status).toBe(200);
  await call('GET', `${signedUrl.pathname}?token=${signedUrl.searchParams.get('token')!.slice(0, -3)}abc`);
  await call('GET', `/storage/v1/object/sign/${projectId}/vault/dir/other.txt${signedUrl.search}`);
  await call('GET', `/api/projects/${projectId}/storage/buckets/vault/objects/download?path=nothing&apikey=${service}`);
  await call('GET', `/api/projects/${projectId}/storage/buckets/vault/objects?apikey=${anon}`);

  // SQL console and data API: errors of all kinds, the keys in the query string too.
  for (const query of ['select 1/0', 'select * from nowhere', 'selec 1', `select pg_read_file('/etc/passwd')`, 'select * from pg_authid', 'create role intruder login superuser'])
    await call('POST', '/api/sql/execute', { headers: h, body: { projectId, query } });
  expect((await call('POST', '/api/sql/execute', { headers: h, body: { projectId, query: 'create table notes (id int primary key, body text)' } })).status).toBe(200);
  await call('GET', `/rest/v1/notes?apikey=${anon}`);
  await call('GET', `/rest/v1/notes?select=nope&apikey=${service}`);
  await call('POST', `/rest/v1/notes?apikey=${service}`, { body: { id: 'x' } });
  await call('POST', '/rest/v1/rpc/nothing', { headers: apikey(service), body: {} });
  await call('GET', `/api/projects/${projectId}/tables/notes/rows?id=eq.x&apikey=${service}`);

  // Mail through a project's SMTP server given with credentials: a dead one (a magic link that makes a user mails
  // before its answer: 503; a known address's reset mails after it, and the failure is logged), one that refuses
  // the credentials, the dev inbox (it offers no AUTH, so nodemailer sends without).
  const smtpPassword = keep('SMTP password', password());
  keep('SMTP password, as AUTH PLAIN sends it', Buffer.from(`\0leak-user\0${smtpPassword}`).toString('base64'));
  keep('SMTP password, as AUTH LOGIN sends it', Buffer.from(smtpPassword).toString('base64'));
  // Addresses with an account, one per server below (codes are limited to 5 per address in 15 minutes).
  const known: string[] = [];
  for (let i = 0; i < 5; i++) {
    known.push(address());
    expect((await call('POST', '/rest/v1/auth/signup', { headers: apikey(anon), body: { email: known[i], password: password() } })).status).toBe(201);
  }
  const deadPort = await findFreePort();
  const refusing = await refusingSmtpServer();
  try {
    const smtpServers = [
      { url: `smtp://leak-user:${smtpPassword}@127.0.0.1:${deadPort}`, magicLink: 503 },
      { url: `smtp://leak-user:${smtpPassword}@127.0.0.1:${refusing.port}`, magicLink: 503 },
      // Credentials an URL parser would not take apart: no user name, an '@' in the password.
      { url: `smtp://:${smtpPassword}@127.0.0.1:${deadPort}`, magicLink: 503 },
      { url: `smtp://leak-user:${smtpPassword}@x@127.0.0.1:${deadPort}`, magicLink: 503 },
      { url: inject('smtpUrl').replace('//', `//leak-user:${smtpPassword}@`), magicLink: 200 },
    ];
    for (const [i, { url, magicLink }] of smtpServers.entries()) {
      const settings = await call('PATCH', `/api/projects/${projectId}/auth/settings`, { headers: h, body: { smtp: { url, from: 'Leak <leak@example.com>' } } });
      expect(settings.status, settings.text).toBe(200);
      const shown = await call('GET', `/api/projects/${projectId}/auth/settings`, { headers: h });
      expect(shown.body.smtp.url).toContain(':***@');
      // Until every replica follows the settings: the same answer twice in a row, the one this server gives.
      await expect.poll(async () => (await call('POST', '/rest/v1/auth/magic-link', { headers: apikey(anon), body: { email: address() } })).status, { timeout: 5000 }).toBe(magicLink);
      await expect.poll(async () => (await call('POST', '/rest/v1/auth/magic-link', { headers: apikey(anon), body: { email: address() } })).status, { timeout: 5000 }).toBe(magicLink);
      expect((await call('POST', '/rest/v1/auth/forgot-password', { headers: apikey(anon), body: { email: known[i] } })).status).toBe(200);
    }
    // Mail after an answer goes when the answer has: give it time to fail and be logged.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(refusing.refusedLogins()).toBeGreaterThan(0);
  } finally {
    refusing.close();
  }
  await call('PATCH', `/api/projects/${projectId}/auth/settings`, { headers: h, body: { smtp: null } });

  // The tenant database unreachable: management, SQL console, data API and auth fail to connect.
  const admin = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await admin.connect();
  try {
    await admin.query(`alter database "${database}" with allow_connections false`);
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [database]);
    await call('GET', `/api/projects/${projectId}/tables/notes/rows?apikey=${service}`);
    await call('GET', `/api/projects/${projectId}/auth/users?apikey=${service}`);
    await call('POST', `/api/sql/execute?apikey=${service}`, { body: { projectId, query: 'select 1' } });
    await call('POST', '/api/sql/execute', { headers: h, body: { projectId, query: 'select 1' } });
    await call('GET', `/rest/v1/notes?apikey=${service}`);
    await call('POST', '/rest/v1/auth/signin', { headers: apikey(anon), body: { email: userEmail, password: resetPassword } });
    await call('GET', `/api/projects/${projectId}/storage/buckets/vault/objects?apikey=${service}`);
  } finally {
    await admin.query(`alter database "${database}" with allow_connections true`);
    await admin.end();
  }

  // A deleted project: 503 project_unavailable and refused keys.
  const doomed = await call('POST', '/api/projects', { headers: h, body: { name: 'leak audit, deleted' } });
  expect(doomed.status, doomed.text).toBe(201);
  doomedId = doomed.body.id;
  keep('deleted project service key', doomed.body.serviceKey);
  answerable.add('deleted project service key');
  keep('deleted project owner password', deriveSecret(platformSecret, ownerPasswordPurpose(doomedId)));
  expect((await call('DELETE', `/api/projects/${doomedId}`, { headers: h })).status).toBe(200);
  await call('POST', '/api/sql/execute', { headers: h, body: { projectId: doomedId, query: 'select 1' } });
  await call('GET', `/api/projects/${doomedId}/tables?apikey=${doomed.body.serviceKey}`);
  await call('GET', `/rest/v1/?apikey=${doomed.body.serviceKey}`);

  // A provisioning step retried after a crash creates the owner role again, and PostgreSQL refuses it (42710):
  // it logs every statement it refuses, whole.
  const cluster = new pg.Client({ connectionString: inject('tenantDatabaseUrl') });
  await cluster.connect();
  try {
    const again = await cluster.query(createOwnerRoleSql(tenantOwnerRole(projectId), secrets.get('tenant owner password')!)).catch((error: { code?: string }) => error);
    expect((again as { code?: string }).code).toBe('42710');
  } finally {
    await cluster.end();
  }
  await call('GET', `/api/projects/${projectId}/events`, { headers: h });
  await call('GET', `/api/projects/${projectId}/operations`, { headers: h });

  // Let the services write what these requests made them log (mail failures after their answers, too).
  await new Promise((resolve) => setTimeout(resolve, 1500));
});

/** An SMTP server that offers AUTH and refuses every login (535), as a server given wrong credentials does. */
async function refusingSmtpServer(): Promise<{ port: number; refusedLogins(): number; close(): void }> {
  let refused = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let loginStep = 0;
    const refuse = () => {
      refused += 1;
      loginStep = 0;
      socket.write('535 5.7.8 Authentication credentials invalid\r\n');
    };
    socket.write('220 refusing ESMTP\r\n');
    readline.createInterface({ input: socket }).on('line', (line) => {
      const verb = line.split(' ')[0]!.toUpperCase();
      if (loginStep === 1) {
        loginStep = 2;
        socket.write('334 UGFzc3dvcmQ6\r\n');
      } else if (loginStep === 2) refuse();
      else if (verb === 'EHLO') socket.write('250-refusing\r\n250-AUTH PLAIN LOGIN\r\n250 OK\r\n');
      else if (verb === 'AUTH' && /^AUTH LOGIN$/i.test(line)) {
        loginStep = 1;
        socket.write('334 VXNlcm5hbWU6\r\n');
      } else if (verb === 'AUTH' && /^AUTH PLAIN$/i.test(line)) {
        loginStep = 2;
        socket.write('334 \r\n');
      } else if (verb === 'AUTH') refuse();
      else if (verb === 'QUIT') socket.end('221 bye\r\n');
      else socket.write('530 5.7.0 Authentication required\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    refusedLogins: () => refused,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** Where any secret or code appears in `text`, by name. */
function found(text: string, except: ReadonlySet<string> = new Set()): string[] {
  const hits: string[] = [];
  for (const [name, value] of secrets) if (!except.has(name) && text.includes(value)) hits.push(name);
  // Six digits of their own: not inside a word, a hex id or a token, a time, a port or a [pid].
  for (const [name, code] of codes) if (new RegExp(`(?<![\\w.:\\[-])${code}(?![\\w\\]])`).test(text)) hits.push(name);
  return hits;
}

/** A URL with a password in it: `scheme://user:password@`, the password not masked. */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^\s/:@"']+:(?!\*\*\*@)[^\s/@"']+@/gi;

it('logs no secret, nor any URL carrying a password', async () => {
  const logDir = inject('logDir');
  const files = (await readdir(logDir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile());
  expect(files.map((file) => file.name)).toEqual(expect.arrayContaining(['control-plane.log', 'data-plane.log', 'worker.log', 'postgres.log']));
  // Readable by the stack's user only: the data directory lets every local user through (o+x) for PostgreSQL.
  expect((await stat(logDir)).mode & 0o077).toBe(0);
  for (const file of files) expect((await stat(path.join(file.parentPath, file.name))).mode & 0o077, file.name).toBe(0);
  const leaks: string[] = [];
  let mailFailures = 0;
  for (const file of files) {
    const where = path.join(file.parentPath, file.name);
    const text = await readFile(where, 'utf8');
    mailFailures += text.split('a code email sent after the answer failed').length - 1;
    for (const [n, line] of text.split('\n').entries()) {
      for (const name of found(line)) leaks.push(`${name} in ${path.relative(logDir, where)}:${n + 1}: ${line.slice(0, 300)}`);
      for (const match of line.matchAll(URL_WITH_PASSWORD)) leaks.push(`URL with a password in ${path.relative(logDir, where)}:${n + 1}: ${match[0]}`);
    }
  }
  // The failures mailed after their answers were logged: the scan saw those lines.
  expect(mailFailures).toBeGreaterThanOrEqual(1);
  expect(leaks).toEqual([]);
});

it('puts no secret on a command line (/proc/*/cmdline is readable by every local user)', async () => {
  const leaks: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const line = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    for (const name of found(line.replace(/\0/g, ' '))) leaks.push(`${name} in the command line of ${pid}: ${line.replace(/\0/g, ' ').slice(0, 200)}`);
    for (const match of line.matchAll(URL_WITH_PASSWORD)) leaks.push(`URL with a password in the command line of ${pid}: ${match[0]}`);
  }
  expect(leaks).toEqual([]);
});

it('answers no secret in a refusal, and never one the caller was not given', () => {
  const leaks: string[] = [];
  const never = new Set([...secrets.keys()].filter((name) => !answerable.has(name)));
  for (const { what, answer } of answers) {
    // The body and the headers (a Location, a Server-Timing, a Set-Cookie would carry one as well).
    const text = `${[...answer.headers].map(([name, value]) => `${name}: ${value}`).join('\n')}\n\n${answer.text}`;
    const names = answer.status >= 400 ? found(text) : found(text, answerable).filter((name) => never.has(name) || codes.has(name));
    for (const name of names) leaks.push(`${name} in ${what}: ${text.slice(0, 600)}`);
    for (const match of text.matchAll(URL_WITH_PASSWORD)) leaks.push(`URL with a password in ${what}: ${match[0]}`);
    if (answer.status >= 500) expect(answer.text, what).not.toMatch(/\bat .+\(.+:\d+:\d+\)|node_modules|\/src\//);
  }
  expect(answers.some(({ answer }) => answer.status === 503)).toBe(true);
  expect(leaks).toEqual([]);
});

it('keeps no secret in the project’s workflow history (Temporal)', async () => {
  temporal = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection: temporal });
  const texts: string[] = [];
  const walk = (value: unknown): void => {
    if (value instanceof Uint8Array) texts.push(Buffer.from(value).toString('utf8'));
    else if (typeof value === 'string') texts.push(value);
    else if (value && typeof value === 'object') for (const inner of Object.values(value)) walk(inner);
  };
  for (const id of [projectId, doomedId]) walk(await client.workflow.getHandle(projectWorkflowId(id)).fetchHistory());
  const text = texts.join('\n');
  expect(text).toContain(projectId);
  expect(found(text)).toEqual([]);
  for (const match of text.matchAll(URL_WITH_PASSWORD)) expect.fail(`URL with a password in the history: ${match[0]}`);
});
