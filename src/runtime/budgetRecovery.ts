// Reservations a gone process left open: settled from the log when a run it drove is taken over here.
//
// Requirements:
// - A budgeted call's ModelReplied settles its reservation (`settles`, budgetGate.ts), so a reservation found
//   open for a run whose process is gone (the fold has read the replies: budgetLedger.ts `refresh`) is a call
//   with no reply on the log (released to nothing: the resumed run makes it again, under a reservation of its
//   own), or, on a log written before replies settled, a call whose reply carries no settle (settled now to that
//   reply's usage, as the gone process would have). What a tree spent is then exactly the usage of the replies
//   its log holds, and nothing stays reserved.
// - Only the open reservations of the run taken over; a settle already recorded (by the gone process, or by
//   another one taking over first) is left as it is (the ledger's conditional append).
import type { RecordedEvent } from "../events/schema.ts";
import { presetTable } from "../models/presets.ts";
import { budgetStreamOf, ZERO } from "../projections/budget.ts";
import type { ContextView } from "../projections/contexts.ts";
import { spentOf } from "./budgets.ts";
import { modelFor } from "./configuration.ts";
import type { EventStore } from "../events/store.ts";
import type { BudgetLedger } from "./budgetLedger.ts";
import type { Configuration } from "./configuration.ts";

/** Settles or releases every reservation the view's open run left open (a no-op for a tree without a budget). */
export const settleLeftOpen = async (
  parts: { budgets: BudgetLedger; store: EventStore; config: Configuration },
  view: ContextView,
): Promise<void> => {
  const runId = view.currentRunId;
  if (runId === null) return;
  const state = await parts.budgets.refresh(view.rootContextId);
  if (Object.keys(state.open).length === 0) return;
  const mine = (await parts.store.readStream(budgetStreamOf(view.rootContextId))).flatMap((e) =>
    e.type === "BudgetReserved" &&
    state.open[e.data.reservationId] &&
    e.data.contextId === view.id &&
    e.data.runId === runId
      ? [e.data]
      : [],
  );
  if (mine.length === 0) return;
  const replies = new Map<number, Extract<RecordedEvent, { type: "ModelReplied" }>>();
  for (const f of await parts.store.readStream(view.id))
    if (f.type === "ModelReplied" && f.data.runId === runId) replies.set(f.data.step, f);
  const model = modelFor(parts.config, view);
  const preset = model.presetName === null ? undefined : presetTable(parts.config.options.presets)[model.presetName];
  for (const r of mine) {
    const reply = replies.get(r.step);
    const spent =
      reply && !reply.data.settles
        ? spentOf(preset, r.amount.inputTokens, reply.data.usage, reply.data.toolCalls.length)
        : ZERO;
    await parts.budgets.settle(view.rootContextId, r.reservationId, spent);
  }
};
