// A root created with a budget carries its first limits on its ContextCreated: nothing is appended to the tree's
// budget stream for them, the fold reads them back from the log after a restart, a message's budget (BudgetSet)
// still replaces them, and a fork of the root starts without one.
import { describe, expect, it } from "vitest";
import type { EventStore } from "../../src/index.ts";
import { budgetStreamOf, readBudget } from "../../src/projections/budget.ts";
import { delegationFile, runtimeWith } from "../delegation/support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

const answer = () => ({ text: "ok", usage: { inputTokens: 100, outputTokens: 10 } });

describe("when a root is created with a budget", () => {
  it("records the limits on its ContextCreated alone, and a restart reads them back from there", async () => {
    const first = await runtimeWith(store, answer);
    const root = await first.rt.createContext({ budget: { totalTokens: 5_000, modelCalls: 4 } });
    const created = (await store.readStream(root.id))[0]!;
    expect(created.type === "ContextCreated" && created.data.budget).toEqual({ totalTokens: 5_000, modelCalls: 4 });
    expect(await store.readStream(budgetStreamOf(root.id))).toEqual([]);
    expect((await first.rt.send(root.id, "hello")).status).toBe("completed");
    const before = await first.rt.budget(root.id);
    expect(before.limits).toEqual({ totalTokens: 5_000, modelCalls: 4 });
    expect(before.spent.modelCalls).toBe(1);
    await first.rt.close();

    const second = await runtimeWith(store, answer);
    const after = await second.rt.budget(root.id);
    expect(after.limits).toEqual(before.limits);
    expect(after.spent).toEqual(before.spent);
    const folded = await readBudget(store, root.id);
    expect(folded.limits).toEqual(before.limits);
    expect(folded.since).toBe(created.recordedAt);
  });

  it("takes a message's budget over them (BudgetSet), and a fork of the root has none", async () => {
    const { rt } = await runtimeWith(store, answer);
    const root = await rt.createContext({ budget: { modelCalls: 1 } });
    expect((await rt.send(root.id, "one")).status).toBe("completed");
    expect((await rt.send(root.id, "two", { budget: { modelCalls: 2 } })).status).toBe("completed");
    const budget = await rt.budget(root.id);
    expect(budget.limits).toEqual({ modelCalls: 3 });
    expect(budget.spent.modelCalls).toBe(2);
    expect((await readBudget(store, root.id)).limits).toEqual({ modelCalls: 3 });

    const at = (await store.readStream(root.id)).at(-1)!.globalPosition;
    const fork = await rt.fork(root.id, { at });
    expect((await rt.budget(fork.id)).limits).toBeNull();
  });
});
