// Live model output for `rt.subscribe` listeners that ask for it: pieces of the reply as they stream, never stored.
//
// Requirements:
// - A delta names the model call it belongs to (context, run, step, attempt): the call's `ModelCalled` is stored
//   before its first delta, and its `ModelReplied` (the whole turn, the only thing stored) or `ModelCallFailed` after.
// - Deltas are told from stored events by `type: "ModelDelta"` (no stored event has it) and by having no position.
// - Nobody listening means no deltas asked for: the model adapter then need not stream at all.
// - A listener that throws does not break the model call nor the other listeners.
import type { RecordedEvent } from "../events/schema.ts";
import type { EventStore, Unsubscribe } from "../events/store.ts";
import type { ModelDelta } from "../models/port.ts";

/** One live piece of a model reply: not stored, not replayed, no global position. */
export type LiveDelta = {
  readonly type: "ModelDelta";
  readonly live: true;
  readonly contextId: string;
  readonly runId: string;
  readonly step: number;
  readonly attempt: number;
  /** `{ kind: "text", text }` or `{ kind: "tool_call", index, name?, arguments }`. */
  readonly delta: ModelDelta;
};

/** What a listener with `{ deltas: true }` receives: the stored events and the live deltas. */
export type LiveEvent = RecordedEvent | LiveDelta;

/** True for a live delta, false for a stored event. */
export const isLiveDelta = (e: LiveEvent): e is LiveDelta => e.type === "ModelDelta";

export class LiveDeltas {
  private readonly listeners = new Set<(d: LiveDelta) => void>();

  get listening(): boolean {
    return this.listeners.size > 0;
  }

  listen(listener: (d: LiveDelta) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  publish(delta: LiveDelta): void {
    for (const listener of this.listeners) {
      try {
        listener(delta);
      } catch {
        // A listener's bug is its own: the model call and the other listeners go on.
      }
    }
  }
}

/** The stored events after `after`, and with `deltas`, the live deltas as they arrive. */
export const subscribeLive = (
  store: EventStore,
  deltas: LiveDeltas,
  after: number,
  listener: (e: LiveEvent) => void,
  withDeltas: boolean,
): Unsubscribe => {
  const stored = store.subscribe(after, listener);
  if (!withDeltas) return stored;
  const live = deltas.listen(listener);
  return () => {
    live();
    stored();
  };
};
