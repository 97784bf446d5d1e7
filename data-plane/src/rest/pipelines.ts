/**
 * Shared, pipelined connections per project for requests that are one batch
 * under one Sync (one-sync.ts, or a single pg query, which pipeline mode sends
 * with its own Sync): many requests' batches follow each other on
 * one connection without waiting for the previous answer. PostgreSQL then
 * reads several batches per wake-up and answers them in one write, which on
 * a busy machine is most of the cost of a small request (bench:rest).
 *
 * Each batch is its own implicit transaction, so sharing changes nothing of
 * what a request sees. What it does change: a slow statement delays the
 * batches queued behind it. So a lane takes a batch only while it flows (its
 * oldest batch is younger than STALL_MS) and holds at most MAX_IN_FLIGHT;
 * otherwise the caller uses an exclusive connection from the pool.
 */
import pg from 'pg';
import type { ConnectionRoom } from '../tenants/connection-room';

/** A lane whose oldest unanswered batch is older than this takes no more. */
const STALL_MS = 20;
const MAX_IN_FLIGHT = 16;
/** Recycled now and then: named statements accumulate per connection. */
const MAX_USES = 20_000;
const IDLE_CLOSE_MS = 30_000;
/** After a failed connect, a project's lanes wait this long before trying again (the pool answers meanwhile). */
const RETRY_CONNECT_MS = 1_000;

export class Lane {
  inFlight = 0;
  uses = 0;
  lastUsed = Date.now();
  retired = false;
  dead = false;
  private readonly sentAt: number[] = [];
  private corked: { uncork?: () => void } | null = null;
  /** Batches sent in one turn of the event loop leave in one write, and PostgreSQL reads them in one wake-up. */
  private readonly flush = () => {
    const stream = this.corked;
    this.corked = null;
    stream?.uncork?.();
  };

  /** One batch answered (or failed). Made once per lane, not per batch: the hot path allocates no closure for it. */
  private readonly settle = () => {
    this.inFlight--;
    this.sentAt.shift();
    this.lastUsed = Date.now();
    if (this.retired && this.inFlight === 0) void this.close();
  };

  constructor(readonly client: pg.Client) {}

  /** Can take a batch now without queueing it behind a slow one. */
  flowing(now: number): boolean {
    if (this.dead || this.retired || this.inFlight >= MAX_IN_FLIGHT) return false;
    return this.inFlight === 0 || now - this.sentAt[0]! < STALL_MS;
  }

  /**
   * Sends what `submit` writes on the lane's connection (one or more
   * single-Sync queries: a OneSyncBatch, or a pg query, which pipeline mode
   * sends with its own Sync) and counts it in flight until it settles.
   */
  run<T>(submit: (client: pg.Client) => Promise<T>): Promise<T> {
    this.inFlight++;
    this.uses++;
    const now = Date.now();
    this.sentAt.push(now);
    this.lastUsed = now;
    if (this.uses >= MAX_USES) this.retired = true;
    // The socket as pg holds it now (a TLS upgrade replaces it).
    const stream = (this.client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
    if (!this.corked && stream?.cork) {
      this.corked = stream;
      stream.cork();
      setImmediate(this.flush);
    }
    const answer = submit(this.client);
    answer.then(this.settle, this.settle);
    return answer;
  }

  /** Takes no more batches, and closes once those it has are answered. */
  retire(): void {
    this.retired = true;
    if (this.inFlight === 0) void this.close();
  }

  /** Ends the connection; resolves once it has ended. */
  close(): Promise<void> {
    this.dead = true;
    return this.client.end().catch(() => undefined);
  }
}

class ProjectLanes {
  lanes: Lane[] = [];
  connecting = 0;
  retryAfter = 0;
}

export class Pipelines {
  private readonly projects = new Map<string, ProjectLanes>();
  private readonly sweep: NodeJS.Timeout;

  /**
   * `perProject` 0 turns pipelining off: every request then takes a connection of its own. Lanes without a batch
   * close when the cluster is full ({@link ConnectionRoom}), or after IDLE_CLOSE_MS.
   */
  constructor(private readonly config: (projectId: string) => pg.ClientConfig, private readonly perProject: number, room: ConnectionRoom) {
    this.sweep = setInterval(() => void this.closeIdle(IDLE_CLOSE_MS), IDLE_CLOSE_MS / 3);
    this.sweep.unref();
    room.add(() => this.closeIdle(0));
  }

  /** A lane that can take a batch now, or undefined (use an exclusive connection). Opens lanes as load asks for them. */
  take(projectId: string): Lane | undefined {
    if (this.perProject === 0) return undefined;
    let project = this.projects.get(projectId);
    if (!project) {
      project = new ProjectLanes();
      this.projects.set(projectId, project);
    }
    const now = Date.now();
    if (project.lanes.some((lane) => lane.dead || lane.retired)) project.lanes = project.lanes.filter((lane) => !lane.dead && !lane.retired);
    let best: Lane | undefined;
    for (const lane of project.lanes) {
      if (lane.flowing(now) && (!best || lane.inFlight < best.inFlight)) best = lane;
    }
    if ((!best || best.inFlight > 0) && project.lanes.length + project.connecting < this.perProject && now >= project.retryAfter) this.open(projectId, project);
    return best;
  }

  private open(projectId: string, project: ProjectLanes): void {
    project.connecting++;
    const client = new pg.Client({ ...this.config(projectId), pipeline: true } as pg.ClientConfig);
    const lane = new Lane(client);
    // A lost connection fails its batches through pg; the lane is then left out and closed.
    client.on('error', () => void lane.close());
    client.connect().then(
      () => {
        project.connecting--;
        if (this.projects.get(projectId) === project) project.lanes.push(lane);
        else void lane.close();
      },
      () => {
        project.connecting--;
        project.retryAfter = Date.now() + RETRY_CONNECT_MS;
        void lane.close();
      },
    );
  }

  /** Closes every project's lanes that have waited `idleMs` without a batch (0: every one without a batch now). */
  closeIdle(idleMs: number): Promise<void> {
    const now = Date.now();
    const closed: Array<Promise<void>> = [];
    for (const project of this.projects.values()) {
      for (const lane of project.lanes) {
        if (lane.inFlight === 0 && now - lane.lastUsed >= idleMs) closed.push(lane.close());
      }
      project.lanes = project.lanes.filter((lane) => !lane.dead);
    }
    return Promise.all(closed).then(() => undefined);
  }

  /** Retires a project's lanes (its schema changed): each closes once its batches are answered, and new ones open as load asks. */
  retire(projectId: string): void {
    for (const lane of this.projects.get(projectId)?.lanes ?? []) lane.retire();
  }

  /** Closes a project's lanes (deleted project); batches still in flight end with an error. */
  drop(projectId: string): void {
    const project = this.projects.get(projectId);
    this.projects.delete(projectId);
    for (const lane of project?.lanes ?? []) void lane.close();
  }

  closeAll(): void {
    clearInterval(this.sweep);
    for (const projectId of [...this.projects.keys()]) this.drop(projectId);
  }
}
