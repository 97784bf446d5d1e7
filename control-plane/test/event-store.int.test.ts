/**
 * The event store against the real platform database: expected versions under
 * concurrency, reading by stream (a page of it too) and by position, and a subscription that
 * resumes from its checkpoint with each event taking effect once.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EventMetadata } from '@baseplane/contracts';
import { ANY_VERSION, EventStore, NO_STREAM, VersionConflictError, type NewEvent } from '../src/event-store/event-store';
import { Subscription } from '../src/event-store/subscription';

let db: pg.Pool;
let store: EventStore;

const metadata = (): EventMetadata => ({ actor: 'test', at: new Date().toISOString(), correlationId: randomUUID(), causationId: null, schemaVersion: 1 });
const event = (n: number): NewEvent => ({ type: 'TestHappened', data: { n }, metadata: metadata() });

beforeAll(async () => {
  db = new pg.Pool({ connectionString: inject('databaseUrl'), max: 60 });
  store = new EventStore(db);
});
afterAll(async () => {
  await db.end();
});

async function versionsOf(streamId: string): Promise<number[]> {
  return (await store.readStream(streamId)).map((e) => e.version);
}

describe('appendToStream', () => {
  it('lets exactly one of 50 concurrent "must not exist" appends win', async () => {
    const streamId = `test-${randomUUID()}`;
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => store.appendToStream(streamId, NO_STREAM, [event(i)])));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(49);
    for (const loss of lost) {
      expect(loss.reason).toBeInstanceOf(VersionConflictError);
      expect((loss.reason as VersionConflictError).code).toBe('version_conflict');
      expect((loss.reason as VersionConflictError).status).toBe(409);
    }
    expect(await versionsOf(streamId)).toEqual([1]);
  });

  it('leaves versions 1..N without a gap when 50 writers race at the same expected version', async () => {
    const streamId = `test-${randomUUID()}`;
    await store.appendToStream(streamId, NO_STREAM, [event(0)]);
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => store.appendToStream(streamId, 1, [event(i), event(i)])));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(VersionConflictError);
    expect(await versionsOf(streamId)).toEqual([1, 2, 3]);
  });

  it('lets 50 writers that retry on conflict all land, versions 1..50 with no gap', async () => {
    const streamId = `test-${randomUUID()}`;
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        for (;;) {
          const current = (await store.readStream(streamId)).length;
          try {
            return await store.appendToStream(streamId, current, [event(i)]);
          } catch (error) {
            if (!(error instanceof VersionConflictError)) throw error;
            conflicts++;
          }
        }
      }),
    );
    const events = await store.readStream<{ type: string; data: { n: number } }>(streamId);
    expect(events.map((e) => e.version)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.data.n)).size).toBe(50);
    expect(conflicts).toBeGreaterThan(0);
    const positions = events.map((e) => e.globalPosition);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  it('appends at any version when asked and refuses a wrong expected version', async () => {
    const streamId = `test-${randomUUID()}`;
    await store.appendToStream(streamId, ANY_VERSION, [event(1)]);
    await store.appendToStream(streamId, ANY_VERSION, [event(2)]);
    await expect(store.appendToStream(streamId, 5, [event(3)])).rejects.toBeInstanceOf(VersionConflictError);
    await expect(store.appendToStream(streamId, NO_STREAM, [event(3)])).rejects.toBeInstanceOf(VersionConflictError);
    expect(await versionsOf(streamId)).toEqual([1, 2]);
  });

  it('reads all events by global position, in order', async () => {
    const streamId = `test-${randomUUID()}`;
    const first = await store.appendToStream(streamId, NO_STREAM, [event(1)]);
    await store.appendToStream(streamId, 1, [event(2), event(3)]);
    const after = await store.readAll(first.lastGlobalPosition - 1, 1000);
    const mine = after.filter((e) => e.streamId === streamId);
    expect(mine.map((e) => e.version)).toEqual([1, 2, 3]);
  });
});

describe('appendOnce', () => {
  it('appends an event of one type and correlation id once, however many writers try at once', async () => {
    const stream = `once-${randomUUID()}`;
    const once: NewEvent = { type: 'TestRecorded', data: { n: 1 }, metadata: metadata() };
    const appended = await Promise.all(Array.from({ length: 20 }, () => store.appendOnce(stream, once)));
    expect(appended.filter(Boolean)).toHaveLength(1);
    // Another correlation id, or another type with the same one, is another event.
    expect(await store.appendOnce(stream, { ...once, metadata: metadata() })).toBe(true);
    expect(await store.appendOnce(stream, { ...once, type: 'TestOtherwise' })).toBe(true);
    expect((await store.readStream(stream)).map((e) => [e.type, e.metadata.correlationId === once.metadata.correlationId])).toEqual([
      ['TestRecorded', true], ['TestRecorded', false], ['TestOtherwise', true],
    ]);
  });
});

describe('readStream', () => {
  it('takes a page of the stream in SQL: the database returns the page only', async () => {
    const streamId = `test-${randomUUID()}`;
    await store.appendToStream(streamId, NO_STREAM, Array.from({ length: 50 }, (_, i) => event(i)));
    // Counts the rows each query brought back from PostgreSQL.
    const returned: number[] = [];
    const counting = {
      query: async (...args: Parameters<pg.Pool['query']>) => {
        const result = await (db.query as (...a: unknown[]) => Promise<pg.QueryResult>)(...args);
        returned.push(result.rowCount ?? 0);
        return result;
      },
    } as unknown as pg.Pool;
    const paging = new EventStore(counting);

    expect((await paging.readStream(streamId, { after: 10, limit: 3 })).map((e) => e.version)).toEqual([11, 12, 13]);
    expect(returned).toEqual([3]);
    expect((await paging.readStream(streamId, { limit: 2 })).map((e) => e.version)).toEqual([1, 2]);
    expect(await paging.readStream(streamId, { after: 3, limit: 0 })).toEqual([]);
    expect((await paging.readStream(streamId, { after: 48 })).map((e) => e.version)).toEqual([49, 50]);
    expect(await paging.readStream(streamId, { after: 50, limit: 10 })).toEqual([]);
    expect((await paging.readStream(streamId)).map((e) => e.version)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(returned).toEqual([3, 2, 0, 2, 0, 50]);
  });
});

describe('Subscription', () => {
  it('resumes from its checkpoint after a restart and applies each event once', async () => {
    const streamId = `test-${randomUUID()}`;
    const subscriptionId = `test-sub-${randomUUID()}`;
    await db.query('create table if not exists test_subscription_effects (subscription_id text, event_id uuid)');
    const first = await store.appendToStream(streamId, NO_STREAM, Array.from({ length: 10 }, (_, i) => event(i)));

    let handled = 0;
    let failOnce = true;
    const handler = async (e: { streamId: string; eventId: string; version: number }, tx: pg.PoolClient) => {
      if (e.streamId !== streamId) return;
      await tx.query('insert into test_subscription_effects values ($1, $2)', [subscriptionId, e.eventId]);
      // One failure half-way: the transaction rolls back and the event is handled again.
      if (e.version === 4 && failOnce) {
        failOnce = false;
        throw new Error('handler failure');
      }
      handled++;
    };
    const firstRun = new Subscription(db, subscriptionId, handler, { idleMs: 50, retryMs: 20 });
    firstRun.start();
    await expect.poll(() => handled, { timeout: 20_000 }).toBeGreaterThanOrEqual(6);
    await firstRun.stop();
    const handledBeforeRestart = handled;
    expect(handledBeforeRestart).toBeLessThanOrEqual(10);

    await store.appendToStream(streamId, first.nextExpectedVersion, Array.from({ length: 5 }, (_, i) => event(10 + i)));
    const secondRun = new Subscription(db, subscriptionId, handler, { idleMs: 50 });
    secondRun.start();
    await expect.poll(async () => (await db.query('select count(*)::int as n from test_subscription_effects where subscription_id = $1', [subscriptionId])).rows[0].n, { timeout: 20_000 }).toBe(15);
    await secondRun.stop();

    const { rows } = await db.query<{ event_id: string; n: number }>(
      'select event_id, count(*)::int as n from test_subscription_effects where subscription_id = $1 group by event_id',
      [subscriptionId],
    );
    expect(rows).toHaveLength(15);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const stored = (await store.readStream(streamId)).map((e) => e.eventId).sort();
    expect(rows.map((r) => r.event_id).sort()).toEqual(stored);
    expect(handled).toBe(15);
  });

  it('stops handling a batch it read once another leader has moved its checkpoint on', async () => {
    const streamId = `test-${randomUUID()}`;
    const subscriptionId = `test-sub-${randomUUID()}`;
    await store.appendToStream(streamId, NO_STREAM, Array.from({ length: 30 }, (_, i) => event(i)));
    const positions = (await store.readStream(streamId)).map((e) => e.globalPosition);
    const last = positions[positions.length - 1]!;
    // Start just before this stream, so the one batch it reads is these 30 events.
    await db.query('insert into subscription_checkpoints (subscription_id, position) values ($1, $2)', [subscriptionId, positions[0]! - 1]);
    const handled: number[] = [];
    const subscription = new Subscription(db, subscriptionId, async (e) => {
      if (e.streamId !== streamId) return;
      handled.push(e.globalPosition);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }, { idleMs: 50, retryMs: 20 });
    subscription.start();
    await expect.poll(() => handled.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    // Another replica took the lead (this one's lock went with its connection) and has handled the whole stream.
    await db.query('update subscription_checkpoints set position = $2 where subscription_id = $1', [subscriptionId, last]);
    const handledThen = handled.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await subscription.stop();
    // At most the event in flight when the checkpoint moved; nothing of the rest of its batch, and the checkpoint is not moved back.
    expect(handled.length).toBeLessThanOrEqual(handledThen + 1);
    expect(handled.length).toBeLessThan(positions.length);
    const { rows } = await db.query<{ position: string }>('select position from subscription_checkpoints where subscription_id = $1', [subscriptionId]);
    expect(Number(rows[0]!.position)).toBe(last);
  });

  it('wakes on NOTIFY instead of waiting for its idle poll', async () => {
    const streamId = `test-${randomUUID()}`;
    const seen: number[] = [];
    const subscription = new Subscription(db, `test-sub-${randomUUID()}`, async (e) => {
      if (e.streamId === streamId) seen.push(Date.now());
    }, { idleMs: 30_000 });
    subscription.start();
    // Let it catch up with the store and go to sleep on its 30 s idle timer.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const appendedAt = Date.now();
    await store.appendToStream(streamId, NO_STREAM, [event(1)]);
    await expect.poll(() => seen.length, { timeout: 5000 }).toBe(1);
    await subscription.stop();
    expect(seen[0]! - appendedAt).toBeLessThan(5000);
  });
});
