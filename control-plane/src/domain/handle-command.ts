/**
 * The one command loop of every aggregate: read the stream, fold it with
 * `evolve`, `decide`, append at the version that was read; on a version
 * conflict (someone appended in between) do it all again.
 */
import { EVENT_SCHEMA_VERSIONS, type EventMetadata, type ProjectEventType } from '@baseplane/contracts';
import { EventStore, NO_STREAM, VersionConflictError, type AppendResult } from '../event-store/event-store';

export interface Decider<C, E extends { type: string; data: unknown }, S> {
  initialState: () => S;
  /** May be async: a decision that needs facts read after the stream (see `decide-with-facts.ts`). */
  decide: (command: C, state: S) => E[] | Promise<E[]>;
  /** Called with the recorded event (its `version` too) while folding the stream. */
  evolve: (state: S, event: E) => S;
}

export interface CommandContext {
  actor: string;
  correlationId: string;
  causationId: string | null;
}

export interface HandledCommand<S, E extends { type: string; data: unknown } = { type: string; data: unknown }> extends AppendResult {
  state: S;
  /** What the command recorded, each with its version in the stream (a name the decider chose is here). */
  events: (E & { version: number })[];
}

const MAX_ATTEMPTS = 20;

export async function handleCommand<C, E extends { type: string; data: unknown }, S>(
  store: EventStore,
  decider: Decider<C, E, S>,
  streamId: string,
  command: C,
  context: CommandContext,
): Promise<HandledCommand<S, E>> {
  for (let attempt = 1; ; attempt++) {
    const history = await store.readStream<E>(streamId);
    const state = history.reduce((s, e) => decider.evolve(s, { type: e.type, data: e.data, version: e.version } as unknown as E), decider.initialState());
    const version = history.length === 0 ? NO_STREAM : history[history.length - 1]!.version;
    const events = await decider.decide(command, state);
    // A command that changes nothing records nothing (the store refuses an empty append).
    if (events.length === 0) {
      return { nextExpectedVersion: version, lastGlobalPosition: history[history.length - 1]?.globalPosition ?? 0, versions: [], state, events: [] };
    }
    const at = new Date().toISOString();
    const metadata = (type: string): EventMetadata => ({
      actor: context.actor,
      at,
      correlationId: context.correlationId,
      causationId: context.causationId,
      schemaVersion: EVENT_SCHEMA_VERSIONS[type as ProjectEventType] ?? 1,
    });
    try {
      const result = await store.appendToStream(streamId, version, events.map((e) => ({ ...e, metadata: metadata(e.type) })));
      return {
        ...result,
        state: events.reduce(decider.evolve, state),
        events: events.map((e, i) => ({ ...e, version: result.versions[i]! })),
      };
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}
