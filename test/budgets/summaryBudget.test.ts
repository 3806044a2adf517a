// A compaction's summary call is a model call of the tree like any other: reserved from its budget before it is
// made, settled to its usage, and parking the run when it does not fit (the run compacts afresh once extended,
// and its step's ModelCalled, recorded before the summary, is not recorded twice).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../src/runtime/runtime.ts";
import type { EventStore } from "../../src/events/store.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";
import { eventually } from "../support/async.ts";
import type { WindowServer } from "../support/windowServer.ts";
import { openWindowedRuntime, type WindowedRuntime } from "../support/windowedRuntime.ts";

const WINDOW = 5000;
const MAX_OUTPUT = 200;
let store: EventStore;
let server: WindowServer;
let rt: Runtime;
let opened: WindowedRuntime;

beforeAll(async () => {
  opened = await openWindowedRuntime({
    window: WINDOW,
    maxOutput: MAX_OUTPUT,
    resultWords: 150,
    limits: { passivateAfterMs: 60_000 },
  });
  ({ store, server, rt } = opened);
});
afterAll(() => opened.close());

const treeEvents = async (root: string): Promise<RecordedEvent[]> => {
  const ids = new Set((await rt.contexts({ rootContextId: root })).map((c) => c.id));
  return (await rt.events()).filter((e) => ids.has(e.streamId));
};

describe("when a budgeted tree's history is compacted", () => {
  it("reserves each summary call, parks when it does not fit, and counts its usage once extended", async () => {
    const root = await rt.createContext();
    // Each turn may make its three calls (A0, its subordinate, A0 again) and no more: a turn that also compacts
    // needs one more for the summary, so it parks (at the summary, or at a call after it).
    let parkedTurn = 0;
    for (let turn = 1; turn <= 30 && parkedTurn === 0; turn++) {
      const started = await rt.start(root.id, `turn ${turn}`, { budget: { modelCalls: 3 } });
      let ended = false;
      void started.ended.then(() => (ended = true));
      await eventually(async () => ended || (await rt.budget(root.id)).parked.length > 0, 20_000, "an end or a park");
      if (ended) {
        expect((await started.ended).status).toBe("completed");
        continue;
      }
      parkedTurn = turn;
      const parked = await treeEvents(root.id);
      const exhausted = parked.filter((e) => e.type === "BudgetExhausted");
      expect(exhausted).toHaveLength(1);
      expect(exhausted[0]!.type === "BudgetExhausted" && exhausted[0]!.data.limit).toBe("modelCalls");
      await rt.extendBudget(root.id, { modelCalls: 5 });
      expect((await started.ended).status).toBe("completed");
    }
    expect(parkedTurn).toBeGreaterThan(0);

    const events = await treeEvents(root.id);
    const compactions = events.flatMap((e) => (e.type === "HistoryCompacted" ? [e.data] : []));
    expect(compactions.length).toBeGreaterThan(0);
    // The step that parked in its compaction was recorded once.
    const calls = events.flatMap((e) =>
      e.type === "ModelCalled" ? [`${e.streamId}/${e.data.runId}/${e.data.step}/${e.data.attempt}`] : [],
    );
    expect(new Set(calls).size).toBe(calls.length);
    // Spent: every reply's usage and every summary's, each once.
    const replies = events.flatMap((e) => (e.type === "ModelReplied" ? [e.data] : []));
    const budget = await rt.budget(root.id);
    expect(budget.reserved.modelCalls).toBe(0);
    expect(budget.spent.modelCalls).toBe(replies.length + compactions.reduce((n, c) => n + c.calls, 0));
    expect(budget.spent.inputTokens).toBe(
      replies.reduce((n, r) => n + r.usage!.inputTokens, 0) +
        compactions.reduce((n, c) => n + (c.usage?.inputTokens ?? 0), 0),
    );
    expect(budget.spent.outputTokens).toBe(
      replies.reduce((n, r) => n + r.usage!.outputTokens, 0) +
        compactions.reduce((n, c) => n + (c.usage?.outputTokens ?? 0), 0),
    );
  }, 120_000);
});
