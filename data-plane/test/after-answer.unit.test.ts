/**
 * AfterAnswer: work left behind by an answer starts after the current turn
 * (the answer goes first) and is waited for when the replica stops.
 */
import { describe, expect, it } from 'vitest';
import { AfterAnswer } from '../src/auth/after-answer';

const later = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('AfterAnswer', () => {
  it('starts a task only after the current turn of the event loop', async () => {
    const work = new AfterAnswer();
    const seen: string[] = [];
    work.run(async () => { seen.push('task'); });
    seen.push('answer');
    await work.settled();
    expect(seen).toEqual(['answer', 'task']);
  });

  it('settles once every task has ended, those a task started included, whether they failed or not', async () => {
    const work = new AfterAnswer();
    const ended: string[] = [];
    work.run(async () => {
      await later(30);
      ended.push('slow');
      work.run(async () => { await later(20); ended.push('started by a task'); });
    });
    work.run(async () => { await later(5); ended.push('failing'); throw new Error('mail server refused'); });
    await work.settled();
    expect(ended.sort()).toEqual(['failing', 'slow', 'started by a task']);
  });
});
