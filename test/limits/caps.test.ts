// Concurrency caps through the public API: a capped fan-out, the queue's order, `queued` in the views, a stop while queued.
import { afterEach, describe, expect, it } from "vitest";
import type { EventStore, ModelRequest, ModelTurn, RecordedEvent, Runtime } from "../../src/index.ts";
import { eventually, gate } from "../support/async.ts";
import { storeForFile } from "../support/storeForFile.ts";
import { call, closeRuntimes, repliesSoFar, runtimeWith } from "../delegation/support.ts";
import { fanOutModel, FAN } from "../budgets/support.ts";
import { paintFor } from "../../src/cli/ansi.ts";
import { LiveState } from "../../src/cli/liveState.ts";
import { liveRows } from "../../src/cli/liveView.ts";
import { TreeFold } from "../../src/server/treeFold.ts";

// The page's own wording of a row's state (plain JS: imported by a path the checker does not follow).
const FORMAT_JS = "../../src/server/web/format.js";

let store: EventStore;
storeForFile((s) => (store = s));
afterEach(closeRuntimes);

/** Wraps a handler so it counts the calls in flight at once; each call takes a few ms, as a provider's would. */
const counting = (handler: (req: ModelRequest) => Promise<ModelTurn>) => {
  const seen = { now: 0, peak: 0, calls: 0 };
  const model = async (req: ModelRequest): Promise<ModelTurn> => {
    seen.now++;
    seen.calls++;
    seen.peak = Math.max(seen.peak, seen.now);
    try {
      await new Promise((r) => setTimeout(r, 3));
      return await handler(req);
    } finally {
      seen.now--;
    }
  };
  return { seen, model };
};

const treeEvents = async (rt: Runtime, root: string): Promise<RecordedEvent[]> => {
  const ids = new Set((await rt.contexts({ rootContextId: root })).map((c) => c.id));
  return (await rt.events()).filter((e) => ids.has(e.streamId));
};

const ALL_CALLS = 1 + FAN + FAN * FAN + 1 + FAN;

describe("when a 64-leaf fan-out runs with the runtime's calls capped at 2", () => {
  it("never has more than 2 model calls in flight, queues the rest visibly, and completes", async () => {
    const { seen, model } = counting(fanOutModel);
    const { rt } = await runtimeWith(store, model, { limits: { maxConcurrentModelCalls: 2 } });
    const root = await rt.createContext({});
    const outcome = await rt.send(root.id, "split the work");
    expect(outcome).toMatchObject({ status: "completed", response: "all parts done" });
    expect(seen.calls).toBe(ALL_CALLS);
    expect(seen.peak).toBe(2);
    const events = await treeEvents(rt, root.id);
    const queued = events.filter((e) => e.type === "ModelCallQueued");
    const admitted = events.filter((e) => e.type === "ModelCallAdmitted");
    // Most calls had to wait, and every wait ended with its call admitted.
    expect(queued.length).toBeGreaterThan((FAN * FAN) / 2);
    expect(admitted.length).toBe(queued.length);
    expect((await rt.contexts({ rootContextId: root.id })).some((c) => c.queued)).toBe(false);
  }, 60_000);
});

describe("when a preset caps its own calls at 3", () => {
  it("never has more than 3 of its calls in flight", async () => {
    const { seen, model } = counting(fanOutModel);
    const { rt } = await runtimeWith(store, model, {
      presets: { Default: { model: "gpt-4o-mini", maxConcurrent: 3 } },
    });
    const root = await rt.createContext({});
    expect(await rt.send(root.id, "split the work")).toMatchObject({ status: "completed" });
    expect(seen.calls).toBe(ALL_CALLS);
    expect(seen.peak).toBe(3);
  }, 60_000);
});

describe("when calls wait behind one that holds the only place", () => {
  const CHILDREN = 4;
  const setUp = async () => {
    const hold = gate();
    const first = gate<string>();
    const order: string[] = [];
    const { rt, model } = await runtimeWith(
      store,
      async (req) => {
        if (req.agentNumber === 0) {
          if (repliesSoFar(req) > 0) return { text: "all done" };
          return call("parallel", {
            tool_calls: Array.from({ length: CHILDREN }, (_, i) => ({
              name: "call_subordinate",
              arguments: { message: `part ${i}`, name: `part ${i}` },
            })),
          });
        }
        order.push(req.contextId);
        if (order.length === 1) {
          first.open(req.contextId);
          await hold.promise;
        }
        return { text: `done ${req.contextId}` };
      },
      { limits: { maxConcurrentModelCalls: 1 } },
    );
    const root = await rt.createContext({});
    const started = await rt.start(root.id, "split the work");
    const holder = await first.promise;
    // The other children wait behind the one holding the place, and their views say so.
    const waiting = await eventually(
      async () => {
        const q = (await rt.contexts({ rootContextId: root.id })).filter((c) => c.queued);
        return q.length === CHILDREN - 1 ? q : null;
      },
      10_000,
      "the other children to be queued",
    );
    return { rt, model, root, started, hold, order, holder, waiting };
  };

  it("admits them in the order they were queued, each context showing queued until then", async () => {
    const { rt, root, started, hold, order, holder, waiting } = await setUp();
    expect(waiting.every((c) => c.status === "running" && c.id !== holder)).toBe(true);
    expect((await rt.context(holder))!.queued).toBe(false);
    // The CLI's live tree and the page's tree, folded from the same log, say so too.
    const log = await rt.events();
    const live = new LiveState();
    for (const e of log) live.apply(e);
    const lines = liveRows(live, root.id, paintFor({ isTTY: false }, {}), Date.now()).split("\n");
    expect(lines.filter((l) => l.includes("running (queued)"))).toHaveLength(CHILDREN - 1);
    const fold = new TreeFold();
    fold.apply(log);
    const { statusWord } = (await import(FORMAT_JS)) as { statusWord: (row: unknown) => string };
    const onPage = fold
      .rows()
      .filter((r) => statusWord(r) === "queued")
      .map((r) => r.id);
    expect(onPage.sort()).toEqual(waiting.map((c) => c.id).sort());
    hold.open();
    expect(await started.ended).toMatchObject({ status: "completed", response: "all done" });
    const events = await treeEvents(rt, root.id);
    const queuedOrder = events
      .filter((e) => e.type === "ModelCallQueued")
      .sort((a, b) => a.globalPosition - b.globalPosition)
      .map((e) => e.streamId);
    const admittedOrder = events
      .filter((e) => e.type === "ModelCallAdmitted")
      .sort((a, b) => a.globalPosition - b.globalPosition)
      .map((e) => e.streamId);
    expect(queuedOrder).toHaveLength(CHILDREN - 1);
    expect(admittedOrder).toEqual(queuedOrder);
    // The model saw them in that order too, after the holder.
    expect(order).toEqual([holder, ...queuedOrder]);
    expect((await rt.contexts({ rootContextId: root.id })).some((c) => c.queued)).toBe(false);
  }, 30_000);

  it("takes a stopped call out of the queue: its run ends stopped without calling the model, the rest go on", async () => {
    const { rt, root, started, hold, order, holder, waiting } = await setUp();
    const victim = waiting[1]!.id;
    const outcome = await rt.stop(victim);
    expect(outcome).toMatchObject({ status: "stopped" });
    const view = (await rt.context(victim))!;
    expect(view).toMatchObject({ status: "stopped", queued: false });
    const failed = (await rt.events({ contextId: victim })).filter((e) => e.type === "ModelCallFailed");
    expect(failed.map((e) => e.type === "ModelCallFailed" && e.data.message)).toEqual([
      expect.stringMatching(/waited in the queue; it was not sent/),
    ]);
    hold.open();
    expect(await started.ended).toMatchObject({ status: "completed", response: "all done" });
    expect(order).not.toContain(victim);
    expect(order).toHaveLength(CHILDREN - 1);
    expect(order[0]).toBe(holder);
  }, 30_000);
});
