/**
 * Whether an auth answer's time tells an address with an account from one
 * without: the yardstick is one real SMTP delivery to the stack's dev inbox,
 * the work that a leaking endpoint does for known addresses only.
 */
import { randomUUID } from 'node:crypto';
import { expect, inject } from 'vitest';
import type { Answer } from '../../deploy/test/http';
import { createMailer } from '../src/mail/mailer';
import { codeEmail } from '../src/mail/templates';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(request: () => Promise<Answer>): Promise<number> {
  const started = performance.now();
  const answer = await request();
  expect(answer.status, answer.text).toBe(200);
  return performance.now() - started;
}

/** Median time of handing one code email to the dev inbox, as the data plane's mailer does it. */
async function smtpRoundTrip(tries: number): Promise<number> {
  const mailer = createMailer(inject('smtpUrl'), 'Baseplane <no-reply@baseplane.local>');
  const times: number[] = [];
  for (let i = 0; i < tries; i++) {
    const started = performance.now();
    await mailer.send({ to: `timing-${randomUUID()}@example.com`, projectId: randomUUID(), ...codeEmail('recovery', { projectName: 'timing', code: '000000', ttlMinutes: 10 }) });
    times.push(performance.now() - started);
  }
  return median(times);
}

/**
 * Asks `known(i)` and `unknown(i)` `tries` times each, interleaved and in
 * alternating order (so that what one leaves running weighs on both), and
 * expects their medians to lie less than half an SMTP round trip apart:
 * medians over many tries stay put on a busy machine, and a mail sent
 * before answering costs a whole round trip.
 */
export async function expectSameTime(known: (i: number) => Promise<Answer>, unknown: (i: number) => Promise<Answer>, tries = 11): Promise<void> {
  const smtp = await smtpRoundTrip(5);
  const k: number[] = [];
  const u: number[] = [];
  for (let i = 0; i < tries; i++) {
    if (i % 2 === 0) {
      k.push(await timed(() => known(i)));
      u.push(await timed(() => unknown(i)));
    } else {
      u.push(await timed(() => unknown(i)));
      k.push(await timed(() => known(i)));
    }
  }
  const gap = median(k) - median(u);
  const detail = `known ${k.map(Math.round)} ms, unknown ${u.map(Math.round)} ms, SMTP round trip ${Math.round(smtp)} ms`;
  expect(Math.abs(gap), detail).toBeLessThan(smtp / 2);
}
