// A long life on one store: what the runtime holds after many runs does not grow with their number.
// (The RSS of 10,000 runs is in the footprint bench; this counts the structures that would hold a leak.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventStore } from "../../src/events/store.ts";
import type { ModelPort } from "../../src/models/port.ts";
import { createRuntime, internalsOf, type Runtime } from "../../src/runtime/runtime.ts";
import { eventually } from "../support/async.ts";
import { freshPgliteStore } from "../support/pglite.ts";

// A model that keeps nothing (the scripted model records every request, which is a test's memory, not the runtime's).
const model: ModelPort = { call: async () => ({ text: "done", usage: { inputTokens: 1, outputTokens: 1 } }) };

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

/** What the process holds that a leak would grow: timers and handles by kind, and the listeners on `process`. */
const processHolds = () => {
  const resources: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) resources[r] = (resources[r] ?? 0) + 1;
  const listeners = Object.fromEntries(process.eventNames().map((e) => [String(e), process.listenerCount(e)]));
  return { resources, listeners };
};

/**
 * What `now` holds beyond `then`: the kinds whose count grew. Fewer is not a leak (a timer of the store or of
 * the test runner may end between the two looks, as one did on a CI run), so only growth is reported.
 */
const grownSince = (then: ReturnType<typeof processHolds>, now: ReturnType<typeof processHolds>) => {
  const grown: string[] = [];
  for (const [kind, n] of Object.entries(now.resources))
    if (n > (then.resources[kind] ?? 0)) grown.push(`${kind}: ${then.resources[kind] ?? 0} -> ${n}`);
  for (const [event, n] of Object.entries(now.listeners))
    if (n > (then.listeners[event] ?? 0))
      grown.push(`process '${event}' listeners: ${then.listeners[event] ?? 0} -> ${n}`);
  return grown;
};

const sendMany = async (rt: Runtime, id: string, from: number, to: number) => {
  for (let i = from; i <= to; i++) expect((await rt.send(id, `message ${i}`)).status).toBe("completed");
};

describe("when one context takes many runs", () => {
  it("keeps one actor and the outcome of its last run only, and the process holds what it held after the first runs", async () => {
    const rt = await createRuntime({ store, model, tools: [] });
    try {
      const ctx = await rt.createContext({ name: "long life" });
      await sendMany(rt, ctx.id, 1, 10);
      const early = processHolds();
      await sendMany(rt, ctx.id, 11, 150);
      const { active } = internalsOf(rt);
      expect(active.size).toBe(1);
      expect(active.get(ctx.id)!.outcomes.size).toBe(1);
      expect(grownSince(early, processHolds())).toEqual([]);
    } finally {
      await rt.close();
    }
  });
});

describe("when many contexts each take a run", () => {
  it("passivates every actor once they are idle, and the process holds what it held before", async () => {
    const rt = await createRuntime({ store, model, tools: [], limits: { passivateAfterMs: 1 } });
    try {
      const first = await rt.createContext({ name: "warm-up" });
      await sendMany(rt, first.id, 1, 1);
      const { active } = internalsOf(rt);
      await eventually(() => active.size === 0 || undefined, 10_000, "the warm-up actor passivated");
      const before = processHolds();
      for (let i = 0; i < 100; i++) {
        const ctx = await rt.createContext({ name: `context ${i}` });
        await sendMany(rt, ctx.id, 1, 1);
      }
      await eventually(() => active.size === 0 || undefined, 10_000, "every actor passivated");
      expect(grownSince(before, processHolds())).toEqual([]);
    } finally {
      await rt.close();
    }
  });
});

describe("when one root delegates many times, each time to a fresh subordinate", () => {
  // Each call_subordinate with reset replaces the slot's child: the parent cannot continue the old one.
  const delegating: ModelPort = {
    call: async (req) =>
      req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool"
        ? {
            toolCalls: [
              {
                id: `d${req.messages.length}`,
                name: "call_subordinate",
                arguments: JSON.stringify({ message: "look it up", reset: true }),
              },
            ],
          }
        : { text: req.agentNumber === 0 ? "composed" : "found it" },
  };

  it("keeps the latest subordinate's actor only, the root's machine holds no replaced child, and a replaced one still answers from the log", async () => {
    const rt = await createRuntime({ store, model: delegating, tools: [], limits: { passivateAfterMs: 3_600_000 } });
    try {
      const root = await rt.createContext({ name: "long conversation" });
      await sendMany(rt, root.id, 1, 30);
      const children = await rt.children(root.id);
      expect(children).toHaveLength(30);
      const { active } = internalsOf(rt);
      const newest = children.at(-1)!.id;
      // The root and its newest subordinate: 28 of the replaced ones were let go when their successor came
      // (the last replaced one was let go when the newest was called; none of them is running).
      expect([...active.keys()].sort()).toEqual([root.id, newest].sort());
      const spawned = Object.keys(rt.actor(root.id)!.getSnapshot().children).filter((k) =>
        children.some((c) => c.id === k),
      );
      expect(spawned).toEqual([newest]);
      // A replaced subordinate is a context like any other: its history reads from the log.
      expect((await rt.history(children[0]!.id)).at(-1)).toMatchObject({ role: "assistant", content: "found it" });
    } finally {
      await rt.close();
    }
  });
});
