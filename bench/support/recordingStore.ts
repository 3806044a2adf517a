// Wraps a store to remember every append's events, so a bench can replay the same appends raw.
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";

export type RecordedAppend = { streamId: string; events: NewEvent[] };

export const recordingStore = (store: EventStore): EventStore & { appends: RecordedAppend[] } => {
  const appends: RecordedAppend[] = [];
  return Object.assign(Object.create(store) as EventStore, {
    kind: store.kind,
    sql: store.sql,
    appends,
    append: (streamId: string, events: readonly NewEvent[], options: Parameters<EventStore["append"]>[2]) => {
      appends.push({ streamId, events: [...events] });
      return store.append(streamId, events, options);
    },
    readStream: store.readStream.bind(store),
    streamVersion: store.streamVersion.bind(store),
    readAll: store.readAll.bind(store),
    iterateAll: store.iterateAll.bind(store),
    headPosition: store.headPosition.bind(store),
    verify: store.verify.bind(store),
    subscribe: store.subscribe.bind(store),
    close: store.close.bind(store),
  });
};

/** Appends the recorded batches again, as they were grouped, to fresh streams (new ids): the raw cost of the same writes. */
export const replayRaw = async (store: EventStore, appends: readonly RecordedAppend[], suffix: string): Promise<number> => {
  const versions = new Map<string, number>();
  const started = performance.now();
  for (const a of appends) {
    const streamId = `${a.streamId}-${suffix}`;
    const version = versions.get(streamId) ?? 0;
    const events = a.events.map(({ eventId: _drop, ...e }) => e as NewEvent);
    await store.append(streamId, events, { expectedVersion: version === 0 ? "no_stream" : version });
    versions.set(streamId, version + events.length);
  }
  return performance.now() - started;
};
