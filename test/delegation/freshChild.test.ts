// A fresh child's ContextCreated goes out in its first run's append, after its caller's SubordinateCalled.
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { assertInvariants } from "../../src/testing/index.ts";
import { call, delegationFile, isFirstStep, last, runtimeWith } from "./support.ts";

let base: EventStore;
delegationFile((s) => (base = s));

type Append = { streamId: string; types: string[]; expectedVersion: unknown };

/** `base`, with every append it is asked for noted in order: the stream, the event types, the expected version. `after`: called once each has landed. */
const recordingStore = (after?: (a: Append) => Promise<void>) => {
  const appends: Append[] = [];
  const store = new Proxy(base, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop !== "append" || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (streamId: string, events: NewEvent[], opts: { expectedVersion: unknown }) => {
        const a = { streamId, types: events.map((e) => e.type), expectedVersion: opts.expectedVersion };
        appends.push(a);
        const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, streamId, events, opts);
        await after?.(a);
        return result;
      };
    },
  });
  return { store, appends };
};

describe("when A0 delegates to a fresh child", () => {
  it("records the child's ContextCreated with its run's start and first model call, in one append after A0's SubordinateCalled", async () => {
    const { store, appends } = recordingStore();
    const { rt } = await runtimeWith(store, (req) =>
      req.agentNumber === 0 && isFirstStep(req)
        ? call("call_subordinate", { message: "look it up", reset: true }, "d1")
        : { text: "done" },
    );
    const root = await rt.createContext({ name: "root" });
    expect((await rt.send(root.id, "delegate")).status).toBe("completed");

    const [child] = (await rt.contexts({ rootContextId: root.id })).filter((c) => c.agentNumber === 1);
    const ofChild = appends.filter((a) => a.streamId === child!.id);
    expect(ofChild[0]).toEqual({
      streamId: child!.id,
      types: ["ContextCreated", "MessageReceived", "RunStarted", "ModelCalled"],
      expectedVersion: "no_stream",
    });
    // Its first append, then its end: nothing else is written to the child's stream.
    expect(ofChild).toHaveLength(2);
    const calledAt = appends.findIndex((a) => a.streamId === root.id && a.types.includes("SubordinateCalled"));
    expect(calledAt).toBeGreaterThanOrEqual(0);
    expect(calledAt).toBeLessThan(appends.indexOf(ofChild[0]!));
    const stream = await rt.events({ contextId: child!.id });
    expect(stream.slice(0, 4).map((e) => [e.type, e.streamVersion])).toEqual([
      ["ContextCreated", 1],
      ["MessageReceived", 2],
      ["RunStarted", 3],
      ["ModelCalled", 4],
    ]);
    await assertInvariants(rt, { rootContextId: root.id });
  });
});

describe("when A0 is stopped while its fresh child is being set up", () => {
  it("records the child's ContextCreated alone, so the SubordinateCalled naming it names a context, and never runs the child", async () => {
    let childModelCalls = 0;
    let rootId = "";
    let stopping: Promise<unknown> | null = null;
    // The stop is asked as A0's SubordinateCalled lands, and lands before the delegation goes on to start the child.
    const { store, appends } = recordingStore(async (a) => {
      if (a.streamId !== rootId || !a.types.includes("SubordinateCalled")) return;
      stopping = rt.stop(rootId);
      // Held until A0's machine has left `active` (which aborts the run's signal, the delegation's included).
      await waitFor(rt.actor(rootId)!, (s) => !s.matches({ running: "active" }));
    });
    const { rt } = await runtimeWith(store, (req) => {
      if (req.agentNumber > 0) childModelCalls += 1;
      return req.agentNumber === 0 && isFirstStep(req)
        ? call("call_subordinate", { message: "look it up", reset: true }, "d1")
        : { text: `ok: ${last(req).content}` };
    });
    const root = await rt.createContext({ name: "root" });
    rootId = root.id;
    const end = await rt.send(root.id, "delegate");
    await stopping;
    expect(end.status).toBe("stopped");
    const called = (await rt.events({ contextId: root.id })).find((e) => e.type === "SubordinateCalled");
    if (called?.type !== "SubordinateCalled") throw new Error("no SubordinateCalled");
    const childId = called.data.childContextId;
    expect(appends.filter((a) => a.streamId === childId)).toEqual([
      { streamId: childId, types: ["ContextCreated"], expectedVersion: "no_stream" },
    ]);
    expect(childModelCalls).toBe(0);
    expect((await rt.context(childId))?.status).toBe("idle");
    await assertInvariants(rt, { rootContextId: root.id });
  });
});
