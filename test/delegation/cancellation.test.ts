// DESIGN §5 "Cancellation" through the public API: stopping a caller stops its subtree; stopping a child alone; a failing child.
import { describe, expect, it } from "vitest";
import { ModelError, type EventStore, type ModelRequest, type Runtime } from "../../src/index.ts";
import { gate } from "../support/async.ts";
import {
  call,
  delegationFile,
  eventsOf,
  footer,
  isFirstStep,
  last,
  refused,
  runtimeWith,
  toolResults,
  typesOf,
  userMessages,
} from "./support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

/** A0 → A1 → … down to A<holdAt>, whose model call hangs until the run is stopped; above it each level delegates once, then answers. */
const chain = async (holdAt: number) => {
  const held = gate();
  const { rt, model } = await runtimeWith(store, async (req) => {
    if (req.agentNumber === holdAt && isFirstStep(req)) {
      held.open();
      await new Promise(() => undefined); // the scripted model rejects this call with "aborted" when the run is stopped
    }
    if (req.agentNumber < holdAt && isFirstStep(req))
      return call("call_subordinate", { message: `work for A${req.agentNumber + 1}` }, `c_from_A${req.agentNumber}`);
    return { text: `A${req.agentNumber} carried on after: ${last(req).content}` };
  });
  const root = await rt.createContext();
  const running = rt.send(root.id, "start");
  await held.promise;
  const ids = [root.id];
  for (let n = 1; n <= holdAt; n++) ids.push((await rt.children(ids[n - 1]!))[0]!.id);
  return { rt, model, running, ids };
};

const lastEvent = async (rt: Runtime, id: string) => (await rt.events({ contextId: id })).at(-1)!;
const requestsOf = (requests: readonly ModelRequest[], id: string) => requests.filter((r) => r.contextId === id);

describe("when the caller at depth 0 is stopped while its A1 runs", () => {
  it("stops A1 by 'superior', gives A0 no result, and records both ends", async () => {
    const { rt, model, running, ids } = await chain(1);
    const [a0, a1] = ids as [string, string];
    await rt.stop(a0);

    expect(await running).toMatchObject({ status: "stopped", response: null });
    expect(await rt.context(a1)).toMatchObject({ status: "stopped" });
    expect((await lastEvent(rt, a1)).type).toBe("RunStopped");
    expect((await eventsOf(rt, a1, "RunStopped")).map((e) => e.data.by)).toEqual(["superior"]);
    expect((await eventsOf(rt, a1, "ModelCallFailed")).map((e) => e.data.reason)).toEqual(["aborted"]);

    expect(await rt.context(a0)).toMatchObject({ status: "stopped" });
    expect((await eventsOf(rt, a0, "RunStopped")).map((e) => e.data.by)).toEqual(["user"]);
    expect(await typesOf(rt, a0)).toEqual([
      "ContextCreated",
      "MessageReceived",
      "RunStarted",
      "ModelCalled",
      "ModelReplied",
      "ToolCalled",
      "SubordinateCalled",
      "ToolFailed",
      "RunStopped",
    ]);
    expect((await eventsOf(rt, a0, "ToolFailed")).map((e) => e.data)).toMatchObject([
      { toolCallId: "c_from_A0", name: "call_subordinate", error: "Stopped while running.", repairable: false },
    ]);
    expect(requestsOf(model.requests, a0)).toHaveLength(1);
  });
});

describe("when the caller at depth 1 is stopped while its A2 runs", () => {
  it("stops A2 by 'superior', gives A1 no result, and A0 gets the 'was stopped' error and carries on", async () => {
    const { rt, model, running, ids } = await chain(2);
    const [a0, a1, a2] = ids as [string, string, string];
    expect(await rt.stop(a1)).toMatchObject({ status: "stopped" });

    expect((await eventsOf(rt, a2, "RunStopped")).map((e) => e.data.by)).toEqual(["superior"]);
    expect(await rt.context(a2)).toMatchObject({ status: "stopped" });
    expect((await eventsOf(rt, a1, "RunStopped")).map((e) => e.data.by)).toEqual(["user"]);
    expect(await eventsOf(rt, a1, "SubordinateReturned")).toEqual([]);
    expect(await eventsOf(rt, a1, "ToolReturned")).toEqual([]);
    expect(requestsOf(model.requests, a1)).toHaveLength(1);

    const result = await running;
    const seen = `Subordinate context '${a1}' was stopped.`;
    expect(result).toMatchObject({ status: "completed", response: `A0 carried on after: ${seen}` });
    expect(toolResults(requestsOf(model.requests, a0).at(-1)!)).toEqual([seen]);
  });
});

describe("when the root is stopped while A1 and A2 run", () => {
  it("stops every running descendant by 'superior', and no level gets a result", async () => {
    const { rt, running, ids } = await chain(2);
    const [a0, a1, a2] = ids as [string, string, string];
    await rt.stop(a0);
    expect(await running).toMatchObject({ status: "stopped" });
    for (const [id, by] of [
      [a0, "user"],
      [a1, "superior"],
      [a2, "superior"],
    ] as const) {
      expect(await rt.context(id)).toMatchObject({ status: "stopped" });
      expect((await eventsOf(rt, id, "RunStopped")).map((e) => e.data.by)).toEqual([by]);
      expect((await lastEvent(rt, id)).type).toBe("RunStopped");
    }
    expect([
      ...(await eventsOf(rt, a0, "SubordinateReturned")),
      ...(await eventsOf(rt, a1, "SubordinateReturned")),
    ]).toEqual([]);
  });
});

describe("when only the child is stopped", () => {
  it("gives the caller's model the 'was stopped' error, and the caller's run goes on to complete", async () => {
    const { rt, model, running, ids } = await chain(1);
    const [a0, a1] = ids as [string, string];
    await rt.stop(a1);

    const seen = refused("call_subordinate", `Subordinate context '${a1}' was stopped.`);
    expect(await running).toMatchObject({ status: "completed", response: `A0 carried on after: ${seen}` });
    expect(toolResults(requestsOf(model.requests, a0).at(-1)!)).toEqual([seen]);
    expect((await eventsOf(rt, a1, "RunStopped")).map((e) => e.data.by)).toEqual(["user"]);
    expect((await eventsOf(rt, a0, "SubordinateReturned")).map((e) => e.data)).toMatchObject([
      { childContextId: a1, outcome: "stopped", result: null, reason: null },
    ]);
    expect((await eventsOf(rt, a0, "ToolFailed")).map((e) => [e.data.error, e.data.repairable])).toEqual([
      [seen, true],
    ]);
    expect(await rt.context(a0)).toMatchObject({ status: "idle" });
  });
});

describe("when the child's model fails", () => {
  it("reaches the caller as a repairable error naming the child and the reason, and the child is reusable with its history", async () => {
    let childId = "";
    const { rt, model } = await runtimeWith(store, (req) => {
      if (req.agentNumber === 1) {
        if (last(req).content === "task one") throw new ModelError("authentication", "bad key", false);
        return { text: "A1 recovered" };
      }
      if (!isFirstStep(req)) return { text: `A0 saw: ${last(req).content}` };
      return last(req).content === "first"
        ? call("call_subordinate", { message: "task one" })
        : call("call_subordinate", { message: "task two", context_id: childId });
    });
    const root = await rt.createContext();
    const first = await rt.send(root.id, "first");
    childId = (await rt.children(root.id))[0]!.id;

    const seen = refused(
      "call_subordinate",
      `Subordinate context '${childId}' failed (model_error): Model call failed (authentication, not retryable): bad key`,
    );
    expect(first).toMatchObject({ status: "completed", response: `A0 saw: ${seen}` });
    expect(await rt.context(childId)).toMatchObject({
      status: "failed",
      failure: { reason: "model_error", message: "Model call failed (authentication, not retryable): bad key" },
    });
    expect((await eventsOf(rt, root.id, "SubordinateReturned")).map((e) => e.data)).toMatchObject([
      {
        childContextId: childId,
        outcome: "failed",
        result: null,
        reason: "model_error: Model call failed (authentication, not retryable): bad key",
      },
    ]);

    const second = await rt.send(root.id, "second");
    expect(second).toMatchObject({ status: "completed", response: `A0 saw: A1 recovered${footer(1, childId)}` });
    expect(await rt.context(childId)).toMatchObject({ status: "idle", failure: null });
    expect(userMessages(requestsOf(model.requests, childId).at(-1)!)).toEqual(["task one", "task two"]);
    expect(await rt.children(root.id)).toHaveLength(1);
  });
});
