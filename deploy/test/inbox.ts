/**
 * Reading emailed codes back from the local stack's real SMTP dev inbox
 * (`GET /api/dev/inbox?to=`), as a user would read their mail.
 */
import { expect } from 'vitest';
import type { DevInboxMessage } from '@baseplane/contracts';
import { bearer, call } from './http';

/** Messages to `to`, newest first. */
export async function inbox(operatorToken: string, to: string): Promise<DevInboxMessage[]> {
  const answer = await call<DevInboxMessage[]>('GET', `/api/dev/inbox?to=${encodeURIComponent(to)}`, { headers: bearer(operatorToken) });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/**
 * Waits for a message to `to` beyond the first `after` and answers the
 * 6-digit code of the newest one; `mentions` must appear in its text.
 */
export async function codeFor(operatorToken: string, to: string, options: { after?: number; mentions?: string } = {}): Promise<string> {
  let code: string | undefined;
  await expect
    .poll(async () => {
      const messages = await inbox(operatorToken, to);
      if (messages.length <= (options.after ?? 0)) return undefined;
      const message = messages[0]!;
      if (options.mentions) expect(message.text).toContain(options.mentions);
      code = /\b(\d{6})\b/.exec(message.text)?.[1];
      return code;
    }, { timeout: 10_000, interval: 100 })
    .toMatch(/^\d{6}$/);
  return code!;
}
