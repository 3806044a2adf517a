// Forks keep the invariants: a fork cut anywhere in a delegation (the root's stream or a subordinate's, between a
// message and its run's start, inside a parallel job, after a run's end) is a tree that passes checkInvariants.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { createRuntime, scriptedModel, type ModelRequest, type ModelTurn, type Runtime } from "../../src/index.ts";
import { checkInvariants, checkSuperiorsInTree, readTree } from "../../src/testing/index.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";

const job = (message: string, name: string) => ({
  name: "call_subordinate",
  arguments: { message, name, reset: true },
});

/** A0 delegates to an A1 that delegates to an A2; on its second message A0 runs two subordinates through parallel. */
const delegating = (req: ModelRequest): ModelTurn => {
  const last = req.messages.at(-1)!;
  const users = req.messages.filter((m) => m.role === "user").length;
  if (req.agentNumber === 0) {
    if (last.role === "tool") return { text: "composed" };
    if (users === 1)
      return {
        toolCalls: [
          {
            id: `d${users}`,
            name: "call_subordinate",
            arguments: JSON.stringify({ message: "go deeper", reset: true }),
          },
        ],
      };
    return {
      toolCalls: [
        {
          id: `p${users}`,
          name: "parallel",
          arguments: JSON.stringify({ tool_calls: [job("look it up", "reader"), job("go deeper", "digger")] }),
        },
      ],
    };
  }
  if (last.role === "tool") return { text: `found by A${req.agentNumber}` };
  const asked = typeof last.content === "string" ? last.content : JSON.stringify(last.content);
  if (req.agentNumber === 1 && asked.includes("go deeper"))
    return {
      toolCalls: [
        { id: "a2", name: "call_subordinate", arguments: JSON.stringify({ message: "the detail", reset: true }) },
      ],
    };
  return { text: `leaf A${req.agentNumber}` };
};

let store: FreshPgliteStore;
let rt: Runtime;
/** Every event of the source tree, as (context, position): where a fork may cut. */
let cuts: { contextId: string; position: number; type: string }[];

beforeAll(async () => {
  store = await freshPgliteStore();
  rt = await createRuntime({ store, model: scriptedModel(delegating), limits: { passivateAfterMs: 60_000 } });
  const root = await rt.createContext({ name: "source" });
  expect((await rt.send(root.id, "first question")).status).toBe("completed");
  expect((await rt.send(root.id, "second question")).status).toBe("completed");
  const tree = await readTree(rt, root.id);
  expect(tree.views.length).toBeGreaterThanOrEqual(4);
  expect(await checkInvariants(rt, { rootContextId: root.id })).toEqual([]);
  cuts = tree.events.map((e) => ({ contextId: e.streamId, position: e.globalPosition, type: e.type }));
}, 120_000);
afterAll(async () => {
  await rt.close();
  await store.close();
});

describe("given a delegation with subordinates and a parallel fan-out", () => {
  it(
    "when any context is forked at a random one of its events, then the fork passes every invariant",
    { timeout: 300_000 },
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...cuts), async (cut) => {
          const fork = await rt.fork(cut.contextId, { at: cut.position });
          const violations = await checkInvariants(rt, { rootContextId: fork.id });
          expect(violations, `fork of ${cut.contextId} at ${cut.position} (${cut.type})`).toEqual([]);
        }),
        { numRuns: Math.max(40, cuts.length * 2) },
      );
    },
  );

  it("when a subordinate is cut between a message and its run's start, then the fork closes that run and passes", async () => {
    const between = cuts.find(
      (c, i) =>
        c.type === "MessageReceived" &&
        cuts.slice(i + 1).find((d) => d.contextId === c.contextId)?.type === "RunStarted" &&
        c.contextId !== cuts[0]!.contextId,
    )!;
    expect(between).toBeDefined();
    const fork = await rt.fork(between.contextId, { at: between.position });
    const copied = await store.readStream(fork.id);
    expect(copied.slice(-3).map((e) => e.type)).toEqual(["MessageReceived", "RunStarted", "RunInterrupted"]);
    expect(copied.every((e) => e.type !== "RunStarted" || e.data.superior === null)).toBe(true);
    expect(await checkInvariants(rt, { rootContextId: fork.id })).toEqual([]);
  });

  it("when a run names a superior outside its tree, then the kit reports it", async () => {
    const tree = await readTree(rt, cuts[0]!.contextId);
    const child = tree.views.find((c) => c.parentContextId !== null)!;
    const started = tree.streams.get(child.id)!.find((e) => e.type === "RunStarted")!;
    const stranger = { ...child, parentContextId: "00000000-0000-4000-8000-000000000000", rootContextId: child.id };
    const found = checkSuperiorsInTree([stranger], [started]);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ invariant: "parent-links", contextId: child.id });
    expect(found[0]!.detail).toContain("a context of another tree");
  });
});
