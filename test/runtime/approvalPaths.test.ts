// Every tool call asks the approval policy, whichever way it is made: by the run itself, as a `parallel` job,
// by a subordinate, or after a restart that resumed the run. Each of the nine ways of requiring approval is
// tried on each path: the request is on the log, the call has not run, approving runs it once, rejecting
// gives the model who rejected it and why.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createRuntime,
  defineTool,
  scriptedModel,
  type ModelRequest,
  type ModelTurn,
  type RecordedEvent,
  type Runtime,
} from "../../src/index.ts";
import type { EventStore } from "../../src/events/store.ts";
import { assertInvariants } from "../../src/testing/index.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { APPROVAL_WAY_NAMES as WAY_NAMES, approvalWays, type ApprovalWay } from "../support/approvalWays.ts";
import { call, repliesSoFar, toolResults } from "../delegation/support.ts";

type Path = "direct" | "parallel" | "subordinate" | "resumed" | "resumed job";

let store: EventStore;
let setup: Awaited<ReturnType<typeof approvalWays>>;
const closers: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  store = await freshPgliteStore();
  setup = await approvalWays();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await setup.close();
  await store.close();
});

const never = () => new Promise<never>(() => undefined);

/** `echo` and `hold` (idempotent): the call that runs beside the one waiting, and the one a crash cuts off (`held`: it ran again). */
const sideTools = (opts: { holdForever?: () => void; echoed?: () => void; held?: () => void } = {}) => [
  defineTool({
    name: "echo",
    description: "echoes",
    input: z.object({}),
    run: () => {
      opts.echoed?.();
      return "echoed";
    },
  }),
  defineTool({
    name: "hold",
    description: "holds",
    input: z.object({}),
    idempotent: true,
    run: async () => {
      if (opts.holdForever) {
        opts.holdForever();
        return never();
      }
      opts.held?.();
      return "held";
    },
  }),
];

/** The model: the acting context (the root, or its subordinate) makes the way's call on `path`, then answers with what it got. */
const modelFor = (path: Path, way: ApprovalWay) =>
  scriptedModel((req: ModelRequest): ModelTurn => {
    const first = repliesSoFar(req) === 0;
    if (path === "subordinate" && req.agentNumber === 0) {
      return first
        ? call(
            "call_subordinate",
            { message: "do the task", ...(way.profile ? { profile: way.profile } : {}) },
            "c_sub",
          )
        : { text: `root: ${toolResults(req).at(-1)}` };
    }
    if (!first) return { text: `done: ${toolResults(req).join(" | ")}` };
    const x = { name: way.call.name, arguments: way.call.arguments };
    if (path === "parallel") return call("parallel", { tool_calls: [x, { name: "echo", arguments: {} }] }, "c_par");
    if (path === "resumed job") return call("parallel", { tool_calls: [x, { name: "hold", arguments: {} }] }, "c_par");
    if (path === "resumed")
      return {
        toolCalls: [
          { id: "c_hold", name: "hold", arguments: "{}" },
          { id: "c_x", name: x.name, arguments: JSON.stringify(x.arguments) },
        ],
      };
    return call(x.name, x.arguments, "c_x");
  });

const open = async (on: EventStore, path: Path, way: ApprovalWay, sides: ReturnType<typeof sideTools>) => {
  const model = modelFor(path, way);
  const rt = await createRuntime({
    store: on,
    model,
    ...way.options,
    tools: [...(way.options.tools ?? []), ...sides],
    limits: { passivateAfterMs: 60_000, retryBaseMs: 1, retryMaxMs: 5 },
  });
  closers.push(() => rt.close());
  return { rt, model };
};

/** The first event on the log after position `after` that `pick` accepts. */
const first = (rt: Runtime, pick: (e: RecordedEvent) => boolean, after = 0) =>
  new Promise<RecordedEvent>((resolve) => {
    void rt
      .subscribe((e: RecordedEvent) => pick(e) && resolve(e), { after })
      .then((stop) => closers.push(async () => stop()));
  });

const requested = (e: RecordedEvent) => e.type === "ApprovalRequested";

/**
 * Runs the way's call on `path` until it waits for a decision, checks that nothing of it ran, then decides it.
 * Returns the runtime, the root's run end, and the acting context's requests to the model.
 */
const waitThenDecide = async (path: Path, way: ApprovalWay, granted: boolean) => {
  const before = way.ran();
  let rt: Runtime;
  let model: ReturnType<typeof scriptedModel>;
  let rootId: string;
  let sideRan: Promise<unknown>;
  // The file's other tests share the log: only what this one appends counts (a resumed one has a log of its own).
  let after = 0;
  if (path === "resumed" || path === "resumed job") {
    // A process runs until the call waits behind `hold`, and dies there; another opens the same log and resumes.
    const own = await freshPgliteStore();
    closers.push(() => own.close());
    let reached!: () => void;
    const held = new Promise<void>((r) => (reached = r));
    const dead = await open(own, path, way, sideTools({ holdForever: reached }));
    closers.pop(); // a dead process is never closed
    const root = await dead.rt.createContext({
      ...(way.profile ? { profile: way.profile } : {}),
      ...(way.project ? { project: way.project } : {}),
    });
    void dead.rt.start(root.id, "go");
    await held;
    if (path === "resumed job") await first(dead.rt, requested);
    let heldAgain!: () => void;
    sideRan = new Promise<void>((r) => (heldAgain = r));
    ({ rt, model } = await open(own, path, way, sideTools({ held: () => heldAgain() })));
    rootId = root.id;
  } else {
    after = await store.headPosition();
    let echoed!: () => void;
    sideRan = path === "parallel" ? new Promise<void>((r) => (echoed = r)) : Promise.resolve();
    ({ rt, model } = await open(store, path, way, sideTools({ echoed: () => echoed() })));
    const root = await rt.createContext({
      ...(way.profile && path !== "subordinate" ? { profile: way.profile } : {}),
      ...(way.project ? { project: way.project } : {}),
    });
    rootId = root.id;
    await rt.start(root.id, "go");
  }
  // A call that failed instead of waiting (its tool not offered, say) ends the wait at once, and fails below.
  const request = await first(
    rt,
    (e) =>
      (requested(e) && e.data.tool === way.call.name) || (e.type === "ToolFailed" && e.data.name === way.call.name),
    after,
  );
  expect(request.type, JSON.stringify(request.data)).toBe("ApprovalRequested");
  await sideRan;
  // Waiting: the call has not run, and nothing says it did.
  expect(way.ran() - before).toBe(0);
  const pending = await rt.approvals({ contextId: rootId });
  expect(pending.map((a) => [a.approvalId, a.tool])).toEqual([
    [(request.data as { approvalId: string }).approvalId, way.call.name],
  ]);
  const actingId = request.streamId;
  const acting = await rt.events({ contextId: actingId });
  expect(acting.filter((e) => e.type === "ToolCalled" && e.data.name === way.call.name)).toEqual([]);
  if (path === "parallel" || path === "resumed job") {
    const job = acting.flatMap((e) =>
      e.type === "ParallelJobStarted" && e.data.toolName === way.call.name ? [e.data] : [],
    )[0]!;
    expect(request.data).toMatchObject({ jobId: job.jobId, toolCallId: job.jobId });
    // The `parallel` call waits for that job like any other.
    expect(acting.filter((e) => e.type === "ToolReturned" && e.data.name === "parallel")).toEqual([]);
  }
  const approvalId = (request.data as { approvalId: string }).approvalId;
  const end = first(
    rt,
    (e) => e.streamId === rootId && ["RunCompleted", "RunFailed", "RunStopped", "RunInterrupted"].includes(e.type),
  );
  if (granted) await rt.approve(approvalId, { by: "alice" });
  else await rt.reject(approvalId, { by: "bob", reason: "too risky" });
  const ended = await end;
  const actingRequests = model.requests.filter((r) => r.contextId === actingId);
  return { rt, ended, actingId, actingRequests, ran: way.ran() - before };
};

const paths: Path[] = ["direct", "parallel", "subordinate", "resumed", "resumed job"];

describe.each(paths)("when a call that needs approval is made %s", (path) => {
  const cases = () => setup.ways.map((w) => [w.name, w] as const);
  // The ways are set up in beforeAll; the table is made from their names.
  it.each(WAY_NAMES)("%s: waits for the decision, then runs it once when approved", async (name) => {
    const way = cases().find(([n]) => n === name)![1];
    const { rt, ended, actingId, ran } = await waitThenDecide(path, way, true);
    expect(ended.type).toBe("RunCompleted");
    expect(ran).toBe(1);
    const acting = await rt.events({ contextId: actingId });
    const results = acting.flatMap((e) =>
      e.type === "ToolReturned" && e.data.name === way.call.name
        ? [e.data.result]
        : e.type === "ParallelJobFinished" && e.data.status === "success"
          ? [e.data.result]
          : [],
    );
    expect(results).toContain(way.result);
    await assertInvariants(rt);
  });

  // After a restart one way is enough for the rejection: the path is the same for all, and each case opens a log of its own.
  const rejected = path === "resumed" || path === "resumed job" ? WAY_NAMES.slice(0, 1) : WAY_NAMES;
  it.each(rejected)("%s: rejected, never runs, and the model is told who rejected it and why", async (name) => {
    const way = cases().find(([n]) => n === name)![1];
    const { ended, actingRequests, ran } = await waitThenDecide(path, way, false);
    expect(ended.type).toBe("RunCompleted");
    expect(ran).toBe(0);
    const lastSeen = toolResults(actingRequests.at(-1)!).join(" | ");
    expect(lastSeen).toContain("Not run: bob denied this call: too risky");
  });
});

describe("when approvals.tools names call_subordinate and the model delegates through parallel", () => {
  it("creates no subordinate until approved", async () => {
    const model = scriptedModel((req) =>
      req.agentNumber > 0
        ? { text: "child done" }
        : repliesSoFar(req) === 0
          ? call(
              "parallel",
              {
                tool_calls: [
                  { name: "call_subordinate", arguments: { message: "a" } },
                  { name: "call_subordinate", arguments: { message: "b" } },
                ],
              },
              "c_par",
            )
          : { text: `root: ${toolResults(req).at(-1)}` },
    );
    const rt = await createRuntime({
      store,
      model,
      approvals: { tools: ["call_subordinate"] },
      limits: { passivateAfterMs: 60_000 },
    });
    closers.push(() => rt.close());
    const root = await rt.createContext();
    const seen: RecordedEvent[] = [];
    const both = new Promise<void>((resolve) => {
      void rt.subscribe(
        (e: RecordedEvent) => {
          if (e.streamId === root.id && requested(e)) seen.push(e);
          if (seen.length === 2) resolve();
        },
        { after: 0 },
      );
    });
    const started = await rt.start(root.id, "go");
    await both;
    expect(await rt.children(root.id)).toEqual([]);
    for (const a of await rt.approvals({ contextId: root.id })) await rt.approve(a.approvalId, { by: "alice" });
    expect((await started.ended).status).toBe("completed");
    expect(await rt.children(root.id)).toHaveLength(2);
  });
});
