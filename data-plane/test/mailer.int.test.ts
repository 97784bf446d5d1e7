/**
 * The data plane's mailer against real SMTP servers: the stack's dev inbox
 * receives what it sends (read back through GET /api/dev/inbox), and a dead or
 * silent server fails within seconds as a 503 `email_unavailable`.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApiError } from '@baseplane/contracts';
import { findFreePort } from '../../deploy/local/src/net';
import { bearer, call, createProject, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { createMailer } from '../src/mail/mailer';
import { codeEmail } from '../src/mail/templates';

const FROM = 'Baseplane <no-reply@baseplane.local>';
let operator: Operator;
let project: ProjectAnswer;

beforeAll(async () => {
  operator = await signUpOperator('Mail');
  project = await createProject(operator, 'mail app');
});

/** Expects `send` to reject with ApiError 503 email_unavailable; returns how long it took. */
async function expectUnavailable(smtpUrl: string): Promise<number> {
  const mail = { to: 'ada@example.com', projectId: randomUUID(), ...codeEmail('signup', { projectName: 'todo app', code: '314159', ttlMinutes: 10 }) };
  const started = Date.now();
  const error = await createMailer(smtpUrl, FROM).send(mail).then(
    () => undefined,
    (failure: unknown) => failure,
  );
  const elapsed = Date.now() - started;
  expect(error).toBeInstanceOf(ApiError);
  expect(error).toMatchObject({ status: 503, code: 'email_unavailable' });
  const body = JSON.stringify((error as ApiError).toBody());
  expect(body).not.toContain('314159');
  expect(body).not.toContain(mail.subject);
  return elapsed;
}

describe('createMailer', () => {
  it('delivers to the dev inbox, where GET /api/dev/inbox shows subject, text and html', async () => {
    const to = `ada-${randomUUID()}@example.com`;
    const email = codeEmail('signup', { projectName: 'todo app', code: '271828', ttlMinutes: 10 });
    await createMailer(inject('smtpUrl'), FROM).send({ to, projectId: project.id, ...email });

    const inbox = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(to)}`, { headers: bearer(operator.token) });
    expect(inbox.status, inbox.text).toBe(200);
    expect(inbox.body).toHaveLength(1);
    const [message] = inbox.body;
    expect(Object.keys(message).sort()).toEqual(['at', 'html', 'id', 'subject', 'text', 'to']);
    expect(message).toMatchObject({ to: [to], subject: email.subject });
    expect(message.text.trim()).toBe(email.text.trim());
    expect(message.html).toContain('271828');
    expect(message.html).toContain('<strong>todo app</strong>');
    expect(Date.now() - Date.parse(message.at)).toBeLessThan(60_000);
  });

  it('hands the server the address as it is, never what a parser makes of it: no other mailbox gets the message', async () => {
    const id = randomUUID();
    const email = codeEmail('signup', { projectName: 'todo app', code: '161803', ttlMinutes: 10 });
    const outside = [`atk-${id}@example.com(example.org)`, `<atk-${id}@example.com>example.org`, `atk-${id}@example.com, other-${id}@example.com`];
    for (const to of outside) {
      // The dev inbox's server, as a strict one does, refuses such a recipient in the envelope; a lax one would get it whole.
      const failure = await createMailer(inject('smtpUrl'), FROM).send({ to, projectId: project.id, ...email }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure, to).toMatchObject({ status: 503, code: 'email_unavailable', details: { reason: 'rejected' } });
    }
    for (const mailbox of [`atk-${id}@example.com`, `other-${id}@example.com`]) {
      const inbox = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(mailbox)}`, { headers: bearer(operator.token) });
      expect([mailbox, inbox.status, inbox.body]).toEqual([mailbox, 200, []]);
    }
  });

  it('delivers an address beyond ASCII with its envelope recipient exactly the address', async () => {
    const to = `dİnç-${randomUUID()}@example.com`;
    await createMailer(inject('smtpUrl'), FROM).send({ to, projectId: project.id, ...codeEmail('signup', { projectName: 'todo app', code: '141421', ttlMinutes: 10 }) });
    const inbox = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(to)}`, { headers: bearer(operator.token) });
    expect(inbox.body.map((message: { to: string[] }) => message.to)).toEqual([[to]]);
  });

  it('rejects with 503 email_unavailable at once when nothing listens on the port', async () => {
    const port = await findFreePort();
    expect(await expectUnavailable(`smtp://127.0.0.1:${port}`)).toBeLessThan(2_000);
  });

  describe('against a server that accepts the connection but never greets', () => {
    let silent: net.Server;
    const sockets = new Set<net.Socket>();

    beforeAll(async () => {
      silent = net.createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    });

    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    it('gives up within a few seconds with 503 email_unavailable', async () => {
      const { port } = silent.address() as net.AddressInfo;
      const elapsed = await expectUnavailable(`smtp://127.0.0.1:${port}`);
      expect(elapsed).toBeGreaterThanOrEqual(1_000);
      expect(elapsed).toBeLessThan(8_000);
    });
  });
});
