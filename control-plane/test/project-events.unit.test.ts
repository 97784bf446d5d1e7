/**
 * `GET /api/projects/:id/events` pages: the listing asks the event store for
 * its page only (`after`/`limit` go to the store's SQL), and answers it as before.
 */
import { describe, expect, it } from 'vitest';
import { projectStreamId, type RecordedEvent } from '@baseplane/contracts';
import type { EventStore, ReadStreamOptions } from '../src/event-store/event-store';
import { ProjectsService } from '../src/projects/projects.service';

const projectId = '11111111-2222-4333-8444-555555555555';
const metadata = (n: number) => ({ actor: 'account:a', at: `2025-01-01T00:00:${String(n % 60).padStart(2, '0')}.000Z`, correlationId: `c-${n}`, causationId: null, schemaVersion: 1 });

/** A stream of 50 events in memory that honours `after`/`limit` as the SQL does, and counts the events it hands out. */
function memoryStore() {
  const stream = Array.from({ length: 50 }, (_, i) => ({
    eventId: `e-${i + 1}`,
    streamId: projectStreamId(projectId),
    version: i + 1,
    globalPosition: 1000 + i,
    type: i === 0 ? 'ApiKeyRotated' : 'PingRequested',
    data: i === 0 ? { projectId, kind: 'anon', key: { hash: 'h', cipher: 'sealed' } } : { projectId },
    metadata: metadata(i + 1),
  })) as unknown as RecordedEvent[];
  const handedOut: number[] = [];
  const store = {
    // A bare number is the `afterVersion` of the store's older signature, so the count shows what a listing reads.
    async readStream(streamId: string, options: ReadStreamOptions | number = {}) {
      const { after = 0, limit } = typeof options === 'number' ? { after: options } : options;
      const page = stream.filter((e) => e.streamId === streamId && e.version > after).slice(0, limit ?? Infinity);
      handedOut.push(page.length);
      return page;
    },
  };
  return { store: store as unknown as EventStore, handedOut };
}

function service(store: EventStore) {
  return new ProjectsService(null as never, store, null as never, null as never, null as never, 'http://localhost:8000');
}

describe('ProjectsService.events', () => {
  it('reads only its page from the store and answers it in the history shape', async () => {
    const { store, handedOut } = memoryStore();
    const projects = service(store);

    expect(await projects.events(projectId, 0, 2)).toEqual({
      events: [
        {
          version: 1,
          globalPosition: 1000,
          type: 'ApiKeyRotated',
          data: { projectId, kind: 'anon', key: { hash: 'h', cipher: '[encrypted]' } },
          metadata: { actor: 'account:a', at: '2025-01-01T00:00:01.000Z', correlationId: 'c-1', causationId: null },
        },
        {
          version: 2,
          globalPosition: 1001,
          type: 'PingRequested',
          data: { projectId },
          metadata: { actor: 'account:a', at: '2025-01-01T00:00:02.000Z', correlationId: 'c-2', causationId: null },
        },
      ],
    });
    expect((await projects.events(projectId, 10, 3)).events.map((e) => e.version)).toEqual([11, 12, 13]);
    expect(await projects.events(projectId, 5, 0)).toEqual({ events: [] });
    expect((await projects.events(projectId, 48, 100)).events.map((e) => e.version)).toEqual([49, 50]);
    expect(await projects.events(projectId, 50, 100)).toEqual({ events: [] });
    expect(handedOut).toEqual([2, 3, 0, 2, 0]);
  });
});
