// The command path talks to the log only through appends: no projection fold, no read-back of what it just wrote.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPgliteStore } from "../support/pglite.ts";
import type { EventStore, SqlExecutor } from "../../src/events/store.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/models/scripted.ts";

let base: EventStore;
beforeAll(async () => {
  base = await freshPgliteStore();
});
afterAll(async () => {
  await base.close();
});

/** `base` with every call the runtime makes to it counted by kind: appends, stream and log reads, raw SQL. */
const countingStore = (store: EventStore) => {
  const calls: string[] = [];
  const sql: SqlExecutor = {
    query: (text, params) => (calls.push("sql"), store.sql.query(text, params)),
    exec: (text) => (calls.push("sql"), store.sql.exec(text)),
    transaction: (fn) => (calls.push("sql"), store.sql.transaction(fn)),
  };
  const counted = new Proxy(store, {
    get(target, prop) {
      if (prop === "sql") return sql;
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(prop));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: counted, calls };
};

/** Delegates once; at each call it notes what the log holds of the caller's stream (and the parent's, for the child). */
const delegating = (seen: string[][]) =>
  scriptedModel(async (req) => {
    const own = (await base.readStream(req.contextId)).map((e) => e.type);
    const created = (await base.readStream(req.contextId))[0]!;
    const parentId = created.type === "ContextCreated" ? created.data.parentContextId : null;
    const parent = parentId === null ? [] : (await base.readStream(parentId)).map((e) => e.type);
    seen.push([own.at(-1)!, ...parent.slice(-2)]);
    if (req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool") {
      return {
        toolCalls: [
          { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "look it up", reset: true }) },
        ],
      };
    }
    return { text: req.agentNumber === 0 ? "composed" : "found it" };
  });

describe("when a context is created and sent a message that delegates once", () => {
  it("makes appends only (no read, no projection statement), and a query afterwards still sees everything", async () => {
    const { store, calls } = countingStore(base);
    const seen: string[][] = [];
    const rt = await createRuntime({
      store,
      model: delegating(seen),
      limits: { passivateAfterMs: 60_000 },
      projects: { p: {} },
    });
    try {
      calls.length = 0;
      const root = await rt.createContext({ name: "root" });
      expect(calls, "createContext").toEqual(["append"]);
      expect(root).toMatchObject({ name: "root", status: "idle", version: 1, agentNumber: 0 });

      calls.length = 0;
      expect(await rt.send(root.id, "delegate once")).toMatchObject({ status: "completed", response: "composed" });
      expect(calls.length, "send made no call to the log").toBeGreaterThan(0);
      expect(
        calls.filter((c) => c !== "append"),
        "send",
      ).toEqual([]);
      // One append per effect boundary: the root's start with its first call, its reply with the tool call and
      // the delegation, the child's creation with its start and first call, its end, the root's next call, its end.
      expect(calls, "send").toHaveLength(6);
      // Each model call was on the log before the model was asked; the child's, after its parent recorded the delegation.
      expect(seen).toEqual([["ModelCalled"], ["ModelCalled", "ToolCalled", "SubordinateCalled"], ["ModelCalled"]]);

      // The view createContext answers with is the one the projections fold from the log.
      const other = await rt.createContext({ name: "other", project: "p" });
      expect(await rt.context(other.id)).toEqual(other);
      const tree = await rt.contexts({ rootContextId: root.id });
      expect(tree.map((c) => [c.agentNumber, c.status])).toEqual([
        [0, "idle"],
        [1, "idle"],
      ]);
    } finally {
      await rt.close();
    }
  });
});
