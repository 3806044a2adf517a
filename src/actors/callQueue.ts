// A run's side of the runtime's call gate (models/callGate.ts): wait for a place before a model call, visibly.
//
// Requirements:
// - A call the gate admits at once records nothing; one that must wait records ModelCallQueued before it waits,
//   and ModelCallAdmitted when its place comes (handed to the call, which records it with its ModelCalled).
// - While it waits the handle says `queued`: a stop then takes it out of the queue and the model is never called.
// - The place is given back exactly once on every path: the reply, a failure, a stop (an interruption); the call
//   says how it ended (`ticket.done(outcome)`) so a 429 pauses its preset for every caller.
// - A retry after a 429 asks for its place as one (it goes before calls not sent yet).
import * as Effect from "effect/Effect";
import * as Exit from "effect/Exit";
import type { DomainEvent } from "../events/schema.ts";
import type { CallGate, Ticket } from "../models/callGate.ts";
import type { LogError } from "./loopErrors.ts";
import type { RunHandle } from "./runHandle.ts";

/**
 * The runtime's gate and the preset whose limits this run's calls fall under (null: a model given by name);
 * `tokens` counts the request's input, for a preset with a `tokensPerMinute`.
 */
export type GateEnv = { gate: CallGate; preset: string | null; tokens?: () => Promise<number> };

/** What the admitted call gets: the fact to record with its ModelCalled (when it waited), and its place. */
export type Place = { admitted: DomainEvent | null; ticket: Ticket | null };

const NO_PLACE: Place = { admitted: null, ticket: null };

/**
 * `use` once the gate gives the call a place (at once when there is no gate). `record` appends to the run's stream.
 */
export const withPlace = <A, E>(
  gate: GateEnv | undefined,
  handle: RunHandle,
  at: { step: number; attempt: number; retry: boolean },
  record: (events: DomainEvent[]) => Effect.Effect<unknown, LogError>,
  use: (place: Place) => Effect.Effect<A, E | LogError>,
): Effect.Effect<A, E | LogError> => {
  if (gate === undefined) return use(NO_PLACE);
  return Effect.uninterruptibleMask((restore) =>
    Effect.gen(function* () {
      const tokens = gate.tokens ? yield* restore(Effect.promise(gate.tokens)) : 0;
      const entry = gate.gate.enter(gate.preset, { tokens, retry: at.retry });
      let ticket: Ticket;
      let admitted: DomainEvent | null = null;
      if ("ticket" in entry) ticket = entry.ticket;
      else {
        handle.queued = true;
        const queued: DomainEvent = {
          type: "ModelCallQueued",
          data: { runId: handle.runId, step: at.step, attempt: at.attempt, preset: gate.preset, ahead: entry.ahead },
        };
        ticket = yield* restore(
          record([queued]).pipe(Effect.andThen(Effect.promise((signal) => entry.admitted(signal)))),
        ).pipe(
          // A stop (or a failed append) takes the call out of the queue, or gives back the place it got meanwhile;
          // `queued` stays set then, so the stop and the budget know the call was never sent.
          Effect.onExit((exit) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) handle.queued = false;
              else entry.cancel();
            }),
          ),
        );
        admitted = {
          type: "ModelCallAdmitted",
          data: {
            runId: handle.runId,
            step: at.step,
            attempt: at.attempt,
            waitedMs: Math.max(0, Math.round(ticket.waitedMs)),
          },
        };
      }
      return yield* restore(use({ admitted, ticket })).pipe(Effect.ensuring(Effect.sync(() => ticket.done())));
    }),
  );
};
