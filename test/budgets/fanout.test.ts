// Budgets per tree through the public API: a 64-leaf fan-out stops within its budget, parks, and goes on when extended.
import { afterEach, describe, expect, it } from "vitest";
import type { EventStore, RecordedEvent } from "../../src/index.ts";
import { eventually } from "../support/async.ts";
import { storeForFile } from "../support/storeForFile.ts";
import { closeRuntimes, runtimeWith } from "../delegation/support.ts";
import { atRest, fanOutModel, FAN } from "./support.ts";

let store: EventStore;
storeForFile((s) => (store = s));
afterEach(closeRuntimes);

const MAX_OUTPUT = 64;
const presets = {
  Default: { model: "gpt-4o-mini", maxOutputTokens: MAX_OUTPUT, price: { inputPerMTok: 0.15, outputPerMTok: 0.6 } },
};

const treeEvents = async (
  rt: Awaited<ReturnType<typeof runtimeWith>>["rt"],
  root: string,
): Promise<RecordedEvent[]> => {
  const ids = new Set((await rt.contexts({ rootContextId: root })).map((c) => c.id));
  return (await rt.events()).filter((e) => ids.has(e.streamId) || e.streamId === `${root}:budget`);
};

describe("when a 64-leaf fan-out runs under a token budget too small for it", () => {
  it("stops within the budget plus one reservation, parks, and finishes once the budget is extended", async () => {
    const { rt } = await runtimeWith(store, fanOutModel, { presets });
    const limit = 60_000;
    const root = await rt.createContext({ budget: { totalTokens: limit } });
    const started = await rt.start(root.id, "split the work");
    let done = false;
    void started.ended.then(() => (done = true));

    await eventually(() => atRest(rt, root.id), 30_000, "the tree to park on its budget");
    const before = await rt.budget(root.id);
    expect(done).toBe(false);
    expect(before.limits).toEqual({ totalTokens: limit });
    const events = await treeEvents(rt, root.id);
    // Each call reserved its counted input (what each reply reports here) plus the most output; a refused one asked as much.
    const asked = events.flatMap((e) =>
      e.type === "ModelReplied"
        ? [e.data.usage!.inputTokens + MAX_OUTPUT]
        : e.type === "BudgetExhausted"
          ? [e.data.asked.inputTokens + e.data.asked.outputTokens]
          : [],
    );
    expect(before.spent.totalTokens).toBeLessThanOrEqual(limit + Math.max(...asked));
    expect(before.spent.totalTokens).toBeGreaterThan(0);
    // Some leaves ran, not all: the budget stopped the rest.
    const replies = events.filter((e) => e.type === "ModelReplied").length;
    expect(replies).toBeGreaterThan(0);
    expect(replies).toBeLessThan(1 + FAN + FAN * FAN);
    const exhausted = events.filter((e) => e.type === "BudgetExhausted");
    expect(exhausted.length).toBeGreaterThanOrEqual(before.parked.length);
    expect(exhausted[0]!.data).toMatchObject({ limit: "totalTokens", limits: { totalTokens: limit } });
    for (const p of before.parked) expect((await rt.context(p.contextId))!.status).toBe("running");

    await rt.extendBudget(root.id, { totalTokens: 1_000_000 });
    const outcome = await started.ended;
    expect(outcome).toMatchObject({ status: "completed", response: "all parts done" });

    const after = await rt.budget(root.id);
    expect(after.limits).toEqual({ totalTokens: limit + 1_000_000 });
    expect(after.parked).toEqual([]);
    expect(after.reserved.modelCalls).toBe(0);
    // Every model call of the tree billed once: the budget's spend is the usage rolled up from the replies.
    const { rollup } = await rt.usage(root.id);
    expect(rollup!.modelCalls).toBe(1 + FAN + FAN * FAN + 1 + FAN);
    expect(after.spent).toMatchObject({
      inputTokens: rollup!.inputTokens,
      outputTokens: rollup!.outputTokens,
      modelCalls: rollup!.modelCalls,
    });
    expect(after.spent.toolCalls).toBe(1 + FAN);
    expect(after.spent.costUsd).toBeCloseTo((rollup!.inputTokens * 0.15 + rollup!.outputTokens * 0.6) / 1e6, 6);
    expect((await rt.contexts({ rootContextId: root.id })).every((c) => c.status === "idle")).toBe(true);
  }, 60_000);
});
