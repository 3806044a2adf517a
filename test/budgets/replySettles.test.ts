// A reply settles its call's reservation in the append that records it: at no point of the log is a call's reply
// there while its reservation is still held, so a run that ends right after a reply (a stop, a crash) leaves nothing
// reserved and needs no takeover to release it. On a log with one writer the reservation itself never reaches the log.
import { describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, ModelTurn, RecordedEvent } from "../../src/index.ts";
import { budgetStreamOf, initBudget, readBudget } from "../../src/projections/budget.ts";
import { call, delegationFile, runtimeWith } from "../delegation/support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

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
    // Read afresh from the log, the tree spent the same (the cut-off call by its BudgetSettled alone).
    const fromLog = await readBudget(store, root.id);
    expect(budget.spent).toMatchObject(fromLog.spent);
    expect(fromLog.reserved.modelCalls).toBe(0);

    // The log has one writer: reservations were held in its memory, and the log records what each call spent.
    expect((await store.readStream(budgetStreamOf(root.id))).filter((e) => e.type === "BudgetReserved")).toEqual([]);
    const tree = [
      root.id,
      ...(await rt.contexts({ rootContextId: root.id })).map((c) => c.id).filter((id) => id !== root.id),
    ];
    const replies: Extract<RecordedEvent, { type: "ModelReplied" }>[] = [];
    for (const id of tree) for (const e of await store.readStream(id)) if (e.type === "ModelReplied") replies.push(e);
    expect(replies).toHaveLength(1);
    for (const reply of replies) {
      expect(reply.data.settles).toBeDefined();
      // The log cut just before the reply holds nothing of the call; cut at the reply, its spend is there.
      const before = await readBudget(store, root.id, initBudget(), reply.globalPosition - 1);
      expect(before.spent.modelCalls).toBe(0);
      const then = await readBudget(store, root.id, initBudget(), reply.globalPosition);
      expect(then.reserved.modelCalls).toBe(0);
      expect(then.spent).toMatchObject({ inputTokens: 300, outputTokens: 30, modelCalls: 1, toolCalls: 1 });
    }
  });
});
