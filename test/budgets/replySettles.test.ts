// A reply settles its call's reservation in the append that records it: at no point of the log is a call's reply
// there while its reservation is still held, so a run that ends right after a reply (a stop, a crash) leaves nothing
// reserved and needs no takeover to release it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, ModelTurn, RecordedEvent } from "../../src/index.ts";
import { budgetStreamOf, foldBudget } from "../../src/projections/budget.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { call, closeRuntimes, runtimeWith } from "../delegation/support.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterEach(closeRuntimes);
afterAll(async () => {
  await store.close();
});

describe("when a budgeted run is stopped after a reply, while its subordinate's call is in flight", () => {
  it("holds nothing afterwards, and at every point of the log a call's reply and its settle are there together", async () => {
    let childCalled!: () => void;
    const childInFlight = new Promise<void>((resolve) => (childCalled = resolve));
    const model = (req: ModelRequest): ModelTurn | Promise<ModelTurn> => {
      const usage = { inputTokens: 300, outputTokens: 30 };
      if (req.agentNumber === 0) return { ...call("call_subordinate", { message: "look it up" }), usage };
      childCalled();
      // The subordinate's call never answers: only the stop ends it.
      return new Promise<ModelTurn>((_, reject) =>
        req.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
      );
    };
    const { rt } = await runtimeWith(store, model);
    const root = await rt.createContext({ budget: { totalTokens: 1_000_000 } });
    const sending = rt.send(root.id, "delegate");
    await childInFlight;
    await rt.stop(root.id);
    expect((await sending).status).toBe("stopped");

    const budget = await rt.budget(root.id);
    expect(budget.reserved.modelCalls).toBe(0);
    // A0's reply at its usage, and the subordinate's call the stop cut off at its counted input.
    expect(budget.spent.modelCalls).toBe(2);

    const budgetFacts = await store.readStream(budgetStreamOf(root.id));
    const reservations = budgetFacts.flatMap((e) => (e.type === "BudgetReserved" ? [e.data] : []));
    const tree = [
      root.id,
      ...(await rt.contexts({ rootContextId: root.id })).map((c) => c.id).filter((id) => id !== root.id),
    ];
    const replies: Extract<RecordedEvent, { type: "ModelReplied" }>[] = [];
    for (const id of tree) for (const e of await store.readStream(id)) if (e.type === "ModelReplied") replies.push(e);
    expect(replies).toHaveLength(1);
    for (const reply of replies) {
      const reservation = reservations.find(
        (r) => r.contextId === reply.streamId && r.runId === reply.data.runId && r.step === reply.data.step,
      );
      expect(reservation).toBeDefined();
      // The log cut at the reply: its reservation is settled there, to the reply's usage.
      const upTo = [...budgetFacts, ...replies]
        .filter((e) => e.globalPosition <= reply.globalPosition)
        .sort((a, b) => a.globalPosition - b.globalPosition);
      const then = foldBudget(upTo);
      expect(then.open[reservation!.reservationId]).toBeUndefined();
      expect(then.spent).toMatchObject({ inputTokens: 300, outputTokens: 30, modelCalls: 1, toolCalls: 1 });
    }
  });
});
