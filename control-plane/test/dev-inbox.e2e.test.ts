/**
 * `GET /api/dev/inbox`: what the stack's built-in SMTP server received, for
 * the team of the project each message was sent for, newest first, filtered
 * by recipient in any case; 404 where the stack runs no dev inbox.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import nodemailer from 'nodemailer';
import { createMailer } from '../../data-plane/src/mail/mailer';
import { apikey, bearer, call, createProject, scenarios, signUpOperator, type Operator, type ProjectAnswer } from '../../deploy/test/http';
import { DevInboxController } from '../src/dev-inbox/dev-inbox.controller';

const ada = `Ada-${randomUUID()}@Example.com`;
const bob = `bob-${randomUUID()}@example.com`;
let operator: Operator;
let outsider: Operator;
let project: ProjectAnswer;

async function mail(to: string, subject: string, projectId = project.id): Promise<void> {
  await createMailer(inject('smtpUrl'), 'Baseplane <no-reply@baseplane.local>').send({ to, projectId, subject, text: `${subject} text`, html: `<p>${subject}</p>` });
}

beforeAll(async () => {
  [operator, outsider] = await Promise.all([signUpOperator('Inbox'), signUpOperator('Outsider')]);
  project = await createProject(operator, 'inbox app');
  await mail(ada, 'first for ada');
  await mail(bob, 'for bob');
  await mail(ada, 'second for ada');
});

describe('GET /api/dev/inbox', () => {
  scenarios([
    { name: 'without a token is 401', method: 'GET', url: '/api/dev/inbox', expectedStatus: 401, expectedContent: ['invalid_token'] },
    { name: 'with a bad token is 401', method: 'GET', url: '/api/dev/inbox', headers: bearer('nope'), expectedStatus: 401 },
    { name: 'with a project service key is 403', method: 'GET', url: '/api/dev/inbox', headers: () => apikey(project.serviceKey), expectedStatus: 403, expectedContent: ['forbidden'] },
    { name: 'with an unknown query parameter is 400', method: 'GET', url: '/api/dev/inbox?too=x', headers: () => bearer(operator.token), expectedStatus: 400, expectedContent: ['invalid_request'] },
  ]);

  it('filters by recipient in any case, newest first', async () => {
    const answer = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(ada.toUpperCase())}`, { headers: bearer(operator.token) });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.map((m: { subject: string }) => m.subject)).toEqual(['second for ada', 'first for ada']);
    // The inbox keeps the envelope's recipients; the SMTP server lowercases their domain.
    expect(answer.body[0].to.map((address: string) => address.toLowerCase())).toEqual([ada.toLowerCase()]);
    expect(answer.body[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      to: [expect.any(String)],
      subject: 'second for ada',
      text: 'second for ada text',
      html: '<p>second for ada</p>',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(Date.parse(answer.body[0].at)).toBeGreaterThanOrEqual(Date.parse(answer.body[1].at));
  });

  it('lists every recipient’s messages of the team’s projects without a filter, newest first', async () => {
    const answer = await call('GET', '/api/dev/inbox', { headers: bearer(operator.token) });
    expect(answer.status, answer.text).toBe(200);
    const subjects = answer.body.map((m: { subject: string }) => m.subject);
    expect(subjects.indexOf('second for ada')).toBeLessThan(subjects.indexOf('for bob'));
    expect(subjects.indexOf('for bob')).toBeLessThan(subjects.indexOf('first for ada'));
    const times = answer.body.map((m: { at: string }) => Date.parse(m.at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("shows a team's messages to that team only: another operator sees none of them, with or without a recipient", async () => {
    const theirs = await createProject(outsider, 'outsider app');
    await mail(ada, 'for ada from the outsider', theirs.id);
    for (const url of [`/api/dev/inbox?to=${encodeURIComponent(ada)}`, '/api/dev/inbox']) {
      const seen = await call('GET', url, { headers: bearer(outsider.token) });
      expect(seen.status, seen.text).toBe(200);
      expect(seen.body.map((m: { subject: string }) => m.subject)).toEqual(['for ada from the outsider']);
    }
    const own = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(ada)}`, { headers: bearer(operator.token) });
    expect(own.body.map((m: { subject: string }) => m.subject)).toEqual(['second for ada', 'first for ada']);
  });

  it('shows nobody a message that names no project, or no project by a UUID', async () => {
    const carol = `carol-${randomUUID()}@example.com`;
    const transport = nodemailer.createTransport({ url: inject('smtpUrl') });
    await transport.sendMail({ from: 'someone@example.com', to: carol, subject: 'no project', text: 'no project' });
    await transport.sendMail({ from: 'someone@example.com', to: carol, subject: 'not a uuid', text: 'x', headers: { 'X-Baseplane-Project': `${project.id}' or true` } });
    await mail(carol, 'named', project.id);
    const answer = await call('GET', `/api/dev/inbox?to=${encodeURIComponent(carol)}`, { headers: bearer(operator.token) });
    expect(answer.body.map((m: { subject: string }) => m.subject)).toEqual(['named']);
  });

  it('answers [] for an address that received nothing', async () => {
    const answer = await call('GET', `/api/dev/inbox?to=nobody-${randomUUID()}@example.com`, { headers: bearer(operator.token) });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([]);
  });

  it('is 404 not_found where the stack runs no dev inbox (DEV_INBOX unset)', async () => {
    expect(process.env.DEV_INBOX).toBeUndefined();
    const controller = new DevInboxController(undefined as never, undefined as never);
    await expect(controller.list(undefined as never, {})).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });
});
