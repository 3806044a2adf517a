// Wraps a store to remember every append's events, so a bench can replay the same appends raw, and times the two alternately.
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";

export type RecordedAppend = { streamId: string; events: NewEvent[] };

export const recordingStore = (store: EventStore): EventStore & { appends: RecordedAppend[] } => {
  const appends: RecordedAppend[] = [];
  return Object.assign(Object.create(store) as EventStore, {
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
    onAppend: store.onAppend.bind(store),
    close: store.close.bind(store),
    // A PostgreSQL store's own method (its private fields need it bound); PGlite's has none.
    ...(store.settledPosition ? { settledPosition: store.settledPosition.bind(store) } : {}),
  });
};

/** Appends the recorded batches again, as they were grouped, to fresh streams (new ids): the raw cost of the same writes. */
export const replayRaw = async (
  store: EventStore,
  appends: readonly RecordedAppend[],
  suffix: string,
): Promise<number> => {
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

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

type Sender = {
  createContext(o: { name: string }): Promise<{ id: string }>;
  send(id: string, text: string): Promise<unknown>;
};

/**
 * Sends `message` to `perRound` new roots per round (created before the round, untimed) against raw
 * appends of the same events, in alternating rounds after a warm-up round of both, so neither side is
 * timed cold and a noisy moment hits one pair of rounds: the ratio is the median of the rounds' ratios.
 */
export const sendsAlternatingWithRaw = async (
  base: EventStore,
  store: EventStore & { appends: RecordedAppend[] },
  rt: Sender,
  { rounds, perRound, message }: { rounds: number; perRound: number; message: string },
): Promise<{ runtimeMs: number; rawMs: number; ratio: number; appends: RecordedAppend[] }> => {
  const round = async (name: string) => {
    const ids: string[] = [];
    for (let i = 0; i < perRound; i++) ids.push((await rt.createContext({ name: `${name}-${i}` })).id);
    store.appends.length = 0;
    const started = performance.now();
    for (const id of ids) await rt.send(id, message);
    const ms = performance.now() - started;
    const recorded = [...store.appends];
    return { ms, recorded, rawMs: await replayRaw(base, recorded, `raw-${name}`) };
  };
  await round("warm");
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(await round(`round-${r}`));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return {
    runtimeMs: sum(runs.map((r) => r.ms)),
    rawMs: sum(runs.map((r) => r.rawMs)),
    ratio: median(runs.map((r) => r.ms / r.rawMs)),
    appends: runs.flatMap((r) => r.recorded),
  };
};
