import { afterEach, describe, expect, it } from "vitest";
import {
  createRuntime,
  INTERRUPTED_CALL,
  openPgliteStore,
  scriptedModel,
  type ModelRequest,
  type RecordedEvent,
  type Runtime,
} from "../../src/index.ts";
import type { EventStore } from "../../src/events/store.ts";
import type { NewEvent } from "../../src/events/schema.ts";
import { assertInvariants } from "../../src/testing/index.ts";
import { auditRuns } from "../../src/projections/auditRuns.ts";
import { countingClock, requestBytes, stepOf, treeReply, treeTools, type TreeToolHooks } from "./tree.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const never = () => new Promise<never>(() => undefined);

type Hooks = { holdModel?: (req: ModelRequest) => boolean } & TreeToolHooks;

/** A runtime on `store` running the tree; a call `holdModel` picks never gets its reply (its process is about to die). */
const treeRuntime = async (
  store: EventStore,
  clock: ReturnType<typeof countingClock>,
  hooks: Hooks = {},
  recovery?: "resume" | "interrupt",
) => {
  const model = scriptedModel((req) => (hooks.holdModel?.(req) ? never() : treeReply(req)));
  const rt = await createRuntime({
    store,
    model,
    clock,
    tools: treeTools(hooks),
    limits: { passivateAfterMs: 50 },
    ...(recovery ? { recovery } : {}),
  });
  closers.push(() => rt.close());
  return { rt, model };
};

/** Resolves once `n` calls of `fn` have been seen. */
const counter = (n: number) => {
  let seen = 0;
  let reached!: () => void;
  const done = new Promise<void>((r) => (reached = r));
  return {
    done,
    hit() {
      if (++seen === n) reached();
    },
  };
};

/** Resolves with the root's run end once it is on the log. */
const rootEnd = (rt: Runtime, rootId: string) =>
  new Promise<RecordedEvent>((resolve) => {
    void rt.subscribe(
      (e) => {
        if (e.streamId === rootId && ["RunCompleted", "RunFailed", "RunStopped", "RunInterrupted"].includes(e.type))
          resolve(e);
      },
      { after: 0 },
    );
  });

/** The requests of an uninterrupted tree on its own store, with the same counting clock. */
const uninterrupted = async () => {
  const store = await openPgliteStore();
  closers.push(() => store.close());
  const { rt, model } = await treeRuntime(store, countingClock());
  const root = await rt.createContext({ name: "root" });
  const end = await rt.send(root.id, "grow the tree");
  expect(end.status).toBe("completed");
  return model.requests.map(requestBytes);
};

/** `all` without one occurrence of each of `taken` (multisets of request bytes). */
const without = (all: string[], taken: string[]) => {
  const rest = [...all];
  for (const t of taken) {
    const i = rest.indexOf(t);
    expect(i, "a request made before the crash that the uninterrupted run never made").toBeGreaterThanOrEqual(0);
    rest.splice(i, 1);
  }
  return rest;
};

/**
 * Runs the tree until `hooks` hold it (`held` resolves), then leaves that runtime as a killed process leaves
 * its log (it never writes again) and opens another on the same log, which resumes the tree.
 */
const crashAndResume = async (
  hooks: Hooks,
  held: Promise<void>,
  recovery?: "resume" | "interrupt",
  deadStore = (s: EventStore) => s,
) => {
  const store = await openPgliteStore();
  closers.push(() => store.close());
  const clock = countingClock();
  const dead = await treeRuntime(deadStore(store), clock, hooks);
  const root = await dead.rt.createContext({ name: "root" });
  void dead.rt.start(root.id, "grow the tree");
  await held;
  const before = dead.model.requests.map(requestBytes);
  // The second process continues the same count of ids, so none collides with the first one's.
  const resumed = await treeRuntime(store, clock, {}, recovery);
  const end = await rootEnd(resumed.rt, root.id);
  return { store, root, end, before, heldRequests: dead.model.requests, after: resumed.model.requests, rt: resumed.rt };
};

describe("when a process dies with model calls in flight at the bottom of a tree", () => {
  it("makes only those calls again, and the model is sent byte for byte what it would have been without the crash", async () => {
    const reference = await uninterrupted();
    const leavesAtStep2 = counter(2);
    const held = (req: ModelRequest) => {
      const hold = req.agentNumber === 2 && stepOf(req) === 2;
      if (hold) leavesAtStep2.hit();
      return hold;
    };
    const run = await crashAndResume({ holdModel: held }, leavesAtStep2.done);
    expect(run.end.type).toBe("RunCompleted");
    // The calls held when the process died are the ones made again; every recorded reply was reused.
    const inFlight = run.heldRequests.filter(held).map(requestBytes);
    expect(inFlight).toHaveLength(2);
    const answeredBefore = without(run.before, inFlight);
    const expected = without(reference, answeredBefore).sort();
    expect(run.after.map(requestBytes).sort()).toEqual(expected);
    for (const again of inFlight) expect(run.after.map(requestBytes)).toContain(again);
    // The log says so: each repeated call is a second attempt of its step, with no reply to the first.
    const events = await run.rt.events();
    // Each context ran one run, with one message: the resumed children answered their waiting parents
    // without being sent their task again.
    for (const type of ["MessageReceived", "RunStarted", "RunCompleted"]) {
      const streams = events.filter((e) => e.type === type).map((e) => e.streamId);
      expect(streams.length, type).toBe(5);
      expect(new Set(streams).size, type).toBe(5);
    }
    const repeats = events.filter((e) => e.type === "ModelCalled" && e.data.attempt === 2);
    expect(repeats).toHaveLength(2);
    // And the audit marks each as made again (the cut-off call may be billed too).
    for (const leaf of new Set(repeats.map((e) => e.streamId))) {
      const calls = auditRuns(await run.rt.events({ contextId: leaf })).flatMap((r) =>
        r.entries.filter((x) => x.kind === "model_call"),
      );
      expect(calls.map((c) => [c.step, c.attempt, c.outcome, c.madeAgain])).toEqual([
        [1, 1, "replied", false],
        [2, 1, "pending", false],
        [2, 2, "replied", true],
      ]);
    }
    await assertInvariants(run.rt);
  });
});

/** A crash while `tool` runs (the hook holds its calls), then the resume; `ran`: how many calls of `tool` the hook saw. */
const crashWhileToolRuns = async (tool: string) => {
  const calls = counter(2);
  let ran = 0;
  const run = await crashAndResume(
    {
      onTool: (name) => {
        if (name !== tool) return;
        ran += 1;
        calls.hit();
        return never();
      },
    },
    calls.done,
  );
  return { run, ran };
};

describe("when a process dies while tools run", () => {
  it("runs an idempotent tool again, and the transcript after it is the one without the crash", async () => {
    const reference = await uninterrupted();
    const { run, ran: ranLookup } = await crashWhileToolRuns("lookup");
    expect(run.end.type).toBe("RunCompleted");
    expect(ranLookup).toBe(2);
    expect(run.after.map(requestBytes).sort()).toEqual(without(reference, run.before).sort());
    await assertInvariants(run.rt);
  });

  it("does not run a tool with a side effect again: the model is told the call may or may not have taken effect", async () => {
    const { run, ran: ranNote } = await crashWhileToolRuns("note");
    expect(run.end.type).toBe("RunCompleted");
    expect(ranNote).toBe(2);
    const leafSteps = run.after.filter((r) => r.agentNumber === 2);
    expect(leafSteps).toHaveLength(2);
    for (const req of leafSteps) {
      const results = req.messages.filter((m) => m.role === "tool").map((m) => m.content);
      expect(results).toEqual([expect.stringMatching(/^value of /), INTERRUPTED_CALL]);
    }
    await assertInvariants(run.rt);
  });
});

describe("when recovery is 'interrupt'", () => {
  it("records the unfinished runs as interrupted and makes no model call", async () => {
    const leaves = counter(2);
    const run = await crashAndResume(
      {
        holdModel: (req) => {
          const hold = req.agentNumber === 2 && stepOf(req) === 2;
          if (hold) leaves.hit();
          return hold;
        },
      },
      leaves.done,
      "interrupt",
    );
    expect(run.end.type).toBe("RunInterrupted");
    expect(run.after).toHaveLength(0);
  });
});

/**
 * `store` as the dying process sees it: the first append of a fresh child's stream (its ContextCreated with its
 * run's start) at agent number `agentNumber` never lands, so the process dies after its caller's SubordinateCalled.
 */
const dyingBeforeChildOpens =
  (agentNumber: number, reached: ReturnType<typeof counter>, died: Promise<never>) => (store: EventStore) =>
    new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        if (prop !== "append") return value.bind(target);
        return (streamId: string, events: NewEvent[], opts: { expectedVersion: unknown }) => {
          const first = events[0];
          if (
            first?.type === "ContextCreated" &&
            first.data.agentNumber === agentNumber &&
            events.some((e) => e.type === "RunStarted")
          ) {
            reached.hit();
            // Held until the test is over: then the dead runtime may close (its leftovers conflict with the log).
            return died;
          }
          return (value as (...a: unknown[]) => unknown).call(target, streamId, events, opts);
        };
      },
    });

/** A promise that fails once `die` is called: what a killed process's last append comes to. */
const dying = () => {
  let die!: () => void;
  const died = new Promise<never>((_r, reject) => (die = () => reject(new Error("the process died"))));
  died.catch(() => undefined);
  closers.push(async () => die());
  return { died, die };
};

/** The children a SubordinateCalled names whose stream is empty: the window a crash left. */
const unopened = async (store: EventStore) => {
  const called = (await store.readAll(0, 10_000)).flatMap((e) =>
    e.type === "SubordinateCalled" ? [e.data.childContextId] : [],
  );
  const empty: string[] = [];
  for (const id of called) if ((await store.readStream(id)).length === 0) empty.push(id);
  return empty;
};

/**
 * A run whose process dies after a SubordinateCalled of an A`agentNumber` caller and before its fresh child's
 * first append, then resumed with `recovery`; `window`: the children left unopened when it died.
 */
const cutBeforeChildOpens = async (agentNumber: number, recovery: "resume" | "interrupt") => {
  const reached = counter(2);
  const { died, die } = dying();
  let store: EventStore | undefined;
  let window: string[] = [];
  const run = await crashAndResume(
    {},
    reached.done.then(async () => void (window = await unopened(store!))),
    recovery,
    (s) => {
      store = s;
      return dyingBeforeChildOpens(agentNumber, reached, died)(s);
    },
  );
  return { run, window, die };
};

describe("when a process dies after a caller's SubordinateCalled, before its fresh child's first append", () => {
  for (const [agentNumber, how] of [
    [1, "parallel jobs"],
    [2, "a direct call"],
  ] as const) {
    it(`creates the child (A${agentNumber}, by ${how}) with its id and starts its run once: one MessageReceived per context, requests as without the crash`, async () => {
      const reference = await uninterrupted();
      const { run, window, die } = await cutBeforeChildOpens(agentNumber, "resume");
      expect(window).toHaveLength(2);
      expect(run.end.type).toBe("RunCompleted");
      const events = await run.rt.events();
      for (const type of ["ContextCreated", "MessageReceived", "RunStarted", "RunCompleted"]) {
        const streams = events.filter((e) => e.type === type).map((e) => e.streamId);
        expect(streams.length, type).toBe(5);
        expect(new Set(streams).size, type).toBe(5);
      }
      for (const id of window) {
        const stream = await run.rt.events({ contextId: id });
        expect(stream.slice(0, 4).map((e) => e.type)).toEqual([
          "ContextCreated",
          "MessageReceived",
          "RunStarted",
          "ModelCalled",
        ]);
        if (stream[0]?.type !== "ContextCreated") throw new Error("no ContextCreated");
        expect(stream[0].data).toMatchObject({ contextId: id, agentNumber, kind: "subordinate" });
      }
      // The model is sent, byte for byte, what it would have been: same children, same names. Only contexts
      // created after the restart have other ids (from the new process's count), so ids are compared as such.
      const anyId = (bytes: string) => bytes.replace(/[0-9a-f]{8}-0000-4000-8000-0{12}/g, "<id>");
      expect(run.after.map(requestBytes).map(anyId).sort()).toEqual(without(reference, run.before).map(anyId).sort());
      if (agentNumber === 2) expect(run.after.map(requestBytes).sort()).toEqual(without(reference, run.before).sort());
      await assertInvariants(run.rt);
      die();
    });
  }

  it("with recovery 'interrupt', records the children it named, with no run, so every SubordinateCalled names a context", async () => {
    const { run, window, die } = await cutBeforeChildOpens(2, "interrupt");
    expect(window).toHaveLength(2);
    expect(run.end.type).toBe("RunInterrupted");
    expect(run.after).toHaveLength(0);
    for (const id of window)
      expect((await run.rt.events({ contextId: id })).map((e) => e.type)).toEqual(["ContextCreated"]);
    expect(await unopened(run.store)).toEqual([]);
    await assertInvariants(run.rt);
    die();
  });
});
