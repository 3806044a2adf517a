// Human approval of tool calls in one process: a call that needs approval parks its run, the others go on,
// and approve / reject / stop / the timeout decide what happens next. Decisions are single-use and checked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { waitFor } from "xstate";
import { freshPgliteStore } from "../support/pglite.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, RuntimeError, type Runtime } from "../../src/runtime/runtime.ts";
import { scriptedModel, type ScriptedHandler } from "../../src/models/scripted.ts";
import { defineTool } from "../../src/tools/defineTool.ts";
import type { RecordedEvent } from "../../src/events/schema.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

const ran: string[] = [];
const deploy = defineTool({
  name: "deploy",
  description: "deploys",
  input: z.object({ env: z.string() }),
  needsApproval: ({ env }) => env === "prod",
  run: ({ env }) => {
    ran.push(`deploy ${env}`);
    return `deployed to ${env}`;
  },
});
const echo = defineTool({
  name: "echo",
  description: "echoes",
  input: z.object({ text: z.string() }),
  run: ({ text }) => {
    ran.push(`echo ${text}`);
    return text;
  },
});

/** First reply: deploy to `env` and echo; then the final answer (the last tool message's text). */
const deployThenAnswer: ScriptedHandler = (req) => {
  const last = req.messages.at(-1)!;
  if (last.role === "user") {
    return {
      toolCalls: [
        {
          id: "c_deploy",
          name: "deploy",
          arguments: JSON.stringify({ env: last.content === "staging" ? "staging" : "prod" }),
        },
        { id: "c_echo", name: "echo", arguments: JSON.stringify({ text: "hi" }) },
      ],
    };
  }
  const deployResult = req.messages.find((m) => m.role === "tool" && m.tool_call_id === "c_deploy");
  return { text: `done: ${deployResult?.content as string}` };
};

const open = (
  handler: ScriptedHandler = deployThenAnswer,
  extra: Partial<Parameters<typeof createRuntime>[0]> = {},
) => {
  const model = scriptedModel(handler);
  return createRuntime({ store, model, tools: [deploy, echo], limits: { passivateAfterMs: 60_000 }, ...extra }).then(
    (rt) => ({ rt, model }),
  );
};

const parked = (rt: Runtime, id: string) =>
  waitFor(rt.actor(id)!, (s) => s.matches({ running: "parked" }), { timeout: 10_000 });
const typesOf = async (rt: Runtime, id: string) => (await rt.events({ contextId: id })).map((e) => e.type);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as RuntimeError,
  );

describe("when a tool call needs approval", () => {
  it("records the request and parks the run; the reply's other call runs; approve lets the call run and the run goes on", async () => {
    ran.length = 0;
    const { rt, model } = await open();
    const ctx = await rt.createContext();
    const started = await rt.start(ctx.id, "ship it");
    await parked(rt, ctx.id);
    expect(ran).toEqual(["echo hi"]);
    const [pending, ...more] = await rt.approvals();
    expect(more).toEqual([]);
    expect(pending).toMatchObject({
      contextId: ctx.id,
      tool: "deploy",
      toolCallId: "c_deploy",
      arguments: JSON.stringify({ env: "prod" }),
      agentNumber: 0,
      status: "pending",
    });
    expect(await rt.context(ctx.id)).toMatchObject({ status: "running", awaitingApproval: [pending!.approvalId] });
    expect(await rt.approvals({ contextId: ctx.id })).toHaveLength(1);

    await rt.approve(pending!.approvalId, { by: "alice", note: "go" });
    expect(await started.ended).toMatchObject({ status: "completed", response: "done: deployed to prod" });
    expect(ran).toEqual(["echo hi", "deploy prod"]);
    expect(model.requests).toHaveLength(2);
    expect(await rt.approvals()).toEqual([]);
    const types = await typesOf(rt, ctx.id);
    // The parked call is recorded as called only once it may run.
    expect(types.slice(types.indexOf("ModelReplied"))).toEqual([
      "ModelReplied",
      "ApprovalRequested",
      "ToolCalled",
      "ToolReturned",
      "ApprovalGranted",
      "ToolCalled",
      "ToolReturned",
      "ModelCalled",
      "ModelReplied",
      "RunCompleted",
    ]);
    expect((await rt.context(ctx.id))!.awaitingApproval).toEqual([]);
    await rt.close();
  });

  it("does not ask when the tool's function says the call needs none", async () => {
    ran.length = 0;
    const { rt } = await open();
    const ctx = await rt.createContext();
    expect(await rt.send(ctx.id, "staging")).toMatchObject({
      status: "completed",
      response: "done: deployed to staging",
    });
    expect(await typesOf(rt, ctx.id)).not.toContain("ApprovalRequested");
    await rt.close();
  });

  it("when it is rejected, then the model gets the reason as a repairable tool error and the run goes on", async () => {
    ran.length = 0;
    const { rt, model } = await open();
    const ctx = await rt.createContext();
    const started = await rt.start(ctx.id, "ship it");
    await parked(rt, ctx.id);
    const [pending] = await rt.approvals({ contextId: ctx.id });
    await rt.reject(pending!.approvalId, { by: "bob", reason: "not on a Friday" });
    expect(await started.ended).toMatchObject({
      status: "completed",
      response: "done: Not run: bob denied this call: not on a Friday",
    });
    expect(ran).toEqual(["echo hi"]);
    const failed = (await rt.events({ contextId: ctx.id })).find((e) => e.type === "ToolFailed") as Extract<
      RecordedEvent,
      { type: "ToolFailed" }
    >;
    expect(failed.data).toMatchObject({ toolCallId: "c_deploy", repairable: true });
    expect(model.requests[1]!.messages.filter((m) => m.role === "tool")).toHaveLength(2);
    await rt.close();
  });

  it("refuses a second decision, an unknown or malformed id and missing fields, writing nothing", async () => {
    const { rt } = await open();
    const ctx = await rt.createContext();
    const started = await rt.start(ctx.id, "ship it");
    await parked(rt, ctx.id);
    const [pending] = await rt.approvals();
    const head = await store.headPosition();
    expect(await refusal(rt.approve("not-an-id", { by: "alice" }))).toMatchObject({ reason: "invalid", field: "id" });
    expect(await refusal(rt.approve(pending!.approvalId, {} as never))).toMatchObject({
      reason: "invalid",
      field: "by",
    });
    expect(await refusal(rt.approve(pending!.approvalId, { by: "  " }))).toMatchObject({
      reason: "invalid",
      field: "by",
    });
    expect(await refusal(rt.reject(pending!.approvalId, { by: "bob" } as never))).toMatchObject({
      reason: "invalid",
      field: "reason",
    });
    expect(await refusal(rt.approve("00000000-0000-4000-8000-000000000000", { by: "alice" }))).toMatchObject({
      reason: "unknown_approval",
    });
    expect(await refusal(rt.approvals({ contextId: 42 as never }))).toMatchObject({
      reason: "invalid",
      field: "contextId",
    });
    expect(await store.headPosition()).toBe(head);
    await rt.approve(pending!.approvalId, { by: "alice" });
    const second = await refusal(rt.reject(pending!.approvalId, { by: "bob", reason: "too late" }));
    expect(second).toBeInstanceOf(RuntimeError);
    expect(second).toMatchObject({ reason: "already_decided" });
    expect(await started.ended).toMatchObject({ status: "completed" });
    expect((await typesOf(rt, ctx.id)).filter((t) => t === "ApprovalGranted" || t === "ApprovalDenied")).toEqual([
      "ApprovalGranted",
    ]);
    await rt.close();
  });

  it("when the run is stopped while parked, then it ends stopped, the approval is closed and a decision is refused", async () => {
    const { rt } = await open();
    const ctx = await rt.createContext();
    const started = await rt.start(ctx.id, "ship it");
    await parked(rt, ctx.id);
    const [pending] = await rt.approvals();
    expect(await rt.stop(ctx.id)).toMatchObject({ status: "stopped" });
    expect(await started.ended).toMatchObject({ status: "stopped" });
    expect(await rt.approvals()).toEqual([]);
    const head = await store.headPosition();
    expect(await refusal(rt.approve(pending!.approvalId, { by: "alice" }))).toMatchObject({ reason: "run_ended" });
    expect(await store.headPosition()).toBe(head);
    // The next message starts a new run as usual.
    expect(await rt.send(ctx.id, "staging")).toMatchObject({ status: "completed" });
    await rt.close();
  });

  it("when no one decides in time, then the call is denied as timed out and the run goes on", async () => {
    const { rt } = await open(deployThenAnswer, { approvals: { timeoutMs: 100 } });
    const ctx = await rt.createContext();
    const started = await rt.start(ctx.id, "ship it");
    expect(await started.ended).toMatchObject({
      status: "completed",
      response: "done: Not run: actorzero denied this call: timed out",
    });
    const denied = (await rt.events({ contextId: ctx.id })).find((e) => e.type === "ApprovalDenied") as Extract<
      RecordedEvent,
      { type: "ApprovalDenied" }
    >;
    expect(denied.data).toMatchObject({ by: "actorzero", reason: "timed out" });
    await rt.close();
  });

  it("when a subordinate's call waits, then the parent keeps waiting and completes with the child's answer once approved", async () => {
    const handler: ScriptedHandler = (req) => {
      const last = req.messages.at(-1)!;
      if (req.agentNumber === 0) {
        if (last.role === "user")
          return {
            toolCalls: [
              { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "deploy", reset: true }) },
            ],
          };
        return { text: `parent: ${last.content as string}` };
      }
      if (last.role === "user")
        return { toolCalls: [{ id: "k1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
      return { text: `child: ${last.content as string}` };
    };
    const { rt } = await open(handler);
    const root = await rt.createContext();
    const head = await store.headPosition();
    const started = await rt.start(root.id, "go");
    const pending = await new Promise<string>((resolve) => {
      void rt.subscribe(
        (e) => {
          if (e.type === "ApprovalRequested") resolve(e.streamId);
        },
        { after: head },
      );
    });
    await parked(rt, pending);
    expect(rt.actor(root.id)!.getSnapshot().matches({ running: "active" })).toBe(true);
    const [approval] = await rt.approvals({ contextId: root.id });
    expect(approval).toMatchObject({ contextId: pending, agentNumber: 1 });
    await rt.approve(approval!.approvalId, { by: "alice" });
    const ended = await started.ended;
    expect(ended.status).toBe("completed");
    expect(ended.response).toMatch(/^parent: child: deployed to prod/);
    await rt.close();
  });

  it("when the process closes while a child is parked, then at reopen the caller's run and the parked child's are both interrupted (no run outlives its superior)", async () => {
    const handler: ScriptedHandler = (req) =>
      req.agentNumber === 0
        ? {
            toolCalls: [
              { id: "d1", name: "call_subordinate", arguments: JSON.stringify({ message: "deploy", reset: true }) },
            ],
          }
        : { toolCalls: [{ id: "k1", name: "deploy", arguments: JSON.stringify({ env: "prod" }) }] };
    const first = await open(handler);
    const root = await first.rt.createContext();
    const head = await store.headPosition();
    const childId = new Promise<string>((resolve) => {
      void first.rt.subscribe((e) => e.type === "ApprovalRequested" && resolve(e.streamId), { after: head });
    });
    await first.rt.start(root.id, "go");
    const child = await childId;
    await parked(first.rt, child);
    await first.rt.close();
    const second = await open(handler);
    expect(await second.rt.context(root.id)).toMatchObject({ status: "failed", failure: { reason: "interrupted" } });
    expect(await second.rt.context(child)).toMatchObject({
      status: "failed",
      failure: { reason: "interrupted" },
      awaitingApproval: [],
    });
    expect(await second.rt.approvals({ contextId: root.id })).toEqual([]);
    await second.rt.close();
  });
});
