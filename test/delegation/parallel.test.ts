// DESIGN §6 through the public API: call_subordinate jobs, their ids and snapshots, refusals, start/await/collect/cancel, timeouts, restart.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createRuntime,
  defineTool,
  openPgliteStore,
  scriptedModel,
  type EventStore,
  type ModelRequest,
} from "../../src/index.ts";
import { gate } from "../support/async.ts";
import { copyPgliteTemplate, freshPgliteStore, removeDir } from "../support/pglite.ts";
import {
  call,
  delegationFile,
  eventsOf,
  footer,
  holdingStore,
  last,
  refused,
  repliesSoFar,
  runtimeWith,
  toolResults,
  userMessages,
  type Handler,
} from "./support.ts";

let store: EventStore;
delegationFile((s) => (store = s));

type Snapshot = { job_id: string; tool: string; status: string; context_id?: string; result?: string; error?: string };
type Output = { status: string; jobs: Snapshot[] };

const JOB_ID = /^callsubordin-[0-9a-f]{8}$/;
const job = (message: string, extra: Record<string, unknown> = {}) => ({
  name: "call_subordinate",
  arguments: { message, ...extra },
});
const outputs = (req: ModelRequest): Output[] =>
  toolResults(req).flatMap((r) => (r.startsWith("{") ? [JSON.parse(r) as Output] : []));
const requestsOf = (requests: readonly ModelRequest[], id: string) => requests.filter((r) => r.contextId === id);

/** A0 makes the calls in `steps` one per reply, then answers "done"; children answer with `child`. */
const a0Steps =
  (
    steps: ((req: ModelRequest) => ReturnType<typeof call> | Promise<ReturnType<typeof call>>)[],
    child: Handler = (req) => ({ text: `ok: ${last(req).content}` }),
  ): Handler =>
  (req) => {
    if (req.agentNumber > 0) return child(req);
    const step = steps[repliesSoFar(req)];
    return step ? step(req) : { text: "done" };
  };

describe("when A0 runs two call_subordinate jobs in parallel", () => {
  it("gives each job its own child, a job id distinct from the child's context id, and the child's slot is its job id", async () => {
    const { rt, model } = await runtimeWith(
      store,
      a0Steps([() => call("parallel", { tool_calls: [job("alpha"), job("beta")] }, "c_par")]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");

    const [raw] = toolResults(model.requests.at(-1)!);
    expect(raw).toBe(JSON.stringify(JSON.parse(raw!)));
    const out = JSON.parse(raw!) as Output;
    const children = await rt.children(root.id);
    expect(children).toHaveLength(2);
    const byName = Object.fromEntries(children.map((c) => [c.name, c]));
    expect(out.status).toBe("success");
    expect(out.jobs).toEqual([
      {
        job_id: expect.stringMatching(JOB_ID),
        tool: "call_subordinate",
        status: "success",
        context_id: byName.alpha!.id,
        result: `ok: alpha${footer(1, byName.alpha!.id)}`,
      },
      {
        job_id: expect.stringMatching(JOB_ID),
        tool: "call_subordinate",
        status: "success",
        context_id: byName.beta!.id,
        result: `ok: beta${footer(1, byName.beta!.id)}`,
      },
    ]);
    const [a, b] = out.jobs as [Snapshot, Snapshot];
    expect(a.job_id).not.toBe(b.job_id);
    expect(a.job_id).not.toBe(a.context_id);
    expect(byName.alpha).toMatchObject({ slot: a.job_id, agentNumber: 1, parentContextId: root.id });
    expect(byName.beta).toMatchObject({ slot: b.job_id, agentNumber: 1, parentContextId: root.id });

    const [runStarted] = await eventsOf(rt, root.id, "RunStarted");
    const runId = runStarted!.data.runId;
    expect((await eventsOf(rt, root.id, "ParallelJobStarted")).map((e) => e.data)).toEqual([
      { runId, toolCallId: "c_par", jobId: a.job_id, toolName: "call_subordinate", arguments: { message: "alpha" } },
      { runId, toolCallId: "c_par", jobId: b.job_id, toolName: "call_subordinate", arguments: { message: "beta" } },
    ]);
    const finished = (await eventsOf(rt, root.id, "ParallelJobFinished")).map((e) => e.data);
    expect(finished.sort((x, y) => x.jobId.localeCompare(y.jobId))).toEqual(
      [
        { runId, jobId: a.job_id, status: "success", result: a.result, error: null, contextId: a.context_id },
        { runId, jobId: b.job_id, status: "success", result: b.result, error: null, contextId: b.context_id },
      ].sort((x, y) => x.jobId.localeCompare(y.jobId)),
    );
    expect(
      (await eventsOf(rt, root.id, "SubordinateCalled"))
        .map((e) => [e.data.jobId, e.data.childContextId, e.data.fresh])
        .sort(),
    ).toEqual(
      [
        [a.job_id, a.context_id, true],
        [b.job_id, b.context_id, true],
      ].sort(),
    );
    const [childStart] = await eventsOf(rt, a.context_id!, "RunStarted");
    expect(childStart!.data.superior).toEqual({ contextId: root.id, runId, toolCallId: a.job_id, jobId: a.job_id });
  });

  it("lets a later call continue a job's child by context_id, while a call without one starts a fresh default child", async () => {
    const { rt, model } = await runtimeWith(
      store,
      a0Steps([
        () => call("parallel", { tool_calls: [job("alpha"), job("beta")] }),
        (req) => call("call_subordinate", { message: "more alpha", context_id: outputs(req)[0]!.jobs[0]!.context_id }),
        () => call("call_subordinate", { message: "plain" }),
      ]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");

    const out = outputs(model.requests.at(-1)!)[0]!;
    const alpha = out.jobs[0]!.context_id!;
    expect(userMessages(requestsOf(model.requests, alpha).at(-1)!)).toEqual(["alpha", "more alpha"]);
    expect(toolResults(model.requests.at(-1)!)[1]).toBe(`ok: more alpha${footer(1, alpha)}`);
    const children = await rt.children(root.id);
    expect(children.map((c) => [c.name, c.slot])).toEqual([
      ["alpha", out.jobs[0]!.job_id],
      ["beta", out.jobs[1]!.job_id],
      ["plain", "default"],
    ]);
  });
});

describe("when a parallel call is refused", () => {
  it.each([
    [
      "more than 8 calls",
      Array.from({ length: 9 }, (_, i) => job(`task ${i}`)),
      "parallel takes at most 8 tool calls; got 9. Split them into several parallel calls.",
    ],
    [
      "a nested parallel",
      [job("ok"), { name: "parallel", arguments: { tool_calls: [job("inner")] } }],
      "parallel cannot run `parallel` inside itself: list all the calls in one parallel call.",
    ],
    [
      "response inside",
      [job("ok"), { name: "response", arguments: { text: "bye" } }],
      "`response` cannot run inside parallel: collect the jobs, then give your final answer yourself.",
    ],
  ])("refuses %s, verbatim, and starts no job", async (_what, toolCalls, message) => {
    const { rt, model } = await runtimeWith(store, a0Steps([() => call("parallel", { tool_calls: toolCalls })]));
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });
    expect(toolResults(model.requests.at(-1)!)).toEqual([refused("parallel", message)]);
    expect(await eventsOf(rt, root.id, "ParallelJobStarted")).toEqual([]);
    expect(await rt.children(root.id)).toEqual([]);
  });

  it("takes exactly 8 calls", async () => {
    const { rt, model } = await runtimeWith(
      store,
      a0Steps([() => call("parallel", { tool_calls: Array.from({ length: 8 }, (_, i) => job(`task ${i}`)) })]),
    );
    const root = await rt.createContext();
    await rt.send(root.id, "go");
    expect(outputs(model.requests.at(-1)!)[0]!.jobs.map((j) => j.status)).toEqual(Array(8).fill("success"));
    expect(await rt.children(root.id)).toHaveLength(8);
  });
});

describe("when jobs are started without waiting", () => {
  it("answers 'waiting' at once; collect shows them running without waiting; await waits for their results", async () => {
    const release = gate();
    let childrenRunning = 0;
    const bothRunning = gate();
    const { rt, model } = await runtimeWith(
      store,
      a0Steps(
        [
          () => call("parallel", { tool_calls: [job("slow one"), job("slow two")], wait: false }),
          async () => {
            await bothRunning.promise;
            return call("parallel", { action: "collect" });
          },
          () => {
            release.open();
            return call("parallel", { action: "await" });
          },
          () => call("parallel", { action: "collect" }),
        ],
        async (req) => {
          if (++childrenRunning === 2) bothRunning.open();
          await release.promise;
          return { text: `ok: ${last(req).content}` };
        },
      ),
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });

    const [started, collected, awaited, collectedAfter] = outputs(model.requests.at(-1)!) as [
      Output,
      Output,
      Output,
      Output,
    ];
    expect(started.status).toBe("waiting");
    expect(started.jobs.map((j) => [j.tool, j.status])).toEqual([
      ["call_subordinate", "running"],
      ["call_subordinate", "running"],
    ]);
    expect(collected.status).toBe("waiting");
    expect(collected.jobs.map((j) => j.status)).toEqual(["running", "running"]);
    const children = Object.fromEntries((await rt.children(root.id)).map((c) => [c.name, c.id]));
    expect(awaited).toEqual({
      status: "success",
      jobs: [
        {
          job_id: started.jobs[0]!.job_id,
          tool: "call_subordinate",
          status: "success",
          context_id: children["slow one"],
          result: `ok: slow one${footer(1, children["slow one"]!)}`,
        },
        {
          job_id: started.jobs[1]!.job_id,
          tool: "call_subordinate",
          status: "success",
          context_id: children["slow two"],
          result: `ok: slow two${footer(1, children["slow two"]!)}`,
        },
      ],
    });
    expect(collectedAfter).toEqual(awaited);
  });

  it("cancels a running job: the job ends 'cancelled' and its child 'stopped'", async () => {
    const childRunning = gate();
    const { rt, model } = await runtimeWith(
      store,
      a0Steps(
        [
          () => call("parallel", { tool_calls: [job("endless")], wait: false }),
          async (req) => {
            await childRunning.promise;
            return call("parallel", { action: "cancel", job_ids: [outputs(req)[0]!.jobs[0]!.job_id] });
          },
        ],
        async () => {
          childRunning.open();
          return new Promise(() => undefined);
        },
      ),
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });

    const [started, cancelled] = outputs(model.requests.at(-1)!) as [Output, Output];
    const [child] = await rt.children(root.id);
    const jobId = started.jobs[0]!.job_id;
    expect(cancelled).toEqual({
      status: "cancelled",
      jobs: [{ job_id: jobId, tool: "call_subordinate", status: "cancelled", context_id: child!.id, error: "stopped" }],
    });
    expect(await rt.context(child!.id)).toMatchObject({ status: "stopped" });
    expect((await eventsOf(rt, child!.id, "RunStopped")).map((e) => e.data.by)).toEqual(["superior"]);
    expect(
      (await eventsOf(rt, root.id, "ParallelJobFinished")).map((e) => [e.data.jobId, e.data.status, e.data.contextId]),
    ).toEqual([[jobId, "cancelled", child!.id]]);
  });

  it("cancels jobs still running when the caller's run ends, and stops their children", async () => {
    const childRunning = gate();
    const { rt } = await runtimeWith(
      store,
      a0Steps(
        [
          () => call("parallel", { tool_calls: [job("forgotten")], wait: false }),
          async () => {
            await childRunning.promise;
            return { text: "done" } as ReturnType<typeof call>;
          },
        ],
        () => {
          childRunning.open();
          return new Promise(() => undefined);
        },
      ),
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });
    const [child] = await rt.children(root.id);
    expect(await rt.context(child!.id)).toMatchObject({ status: "stopped" });
    expect((await eventsOf(rt, child!.id, "RunStopped")).map((e) => e.data.by)).toEqual(["superior"]);
    expect((await eventsOf(rt, root.id, "ParallelJobFinished")).map((e) => [e.data.status, e.data.contextId])).toEqual([
      ["cancelled", child!.id],
    ]);
  });

  it("cancels a job whose child is not running yet when the caller's run ends, and the child never runs on", async () => {
    // A0 answers at once, while the job is still creating its child.
    const { rt } = await runtimeWith(
      store,
      a0Steps(
        [() => call("parallel", { tool_calls: [job("too late")], wait: false })],
        () => new Promise(() => undefined),
      ),
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });
    expect((await eventsOf(rt, root.id, "ParallelJobFinished")).map((e) => e.data.status)).toEqual(["cancelled"]);
    // Closing the runtime settles everything still in flight (the job's child creation included): what the
    // log holds then is final, so a child that ran on would show as a run with no stop by its superior.
    await rt.close();
    const { rt: after } = await runtimeWith(store, () => new Promise(() => undefined));
    for (const child of await after.children(root.id)) {
      expect(child.status).not.toBe("running");
      if (child.lastRun)
        expect((await eventsOf(after, child.id, "RunStopped")).map((e) => e.data.by)).toEqual(["superior"]);
    }
    expect((await after.events({ contextId: root.id })).at(-1)!.type).toBe("RunCompleted");
  });
});

describe("when a wait times out", () => {
  it("answers 'running' and leaves the jobs running; a later await collects them", async () => {
    const release = gate();
    const { rt, model } = await runtimeWith(
      store,
      a0Steps(
        [
          () => call("parallel", { tool_calls: [job("slow")], timeout: 0.2 }),
          () => {
            release.open();
            return call("parallel", { action: "await" });
          },
        ],
        async (req) => {
          await release.promise;
          return { text: `ok: ${last(req).content}` };
        },
      ),
    );
    const root = await rt.createContext();
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed" });

    const [timedOut, awaited] = outputs(model.requests.at(-1)!) as [Output, Output];
    const [child] = await rt.children(root.id);
    expect(timedOut.status).toBe("running");
    expect(timedOut.jobs.map((j) => j.status)).toEqual(["running"]);
    expect(awaited).toEqual({
      status: "success",
      jobs: [
        {
          job_id: timedOut.jobs[0]!.job_id,
          tool: "call_subordinate",
          status: "success",
          context_id: child!.id,
          result: `ok: slow${footer(1, child!.id)}`,
        },
      ],
    });
    expect((await eventsOf(rt, root.id, "ParallelJobFinished")).map((e) => e.data.status)).toEqual(["success"]);
  });
});

describe("when a job's subordinate returns while the caller's append is in flight", () => {
  // Events staged during an append go out with the next append, never dropped.
  it("records the subordinate's return with the caller's next append", async () => {
    let rootId = "";
    const childRunning = gate();
    const childDone = gate();
    let held = false;
    const slowStore = holdingStore(store, (streamId, types) => {
      if (streamId === rootId) {
        if (held || !types.includes("ModelCalled") || !types.includes("ToolReturned")) return undefined;
        // The caller's next model call is held until the job has staged its child's return.
        held = true;
        return childDone.promise.then(() => new Promise((r) => setTimeout(r, 100)));
      }
      if (types.includes("ModelCalled")) childRunning.open();
      if (types.includes("RunCompleted")) setTimeout(() => childDone.open(), 100);
      return undefined;
    });
    const probe = defineTool({
      name: "probe",
      description: "returns once the job's child is running",
      input: z.object({}),
      run: async () => {
        await childRunning.promise;
        return "probe result";
      },
    });
    const { rt } = await runtimeWith(
      slowStore,
      a0Steps([
        () => ({
          toolCalls: [
            {
              id: "c_start",
              name: "parallel",
              arguments: JSON.stringify({ tool_calls: [job("background")], wait: false }),
            },
            { id: "c_probe", name: "probe", arguments: "{}" },
          ],
        }),
        () => call("parallel", { action: "await" }),
      ]),
      { tools: [probe] },
    );
    const root = await rt.createContext();
    rootId = root.id;
    expect(await rt.send(root.id, "go")).toMatchObject({ status: "completed", response: "done" });
    expect(held).toBe(true);
    const [child] = await rt.children(root.id);
    const returned = await eventsOf(rt, root.id, "SubordinateReturned");
    expect(returned.map((e) => [e.data.childContextId, e.data.outcome])).toEqual([[child!.id, "completed"]]);
    expect((await eventsOf(rt, root.id, "ToolReturned")).map((e) => e.data.toolCallId)).toContain("c_probe");
  });
});

/** A0 runs one call_subordinate job (waiting for it) whose child's model call never returns; resolves once the child is mid-call. */
const startHeldJob = async (dataDir: string) => {
  const store1 = await openPgliteStore({ dataDir });
  const childRunning = gate();
  const rt1 = await createRuntime({
    store: store1,
    model: scriptedModel(
      a0Steps([() => call("parallel", { tool_calls: [job("long job")] })], () => {
        childRunning.open();
        return new Promise(() => undefined);
      }),
    ),
  });
  const root = await rt1.createContext();
  void rt1.send(root.id, "go").catch(() => undefined);
  await childRunning.promise;
  const [child] = await rt1.children(root.id);
  const [started] = await eventsOf(rt1, root.id, "ParallelJobStarted");
  return { store1, rt1, rootId: root.id, childId: child!.id, jobId: started!.data.jobId };
};

/** Opens a new runtime on the data dir and checks what the contract says a restart finds. */
const expectInterruptedAfterReopen = async (dataDir: string, rootId: string, childId: string, jobId: string) => {
  const store2 = await openPgliteStore({ dataDir });
  try {
    const rt2 = await createRuntime({
      store: store2,
      model: scriptedModel(() => ({ text: "after restart" })),
      recovery: "interrupt",
    });
    expect((await eventsOf(rt2, rootId, "ParallelJobFinished")).map((e) => [e.data.jobId, e.data.status])).toEqual([
      [jobId, "interrupted"],
    ]);
    for (const id of [rootId, childId]) {
      expect(await eventsOf(rt2, id, "RunInterrupted")).toHaveLength(1);
      expect((await rt2.events({ contextId: id })).at(-1)!.type).toBe("RunInterrupted");
      expect(await rt2.context(id)).toMatchObject({ status: "failed", failure: { reason: "interrupted" } });
    }
    // The interrupted child takes a new message and runs again.
    expect(await rt2.send(childId, "go on")).toMatchObject({ status: "completed", response: "after restart" });
    await rt2.close();
  } finally {
    await store2.close();
  }
};

describe("when the process dies while a job's child is mid-call and a new runtime opens the same log", () => {
  it("marks the job interrupted and both runs RunInterrupted; the contexts are failed with reason 'interrupted'", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      const { store1, rootId, childId, jobId } = await startHeldJob(dataDir);
      // A crash: the log is closed under the runtime, which never records anything again.
      await store1.close();
      await expectInterruptedAfterReopen(dataDir, rootId, childId, jobId);
    } finally {
      await removeDir(dataDir);
    }
  });
});

describe("when the runtime is closed while a job's child is mid-call and a new runtime opens the same log", () => {
  // close() records the unfinished runs and their running jobs as interrupted itself.
  it("marks the job interrupted and both runs RunInterrupted; the contexts are failed with reason 'interrupted'", async () => {
    const dataDir = await copyPgliteTemplate();
    try {
      const { store1, rt1, rootId, childId, jobId } = await startHeldJob(dataDir);
      try {
        await rt1.close();
      } finally {
        await store1.close();
      }
      await expectInterruptedAfterReopen(dataDir, rootId, childId, jobId);
    } finally {
      await removeDir(dataDir);
    }
  });
});
