// A projection: a named, versioned, pure fold over the log, keyed so that only touched keys are loaded and saved.
import type { EventType, RecordedEvent } from "../events/schema.ts";
import { streamKindOf } from "../events/streams.ts";

/**
 * The facts a fold sees: none of a control stream (a request to the process that drives a run is that process's,
 * and what it does about it is in the context's own stream). The engine and `foldEvents` leave the others out.
 */
export type FoldedEvent = Exclude<RecordedEvent, { type: "RunControlRequested" }>;

/** Whether folds see `event`: told by its stream's kind (streams.ts); a control stream holds nothing else. */
export const isFolded = (event: RecordedEvent): event is FoldedEvent =>
  streamKindOf(event.streamId) !== "control" && event.type !== "RunControlRequested";

/** Every keyed state remembers the last global position applied to it: that is what makes a fold idempotent. */
export type Positioned = { readonly position: number };

/** Indexed columns the engine stores beside a state, so queries need not read every row. */
export type ProjectionColumns = {
  /** A grouping key to query by (a root context id, the owning context id); null when none. */
  group: string | null;
  /** An ordering inside the group (usually the position of the event that created the state). */
  order: number;
};

export interface Projection<S> {
  /** Table-safe name, e.g. `contexts`. */
  readonly name: string;
  /** Bump when `evolve` or the state shape changes: the projection is then rebuilt from zero. */
  readonly version: number;
  /** The keys of the states this event changes (none when it does not concern this projection). */
  keysOf(event: RecordedEvent): readonly string[];
  /** The state of a key before any event touched it. */
  init(key: string): S;
  /** Pure and total: never throws, never reads the clock; returns the state unchanged for events it ignores. */
  evolve(state: S, event: RecordedEvent): S;
  /** The indexed columns of a state (defaults to no group, order 0). */
  columns?(key: string, state: S): ProjectionColumns;
}

export const defineProjection = <S>(p: Projection<S>): Projection<S> => p;

/**
 * Makes an evolve idempotent: an event at or below the state's position changes nothing; any other
 * event is applied and the position advances to it.
 */
export const onceByPosition =
  <S extends Positioned>(apply: (state: S, event: FoldedEvent) => S) =>
  (state: S, event: RecordedEvent): S =>
    event.globalPosition <= state.position || !isFolded(event)
      ? state
      : { ...apply(state, event), position: event.globalPosition };

/**
 * `onceByPosition` for an `apply` that returns `state` itself or an object it has just made (never
 * one it shares): the new object's position is set in place, which spares a second copy of every
 * state on every event of a fold. The built-in projections' folds are written that way.
 */
export const onceByPositionFresh =
  <S extends Positioned>(apply: (state: S, event: FoldedEvent) => S) =>
  (state: S, event: RecordedEvent): S => {
    if (event.globalPosition <= state.position || !isFolded(event)) return state;
    const next = apply(state, event);
    if (next === state) return { ...state, position: event.globalPosition };
    (next as { position: number }).position = event.globalPosition;
    return next;
  };

/**
 * Folds events in memory into the states of the keys they touch (the same evolve the engine persists).
 * Pass `states` to continue from an earlier fold.
 */
export const foldEvents = <S>(
  projection: Projection<S>,
  events: Iterable<RecordedEvent>,
  states: Map<string, S> = new Map(),
): Map<string, S> => {
  for (const event of events) {
    if (!isFolded(event)) continue;
    for (const key of projection.keysOf(event)) {
      states.set(key, projection.evolve(states.get(key) ?? projection.init(key), event));
    }
  }
  return states;
};

/** Distinct keys, in first-seen order (an event that names the same key twice must touch it once). */
export const distinctKeys = (...keys: readonly (string | null | undefined)[]): string[] => {
  const out: string[] = [];
  for (const k of keys) if (k !== null && k !== undefined && !out.includes(k)) out.push(k);
  return out;
};

/** What a fold does with each event type it reads, each handler typed by its event. */
export type EventHandlers<S> = {
  [K in FoldedEvent["type"]]?: (state: S, event: Extract<FoldedEvent, { type: K }>) => S;
};

/** A fold over the event types it has handlers for; `types` names them (for `keysOf`). */
export type ReadingFold<S> = ((state: S, event: FoldedEvent) => S) & { readonly types: ReadonlySet<EventType> };

/**
 * A fold that reads only the event types it has handlers for: every other event leaves the state as it is, so a
 * new event type needs no line here. `first`, when given, prepares the state for any event the fold reads (e.g.
 * records where the key's first event is). For a fold where every event type needs a decision (a status, an
 * audit), write an exhaustive switch instead.
 * @example const apply = readsEvents<UsageView>({ ContextCreated: (u, e) => ({ ...u, rootContextId: e.data.rootContextId }) });
 */
export const readsEvents = <S>(
  handlers: EventHandlers<S>,
  first?: (state: S, event: FoldedEvent) => S,
): ReadingFold<S> => {
  const byType = handlers as Partial<Record<EventType, (state: S, event: FoldedEvent) => S>>;
  const fold = (state: S, event: FoldedEvent): S => {
    const handler = byType[event.type];
    if (!handler) return state;
    return handler(first ? first(state, event) : state, event);
  };
  return Object.assign(fold, { types: new Set(Object.keys(handlers) as EventType[]) as ReadonlySet<EventType> });
};
