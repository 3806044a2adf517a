// A budgeted call reserves the counted request it will send: the transcript and the last step's tool results,
// which the run has staged but not appended yet (they go with the call's ModelCalled).
import { z } from "zod";
import { describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, ModelTurn } from "../../src/index.ts";
import { tokenCounterFor } from "../../src/models/tokenCount.ts";
import { defineTool } from "../../src/tools/defineTool.ts";
import { eventually } from "../support/async.ts";
import { call, delegationFile, repliesSoFar, runtimeWith } from "../delegation/support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

// A long result: left out of the count, the second call's reservation would be short by most of it.
const report = defineTool({
  name: "report",
  description: "writes a report",
  input: z.object({}),
  run: () => Array.from({ length: 400 }, (_, i) => `finding ${i} holds`).join("; "),
});

describe("when a budgeted run's next call follows a tool's result", () => {
  it("reserves the request as it is sent, the staged result counted", async () => {
    const sent: ModelRequest[] = [];
    const model = async (req: ModelRequest): Promise<ModelTurn> => {
      sent.push(req);
      return repliesSoFar(req) === 0 ? call("report", {}) : { text: "done" };
    };
    const { rt } = await runtimeWith(store, model, { tools: [report] });
    // One call fits: the second parks, and its BudgetExhausted says what it asked.
    const root = await rt.createContext({ budget: { modelCalls: 1 } });
    const started = await rt.start(root.id, "write the report");
    await eventually(async () => (await rt.budget(root.id)).parked.length === 1, 10_000, "the run to park");
    const exhausted = (await store.readStream(root.id)).find((e) => e.type === "BudgetExhausted");
    expect(exhausted?.type).toBe("BudgetExhausted");

    await rt.extendBudget(root.id, { modelCalls: 1 });
    expect((await started.ended).status).toBe("completed");
    expect(sent).toHaveLength(2);
    const counter = await tokenCounterFor(sent[1]!.model);
    const counted = counter.request({ messages: sent[1]!.messages, tools: [...sent[1]!.tools] });
    expect(exhausted!.type === "BudgetExhausted" && exhausted!.data.asked.inputTokens).toBe(counted);
  });
});
