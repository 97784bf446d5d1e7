/**
 * The data plane's directory of projects: API-key hash → project, and each
 * project's status. Rebuilt in memory from the event stream and kept current
 * by following it (woken by LISTEN/NOTIFY), so a rotated key stops working as
 * soon as the rotation is recorded. Stateless: every replica builds its own.
 */
import type { Pool, PoolClient } from 'pg';
import type { Logger } from 'pino';
import { DEFAULT_AUTH_SETTINGS, DEFAULT_REST_SETTINGS, type KeyKind, type ProjectEvent, type ProjectStatus, type RestSettings, type SigningKey, type StoredAuthSettings } from '@baseplane/contracts';

export interface DirectoryEntry {
  projectId: string;
  name: string;
  status: ProjectStatus;
  databaseName: string;
  keyHashes: Record<KeyKind, string>;
  /** Token-signing keys, newest last; the newest signs, all verify. */
  signingKeys: SigningKey[];
  /** The project's auth settings, folded from its AuthSettingsUpdated events. */
  authSettings: StoredAuthSettings;
  /** The project's data API settings (the schemas `/rest/v1` serves, its row cap), folded from its RestSettingsUpdated events. */
  restSettings: RestSettings;
}

export interface KeyMatch {
  project: DirectoryEntry;
  kind: KeyKind;
}

const POLL_MS = 1000;

export class ProjectDirectory {
  private readonly projects = new Map<string, DirectoryEntry>();
  private readonly byKeyHash = new Map<string, KeyMatch>();
  private position = 0;
  private running = false;
  private listener: PoolClient | undefined;
  private wake: (() => void) | undefined;
  /** A notification came since the last catch-up began: its event may be newer than what that catch-up read. */
  private notified = false;
  private loop: Promise<void> | undefined;
  private caughtUpOnce = false;
  private readonly listeners = new Set<(event: ProjectEvent) => void>();

  constructor(private readonly db: Pool, private readonly log: Logger) {}

  /** Builds the directory from the whole stream, then keeps following it. */
  async start(): Promise<void> {
    this.running = true;
    await this.catchUp();
    this.caughtUpOnce = true;
    this.loop = this.follow();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  get ready(): boolean {
    return this.caughtUpOnce;
  }

  /** The global position of the last project event applied: a replica has every change recorded up to it. */
  get appliedPosition(): number {
    return this.position;
  }

  /**
   * Calls `listener` with every event the directory applies from now on
   * (after its own state changed), e.g. to drop a cache on a schema event.
   * Returns the function that stops it.
   */
  onEvent(listener: (event: ProjectEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  lookupKey(keyHash: string): KeyMatch | undefined {
    return this.byKeyHash.get(keyHash);
  }

  project(projectId: string): DirectoryEntry | undefined {
    return this.projects.get(projectId);
  }

  private async follow(): Promise<void> {
    while (this.running) {
      try {
        if (!this.listener) {
          this.listener = await this.db.connect();
          this.listener.on('notification', () => {
            this.notified = true;
            this.wake?.();
          });
          this.listener.on('error', () => this.dropListener());
          await this.listener.query('listen baseplane_events');
        }
        this.notified = false;
        await this.catchUp();
        // A notification during the catch-up woke no one (its wake was the last sleep's), and its event may have
        // committed after the catch-up read: catch up again at once rather than a poll interval later.
        if (this.notified) continue;
      } catch (error) {
        this.log.warn({ err: error }, 'directory follow failed; retrying');
        this.dropListener();
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.dropListener();
  }

  private dropListener(): void {
    this.listener?.release(true);
    this.listener = undefined;
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      const { rows } = await this.db.query<{ global_position: string; type: ProjectEvent['type']; data: ProjectEvent['data'] }>(
        `select global_position, type, data from events where global_position > $1 and stream_id like 'project-%'
         order by global_position limit 1000`,
        [this.position],
      );
      for (const row of rows) {
        const event = { type: row.type, data: row.data } as ProjectEvent;
        this.apply(event);
        this.position = Number(row.global_position);
        for (const listener of this.listeners) listener(event);
      }
      if (rows.length < 1000) return;
    }
  }

  private apply(event: ProjectEvent): void {
    const setStatus = (status: ProjectStatus) => {
      const project = this.projects.get(event.data.projectId);
      if (project) project.status = status;
    };
    switch (event.type) {
      case 'ProjectCreated': {
        const d = event.data;
        const entry: DirectoryEntry = {
          projectId: d.projectId,
          name: d.name,
          status: 'provisioning',
          databaseName: d.databaseName,
          keyHashes: { anon: d.keys.anon.hash, service: d.keys.service.hash },
          signingKeys: [],
          authSettings: DEFAULT_AUTH_SETTINGS,
          restSettings: DEFAULT_REST_SETTINGS,
        };
        this.projects.set(d.projectId, entry);
        this.byKeyHash.set(d.keys.anon.hash, { project: entry, kind: 'anon' });
        this.byKeyHash.set(d.keys.service.hash, { project: entry, kind: 'service' });
        break;
      }
      case 'ApiKeyRotated': {
        const project = this.projects.get(event.data.projectId);
        if (!project) break;
        this.byKeyHash.delete(project.keyHashes[event.data.kind]);
        project.keyHashes[event.data.kind] = event.data.key.hash;
        this.byKeyHash.set(event.data.key.hash, { project, kind: event.data.kind });
        break;
      }
      case 'SigningKeyIssued':
        this.projects.get(event.data.projectId)?.signingKeys.push(event.data.key);
        break;
      case 'AuthSettingsUpdated': {
        const project = this.projects.get(event.data.projectId);
        // A new object, never a change in place: a request holding the old settings keeps a consistent view.
        if (project) project.authSettings = { ...project.authSettings, ...event.data.changes };
        break;
      }
      case 'RestSettingsUpdated': {
        const project = this.projects.get(event.data.projectId);
        if (project) project.restSettings = { ...project.restSettings, ...event.data.changes };
        break;
      }
      case 'ProjectProvisioned':
        setStatus('active');
        break;
      case 'ProjectProvisioningFailed':
      case 'ProjectDeletionFailed':
        setStatus('failed');
        break;
      case 'ProjectDeletionRequested':
        setStatus('deleting');
        break;
      case 'ProjectDeleted': {
        setStatus('deleted');
        const project = this.projects.get(event.data.projectId);
        if (project) for (const hash of Object.values(project.keyHashes)) this.byKeyHash.delete(hash);
        break;
      }
      case 'ProjectPinged':
      case 'ProjectPingApplied':
      case 'ProjectPingFailed':
        break;
    }
  }
}
