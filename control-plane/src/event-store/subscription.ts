/**
 * A checkpointed subscription to all events: reads by global position from
 * its stored checkpoint, handles each event in one transaction with the
 * checkpoint update (so each event takes effect once), and sleeps until
 * LISTEN/NOTIFY says the store has grown. One replica at a time leads,
 * through a session advisory lock.
 */
import type { Pool, PoolClient } from 'pg';
import type { Logger } from 'pino';
import { inTransaction, type RecordedEvent } from '@baseplane/contracts';
import { EventStore } from './event-store';

export type EventHandler = (event: RecordedEvent<{ type: string; data: unknown }>, tx: PoolClient) => Promise<void>;

export interface SubscriptionOptions {
  batchSize?: number;
  /** Upper bound on a sleep when no notification comes (a missed NOTIFY costs at most this). */
  idleMs?: number;
  retryMs?: number;
  log?: Logger;
}

export class Subscription {
  private running = false;
  private listener: PoolClient | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly store: EventStore;

  constructor(
    private readonly db: Pool,
    readonly id: string,
    private readonly handle: EventHandler,
    private readonly options: SubscriptionOptions = {},
  ) {
    this.store = new EventStore(db);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run().catch((error) => this.options.log?.error({ err: error, subscription: this.id }, 'subscription stopped'));
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const retryMs = this.options.retryMs ?? 500;
    while (this.running) {
      try {
        await this.lead();
      } catch (error) {
        if (!this.running) break;
        this.options.log?.warn({ err: error, subscription: this.id }, 'subscription failed; retrying');
        await this.releaseListener();
        await this.sleep(retryMs);
      }
    }
    await this.releaseListener();
  }

  private async lead(): Promise<void> {
    const listener = await this.db.connect();
    this.listener = listener;
    // A lost connection takes the leadership lock and the LISTEN with it: lead again from the start.
    let lost: Error | undefined;
    listener.on('notification', () => this.wake?.());
    listener.on('error', (error) => {
      lost = error;
      this.wake?.();
    });
    // Leadership: only the replica holding the lock pumps this subscription.
    while (this.running) {
      const { rows } = await listener.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtext($1)) as locked', [`subscription:${this.id}`]);
      if (rows[0]!.locked) break;
      await this.sleep(this.options.idleMs ?? 1000);
    }
    await listener.query('listen baseplane_events');
    let checkpoint = await this.loadCheckpoint();
    while (this.running) {
      if (lost) throw lost;
      const events = await this.store.readAll(checkpoint, this.options.batchSize ?? 200);
      for (const event of events) {
        if (!this.running) return;
        if (lost) throw lost;
        await this.handleOne(event);
        checkpoint = event.globalPosition;
      }
      if (events.length === 0) await this.sleep(this.options.idleMs ?? 1000);
    }
  }

  /** In one transaction, which stays open while the handler signals Temporal: inTransaction hears its connection dying meanwhile. */
  private async handleOne(event: RecordedEvent<{ type: string; data: unknown }>): Promise<void> {
    await inTransaction(this.db, async (tx: PoolClient) => {
      await this.handle(event, tx);
      await tx.query(
        `insert into subscription_checkpoints (subscription_id, position) values ($1, $2)
         on conflict (subscription_id) do update set position = excluded.position, updated_at = now()`,
        [this.id, event.globalPosition],
      );
    });
  }

  private async loadCheckpoint(): Promise<number> {
    const { rows } = await this.db.query<{ position: string }>(
      'select position from subscription_checkpoints where subscription_id = $1',
      [this.id],
    );
    return rows[0] ? Number(rows[0].position) : 0;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private async releaseListener(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    if (!listener) return;
    // Ending the session drops the advisory lock and the LISTEN with it.
    listener.release(true);
  }
}
