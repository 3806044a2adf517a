// A tool of your own gets its call's context without the run's scope (it cannot write to its run's stream),
// alone and as a job of `parallel`; the built-in delegation still gets it and records its call.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, type EventStore, type ModelRequest, type ModelTurn, type ToolContext } from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { call, closeRuntimes, isFirstStep, runtimeWith } from "../delegation/support.ts";

afterEach(closeRuntimes);

describe("given a tool of the embedder's own", () => {
  let store: EventStore;
  beforeAll(async () => {
    store = await freshPgliteStore({ inMemory: true });
  });
  afterAll(async () => {
    await store.close();
  });

  const seen: { keys: string[]; jobId: string | undefined }[] = [];
  const probe = defineTool({
    name: "probe",
    description: "Says which fields its context has.",
    input: z.object({}),
    run: (_input, ctx: ToolContext) => {
      seen.push({ keys: Object.keys(ctx).sort(), jobId: ctx.jobId });
      return "probed";
    },
  });

  it("when the model calls it directly and as a parallel job, then neither call's context holds `run`", async () => {
    const model = (req: ModelRequest): ModelTurn => {
      if (req.agentNumber === 0 && isFirstStep(req)) return call("probe", {});
      const results = req.messages.filter((m) => m.role === "tool").length;
      if (req.agentNumber === 0 && results === 1) {
        return call("parallel", {
          tool_calls: [
            { name: "probe", arguments: {} },
            { name: "call_subordinate", arguments: { message: "hello" } },
          ],
        });
      }
      if (req.agentNumber === 0 && results === 2) return call("parallel", { action: "await" });
      return { text: `done by A${req.agentNumber}` };
    };
    const { rt } = await runtimeWith(store, model, { tools: [probe] });
    const root = await rt.createContext();
    const outcome = await rt.send(root.id, "go");
    expect(outcome.status).toBe("completed");
    expect(seen).toHaveLength(2);
    expect(seen[1]!.jobId).toBeDefined();
    for (const s of seen) {
      expect(s.keys).toContain("toolCallId");
      expect(s.keys).not.toContain("run");
    }
    // The delegation (a built-in tool) still writes to its caller's stream.
    const types = (await rt.events({ contextId: root.id })).map((e) => e.type);
    expect(types).toContain("SubordinateCalled");
  });
});
