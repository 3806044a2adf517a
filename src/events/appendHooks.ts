// Hooks on a store's own appends: what a runtime observes of the facts it writes, without wrapping the store.
//
// Requirements:
// - `stamp` may add to an event before it is stored (a delegated run's trace parent); `appended` is told of every
//   append that committed, with the events as stored (stamped), in order; a conflict or a failure tells nothing.
// - Only appends made through this store object are seen: another process's facts come by `subscribe`.
// - A hook that throws never fails the append it observes.
import type { NewEvent } from "./schema.ts";
import type { Unsubscribe } from "./store.ts";

export type AppendHook = {
  /** The event as it is to be stored (the same object when there is nothing to add). */
  stamp?(streamId: string, event: NewEvent): NewEvent;
  /** The append committed: its events, stamped, in order. */
  appended?(streamId: string, events: readonly NewEvent[]): void;
};

/** The hooks of one store object, called by its `append`. */
export class AppendHooks {
  readonly #hooks = new Set<AppendHook>();

  add(hook: AppendHook): Unsubscribe {
    this.#hooks.add(hook);
    return () => void this.#hooks.delete(hook);
  }

  stamp(streamId: string, events: readonly NewEvent[]): readonly NewEvent[] {
    let out = events;
    for (const hook of this.#hooks) {
      if (!hook.stamp) continue;
      out = out.map((e) => {
        try {
          return hook.stamp!(streamId, e);
        } catch {
          return e;
        }
      });
    }
    return out;
  }

  appended(streamId: string, events: readonly NewEvent[]): void {
    for (const hook of this.#hooks) {
      try {
        hook.appended?.(streamId, events);
      } catch {
        // Observing must never fail what it observes.
      }
    }
  }
}
