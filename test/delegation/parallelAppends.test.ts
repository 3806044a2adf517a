// How few appends a `parallel` start costs its caller: its ToolCalled goes with the jobs it records, and the
// jobs' delegations record their SubordinateCalled together.
import { describe, expect, it } from "vitest";
import type { EventStore } from "../../src/events/store.ts";
import { assertInvariants } from "../../src/testing/index.ts";
import { recordingStore } from "../../bench/support/recordingStore.ts";
import { call, delegationFile, isFirstStep, runtimeWith } from "./support.ts";

let base: EventStore;
delegationFile((s) => (base = s));

/** `base`, remembering every append (the bench's recorder); `of(id)` gives a stream's appends as their event types. */
const recording = () => {
  const store = recordingStore(base);
  const of = (streamId: string) =>
    store.appends.filter((a) => a.streamId === streamId).map((a) => a.events.map((e) => e.type).join("+"));
  return { store, of };
};

const job = (message: string) => ({ name: "call_subordinate", arguments: { message, reset: true } });

describe("when A0 starts three subordinates as parallel jobs", () => {
  it("records its ModelReplied and ToolCalled with the three ParallelJobStarted, then the three SubordinateCalled in one append", async () => {
    const { store, of } = recording();
    const { rt } = await runtimeWith(store, (req) =>
      req.agentNumber === 0 && isFirstStep(req)
        ? call("parallel", { tool_calls: [job("one"), job("two"), job("three")] }, "c_par")
        : { text: "done" },
    );
    const root = await rt.createContext({ name: "root" });
    expect((await rt.send(root.id, "fan out")).status).toBe("completed");

    const ofRoot = of(root.id);
    expect(ofRoot.slice(0, 4)).toEqual([
      "ContextCreated",
      "MessageReceived+RunStarted+ModelCalled",
      "ModelReplied+ToolCalled+ParallelJobStarted+ParallelJobStarted+ParallelJobStarted",
      "SubordinateCalled+SubordinateCalled+SubordinateCalled",
    ]);
    expect((await rt.contexts({ rootContextId: root.id })).filter((c) => c.agentNumber === 1)).toHaveLength(3);
    await assertInvariants(rt, { rootContextId: root.id });
  });

  it("still records a cancel's ToolCalled before it stops anything", async () => {
    const { store, of } = recording();
    let step = 0;
    const { rt } = await runtimeWith(store, (req) => {
      // The children answer only when stopped: there is something to cancel.
      if (req.agentNumber > 0)
        return new Promise((_, reject) =>
          req.signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
        );
      step += 1;
      if (step === 1) return call("parallel", { tool_calls: [job("slow")], wait: false }, "c_start");
      if (step === 2) return call("parallel", { action: "cancel" }, "c_cancel");
      return { text: "cancelled" };
    });
    const root = await rt.createContext({ name: "root" });
    expect((await rt.send(root.id, "start, then cancel")).status).toBe("completed");
    const ofRoot = of(root.id);
    // The start's ToolCalled went with its jobs; the cancel's alone, before the cancel ran.
    expect(ofRoot.filter((t) => t.includes("ToolCalled"))).toEqual([
      "ModelReplied+ToolCalled+ParallelJobStarted",
      "ModelReplied+ToolCalled",
    ]);
  });
});
