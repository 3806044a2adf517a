// A projection: a named, versioned, pure fold over the log, keyed so that only touched keys are loaded and saved.
import type { RecordedEvent } from "../events/schema.ts";

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
}

export const defineProjection = <S>(p: Projection<S>): Projection<S> => p;
