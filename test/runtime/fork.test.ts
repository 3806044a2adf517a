// rt.fork: a new root with a context's history up to one of its events, the source untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, RuntimeError, scriptedModel, type EventStore, type Runtime } from "../../src/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { internalsOf } from "../../src/runtime/runtime.ts";

const delegating = () =>
  scriptedModel((req) => {
    if (req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool") {
      return {
        toolCalls: [
          { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "look it up", reset: true }) },
        ],
      };
    }
    return { text: req.agentNumber === 0 ? "composed" : "found it" };
  });

let store: EventStore;
let rt: Runtime;
let rootId: string;
let childId: string;
const positionOf = async (id: string, type: string) =>
  (await store.readStream(id)).find((e) => e.type === type)!.globalPosition;

beforeAll(async () => {
  store = await freshPgliteStore();
  rt = await createRuntime({ store, model: delegating(), limits: { passivateAfterMs: 60_000 } });
  rootId = (await rt.createContext({ name: "planner" })).id;
  expect(await rt.send(rootId, "plan it")).toMatchObject({ status: "completed", response: "composed" });
  childId = (await rt.children(rootId))[0]!.id;
});
afterAll(async () => {
  await rt.close();
  await store.close();
});

describe("when a root is forked at the end of its run", () => {
  it("creates a new root with the same history that records where it came from, and leaves the source untouched", async () => {
    const before = await store.readStream(rootId);
    const at = await positionOf(rootId, "RunCompleted");
    const fork = await rt.fork(rootId, { at });
    expect(fork).toMatchObject({ depth: 0, parentContextId: null, agentNumber: 0, name: "planner", status: "idle" });
    expect(fork.id).not.toBe(rootId);
    const forked = await store.readStream(fork.id);
    expect(forked[0]).toMatchObject({
      type: "ContextCreated",
      data: { contextId: fork.id, kind: "root", forkedFrom: { contextId: rootId, position: at } },
    });
    expect(forked.slice(1).map((e) => e.type)).toEqual(
      before
        .filter((e) => e.globalPosition <= at)
        .slice(1)
        .map((e) => e.type),
    );
    expect(await rt.history(fork.id)).toEqual(await rt.history(rootId));
    expect(await store.readStream(rootId)).toEqual(before);

    // The fork runs on from there; the source does not move.
    expect(await rt.send(fork.id, "again, differently")).toMatchObject({ status: "completed" });
    expect(await store.readStream(rootId)).toEqual(before);
  });
});

describe("when a root is forked in the middle of its run", () => {
  it("records the cut run as interrupted in the fork, which then takes a new message", async () => {
    const at = await positionOf(rootId, "SubordinateCalled");
    const fork = await rt.fork(rootId, { at });
    const types = (await store.readStream(fork.id)).map((e) => e.type);
    expect(types.at(-2)).toBe("SubordinateCalled");
    expect(types.at(-1)).toBe("RunInterrupted");
    expect(await rt.send(fork.id, "go on")).toMatchObject({ status: "completed" });
  });
});

describe("when a subordinate is forked", () => {
  it("forks only it, as a root of its own, and the source tree keeps its shape", async () => {
    const tree = (await rt.contexts({ rootContextId: rootId })).map((c) => c.id).sort();
    const fork = await rt.fork(childId, { at: await positionOf(childId, "RunCompleted") });
    expect(fork).toMatchObject({ depth: 0, parentContextId: null, rootContextId: fork.id });
    expect(await rt.history(fork.id)).toEqual(await rt.history(childId));
    expect((await rt.contexts({ rootContextId: rootId })).map((c) => c.id).sort()).toEqual(tree);
    expect(await rt.children(fork.id)).toEqual([]);
  });
});

describe("when a subordinate a parallel job started is forked", () => {
  it("gives its copied RunStarted no superior: the fork is a root, and names no run of the source's tree", async () => {
    const model = scriptedModel((req) => {
      if (req.agentNumber === 0 && req.messages.at(-1)?.role !== "tool") {
        const job = { name: "call_subordinate", arguments: { message: "look it up", reset: true } };
        return { toolCalls: [{ id: "p1", name: "parallel", arguments: JSON.stringify({ tool_calls: [job] }) }] };
      }
      return { text: req.agentNumber === 0 ? "composed" : "found it" };
    });
    const jobs = await createRuntime({ store, model, limits: { passivateAfterMs: 60_000 } });
    try {
      const root = await jobs.createContext({ name: "fan" });
      expect((await jobs.send(root.id, "fan out")).status).toBe("completed");
      const child = (await jobs.children(root.id))[0]!.id;
      const started = (await store.readStream(child)).find((e) => e.type === "RunStarted");
      if (started?.type !== "RunStarted" || started.data.superior?.jobId == null)
        throw new Error("the child's run has no job");
      const fork = await jobs.fork(child, { at: await positionOf(child, "RunCompleted") });
      const copied = (await store.readStream(fork.id)).find((e) => e.type === "RunStarted");
      expect(copied?.type === "RunStarted" && copied.data.runId).toBe(started.data.runId);
      expect(copied?.type === "RunStarted" && copied.data.superior).toBeNull();
    } finally {
      await jobs.close();
    }
  });
});

describe("when the position is not one of the context's events", () => {
  it("refuses with a RuntimeError naming the field, and writes nothing", async () => {
    const head = await store.headPosition();
    const elsewhere = await positionOf(childId, "RunStarted");
    for (const at of [elsewhere, head + 100, 0]) {
      const error = await rt.fork(rootId, { at }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RuntimeError);
      expect(error).toMatchObject({ reason: "invalid", field: "at" });
    }
    await expect(rt.fork(rootId, { at: -1 })).rejects.toMatchObject({ field: "at" });
    await expect(rt.fork("00000000-0000-4000-8000-000000000000", { at: 1 })).rejects.toMatchObject({
      reason: "not_found",
    });
    expect(await store.headPosition()).toBe(head);
  });
});

describe("after forks", () => {
  it("the log verifies and the projections equal a rebuild (the forks' jobs are their own)", async () => {
    expect((await store.verify()).problems).toEqual([]);
    expect((await internalsOf(rt).projections.verify()).mismatches).toEqual([]);
  });
});
