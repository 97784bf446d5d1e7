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

/** Another replica moved the checkpoint: this one no longer leads. */
class LostLeadError extends Error {
  constructor(subscriptionId: string) {
    super(`subscription ${subscriptionId}: another replica leads now; following it`);
  }
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
        if (error instanceof LostLeadError) this.options.log?.info({ subscription: this.id }, error.message);
        else this.options.log?.warn({ err: error, subscription: this.id }, 'subscription failed; retrying');
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
        await this.handleOne(event, checkpoint);
        checkpoint = event.globalPosition;
      }
      if (events.length === 0) await this.sleep(this.options.idleMs ?? 1000);
    }
  }

  /**
   * In one transaction, which stays open while the handler signals Temporal: inTransaction hears its connection
   * dying meanwhile. The checkpoint moves first, and only from where this leader left it: a leader whose lock went
   * with its connection may still be handling a batch it read while another has taken the lead and moved on. That
   * one waits here for the other's transaction, finds the checkpoint moved, handles nothing and leads again.
   */
  private async handleOne(event: RecordedEvent<{ type: string; data: unknown }>, from: number): Promise<void> {
    await inTransaction(this.db, async (tx: PoolClient) => {
      const moved = await tx.query(
        `insert into subscription_checkpoints (subscription_id, position) values ($1, $2)
         on conflict (subscription_id) do update set position = excluded.position, updated_at = now()
         where subscription_checkpoints.position = $3`,
        [this.id, event.globalPosition, from],
      );
      if (moved.rowCount === 0) throw new LostLeadError(this.id);
      await this.handle(event, tx);
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
