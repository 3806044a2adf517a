// A run's side of its tree's budget: reserve before a model call, settle after it, park when it does not fit.
//
// Requirements:
// - Each step reserves once, before its first attempt (so its ModelCalled is not recorded when it parks); its
//   retries draw on that one reservation, so a retried call never counts twice against the budget.
// - The reply settles the reservation to the call's real usage (the counted input when the model reports none)
//   and the number of tool calls it asked for: its ModelReplied carries the settle (`replySettles`), so the reply
//   and its settle reach the log in one append, whatever ends the run after it (a stop, a crash). A reservation
//   left open (a crash before the reply was appended) is released when the run is taken over (budgetRecovery.ts),
//   so what a tree spent is always the usage of the replies it recorded. A call given up settles to nothing; a
//   call cut off by a stop settles to its counted input (the provider saw it).
// - A call that does not fit parks the run: the gate has recorded BudgetExhausted in the run's stream (and
//   BudgetRestored with it when an extension landed meanwhile: then the machine goes on at once).
// - A compaction's summary call (compaction.ts) is a model call too: reserved before it is made (its request as it
//   is, nothing staged counted) and settled by an append of its own (its reply is no ModelReplied). One that does not
//   fit parks the run with the step's ModelCalled already recorded: the run goes on without recording it again
//   (`parkedCallOf`), and compacts afresh.
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import type { BudgetAmount, RecordedEvent } from "../events/schema.ts";
import type { ChatMessage } from "../models/messages.ts";
import type { ModelTurn, ToolSpec } from "../models/port.ts";
import { type LogError, logWrite } from "./loopErrors.ts";
import type { RunHandle } from "./runHandle.ts";

/** What a reply records to settle its call's reservation (ModelReplied's `settles`). */
export type ReplySettle = { reservationId: string; spent: BudgetAmount };

/** An open reservation: settled exactly once. */
export type Reservation = {
  /** The settle the call's ModelReplied carries: what the call spent. */
  settles(usage: { inputTokens: number; outputTokens: number } | null, toolCalls: number): ReplySettle;
  /** Nothing spent (`cut`: the call was sent, so its counted input was). */
  release(cut: boolean): Promise<void>;
  /** Settled to what the call spent by an append of its own (a call whose reply is no ModelReplied: a summary). */
  spend(usage: { inputTokens: number; outputTokens: number } | null): Promise<void>;
};

/** What the runtime gives the loop: null when the run's tree has no budget (nothing is reserved then). */
export type BudgetPort = {
  reserve(input: {
    step: number;
    messages: () => ChatMessage[];
    tools: readonly ToolSpec[];
    /** A compaction's summary request: these messages are all it sends (what the run staged is not in it). */
    summary?: boolean;
  }): Promise<{ reserved: Reservation | null } | { parked: RecordedEvent[] }>;
};

/** A summary call of a compaction did not fit the tree's budget: the run parked with these facts. */
export class BudgetParked extends Data.TaggedError("BudgetParked")<{ facts: RecordedEvent[] }> {}

/**
 * `call` (a model call with its retries) under a reservation of the tree's budget; `{ parked }` with the
 * facts the run parked with when the call does not fit (the handle says `parked`).
 */
export const withBudget = <E>(
  budget: BudgetPort | undefined,
  handle: RunHandle,
  input: Parameters<BudgetPort["reserve"]>[0],
  call: Effect.Effect<ModelTurn, E>,
): Effect.Effect<ModelTurn | { parked: RecordedEvent[] }, E | LogError> =>
  budget === undefined
    ? call
    : Effect.gen(function* () {
        const r = yield* logWrite(() => budget.reserve(input));
        if ("parked" in r) {
          handle.parked = true;
          return { parked: r.parked };
        }
        const reservation = r.reserved;
        if (reservation === null) return yield* call;
        const turn = yield* call.pipe(
          // A stop interrupts the call; its release is best effort (the stop itself must not fail on it).
          // A call stopped while it waited in the queue was never sent: nothing of it was spent.
          Effect.onInterrupt(() => Effect.promise(() => reservation.release(!handle.queued).catch(() => undefined))),
          Effect.tapError(() => logWrite(() => reservation.release(false))),
        );
        const toolCalls = Array.isArray(turn.toolCalls) ? turn.toolCalls.length : 0;
        handle.unsettled = reservation.settles(turn.usage ?? null, toolCalls);
        return turn;
      });

/** The settle the reply being recorded carries (none when its tree has no budget); taken once. */
export const replySettles = (handle: RunHandle): { settles?: ReplySettle } => {
  const settles = handle.unsettled;
  if (settles === null) return {};
  handle.unsettled = null;
  return { settles };
};

/**
 * The model call of run `runId` on the log with no reply or failure after it, that the run parked on its budget
 * after (its step-1 call, which went with its start; a call whose compaction's summary did not fit): the run goes
 * on without recording it again. Null when there is none.
 */
export const parkedCallOf = (
  facts: readonly RecordedEvent[],
  runId: string,
): { step: number; attempt: number } | null => {
  let open: { step: number; attempt: number } | null = null;
  let parked = false;
  for (const f of facts) {
    if (!("runId" in f.data) || f.data.runId !== runId) continue;
    if (f.type === "ModelCalled") {
      open = { step: f.data.step, attempt: f.data.attempt };
      parked = false;
    } else if (f.type === "ModelReplied" || f.type === "ModelCallFailed") open = null;
    else if (f.type === "BudgetExhausted") parked = open !== null;
  }
  return parked ? open : null;
};
