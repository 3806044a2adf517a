import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { freshPgliteStore } from "../support/pglite.ts";
import type { EventStore } from "../../src/events/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { scriptedModel, type ScriptedHandler } from "../../src/models/scripted.ts";
import { ModelError, type ModelRequest } from "../../src/models/port.ts";
import { defineTool, RepairableToolError } from "../../src/tools/defineTool.ts";
import { WARN_REPEATED, WARN_UNUSABLE } from "../../src/actors/messageLoop.ts";
import { eventually, gate } from "../support/async.ts";

let store: EventStore;
beforeAll(async () => {
  store = await freshPgliteStore();
});
afterAll(async () => {
  await store.close();
});

const call = (name: string, args: unknown, id = `c_${name}_${Math.random().toString(16).slice(2, 8)}`) => ({
  toolCalls: [{ id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) }],
});

const runtimeWith = async (handler: ScriptedHandler, extra: Partial<Parameters<typeof createRuntime>[0]> = {}) => {
  const model = scriptedModel(handler);
  const rt = await createRuntime({
    store,
    model,
    limits: { retryBaseMs: 1, retryMaxMs: 5, passivateAfterMs: 50 },
    ...extra,
  });
  return { rt, model };
};

const typesOf = async (rt: Runtime, id: string) => (await rt.events({ contextId: id })).map((e) => e.type);

describe("when a message is sent to an idle context", () => {
  it("runs the loop to the model's final answer and records every step", async () => {
    const { rt, model } = await runtimeWith(() => ({
      text: "hello there",
      usage: { inputTokens: 10, outputTokens: 3 },
    }));
    const ctx = await rt.createContext({ name: "greeter" });
    const result = await rt.send(ctx.id, "say hello");
    expect(result).toMatchObject({ status: "completed", response: "hello there" });
    expect(await typesOf(rt, ctx.id)).toEqual([
      "ContextCreated",
      "MessageReceived",
      "RunStarted",
      "ModelCalled",
      "ModelReplied",
      "RunCompleted",
    ]);
    expect(model.requests[0]!.messages[0]!.role).toBe("system");
    expect(model.requests[0]!.messages.at(-1)).toEqual({ role: "user", content: "say hello" });
    expect((await rt.context(ctx.id))!.status).toBe("idle");
    expect((await rt.usage(ctx.id)).own).toMatchObject({ inputTokens: 10, outputTokens: 3 });
    await rt.close();
  });

  it("ends the run through the response tool", async () => {
    const { rt } = await runtimeWith(() => call("response", { text: "done" }));
    const ctx = await rt.createContext();
    expect(await rt.send(ctx.id, "go")).toMatchObject({ status: "completed", response: "done" });
    await rt.close();
  });
});

describe("when the run is stopped during a model call", () => {
  it("ends stopped, records the aborted call, and takes the next message", async () => {
    const entered = gate();
    let calls = 0;
    const { rt } = await runtimeWith(async (req) => {
      calls++;
      if (calls === 1) {
        entered.open();
        await new Promise((_, reject) =>
          req.signal.addEventListener("abort", () => reject(new ModelError("aborted", "aborted", false))),
        );
      }
      return { text: "second run answer" };
    });
    const ctx = await rt.createContext();
    const running = rt.send(ctx.id, "a long task");
    await entered.promise;
    expect((await rt.context(ctx.id))!.status).toBe("running");
    await rt.stop(ctx.id);
    expect(await running).toMatchObject({ status: "stopped" });
    const events = await rt.events({ contextId: ctx.id });
    const aborted = events.find((e) => e.type === "ModelCallFailed");
    expect(aborted?.data).toMatchObject({ reason: "aborted", step: 1 });
    expect(events.at(-1)!.type).toBe("RunStopped");
    expect((await rt.context(ctx.id))!.status).toBe("stopped");
    expect(await rt.send(ctx.id, "again")).toMatchObject({ status: "completed", response: "second run answer" });
    await rt.close();
  });
});

describe("when the model fails for good", () => {
  it("ends failed, and the next message runs again with the history intact", async () => {
    let calls = 0;
    const { rt, model } = await runtimeWith(() => {
      calls++;
      if (calls === 1) throw new ModelError("authentication", "bad key", false);
      return { text: "recovered" };
    });
    const ctx = await rt.createContext();
    const first = await rt.send(ctx.id, "first message");
    expect(first).toMatchObject({ status: "failed", failure: { reason: "model_error" } });
    expect((await rt.context(ctx.id))!.status).toBe("failed");
    const second = await rt.send(ctx.id, "second message");
    expect(second).toMatchObject({ status: "completed", response: "recovered" });
    const sent = model.requests[1]!.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(sent).toEqual(["first message", "second message"]);
    await rt.close();
  });

  it("retries retryable errors with backoff and records each failed attempt", async () => {
    let calls = 0;
    const { rt } = await runtimeWith(() => {
      calls++;
      if (calls <= 2) throw new ModelError("rate_limited", "slow down", true, { retryAfterMs: 3 });
      return { text: "third time lucky" };
    });
    const ctx = await rt.createContext();
    expect(await rt.send(ctx.id, "go")).toMatchObject({ status: "completed", response: "third time lucky" });
    const failures = (await rt.events({ contextId: ctx.id })).filter((e) => e.type === "ModelCallFailed");
    expect(failures.map((f) => f.data)).toMatchObject([
      { attempt: 1, reason: "rate_limited", retryable: true, retryInMs: 3 },
      { attempt: 2, reason: "rate_limited", retryable: true },
    ]);
    await rt.close();
  });

  it("gives up after the configured retries", async () => {
    const { rt, model } = await runtimeWith(
      () => {
        throw new ModelError("server_error", "HTTP 500", true);
      },
      { limits: { modelRetries: 2, retryBaseMs: 1, retryMaxMs: 2 } },
    );
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "go");
    expect(r).toMatchObject({ status: "failed", failure: { reason: "model_error" } });
    expect(model.requests).toHaveLength(3);
    await rt.close();
  });
});

describe("when a message arrives while the context runs", () => {
  it("records it at once and delivers it in the very next model request", async () => {
    const held = gate();
    const entered = gate();
    const seen: ModelRequest[] = [];
    const { rt } = await runtimeWith(async (req) => {
      seen.push(req);
      if (seen.length === 1) {
        entered.open();
        await held.promise;
        return call("response", { text: "first answer" });
      }
      return { text: "answer with the update" };
    });
    const ctx = await rt.createContext();
    const running = rt.send(ctx.id, "start working");
    await entered.promise;
    const intervention = rt.send(ctx.id, "also consider this");
    await eventually(
      async () => (await typesOf(rt, ctx.id)).includes("InterventionReceived"),
      5000,
      "the intervention",
    );
    held.open();
    const [a, b] = await Promise.all([running, intervention]);
    expect(a.runId).toBe(b.runId);
    expect(a).toMatchObject({ status: "completed", response: "answer with the update" });
    expect(seen).toHaveLength(2);
    expect(seen[1]!.messages.at(-1)).toEqual({ role: "user", content: "also consider this" });
    await rt.close();
  });

  it("skips the remaining tool calls of the step so the model sees the message now", async () => {
    const inTool = gate();
    const release = gate();
    const slow = defineTool({
      name: "slow",
      description: "waits",
      input: z.object({}),
      run: async () => {
        inTool.open();
        await release.promise;
        return "slow done";
      },
    });
    let calls = 0;
    const { rt, model } = await runtimeWith(
      () => {
        calls++;
        if (calls === 1)
          return {
            toolCalls: [
              { id: "a", name: "slow", arguments: "{}" },
              { id: "b", name: "slow", arguments: "{}" },
            ],
          };
        return { text: "ok" };
      },
      { tools: [slow] },
    );
    const ctx = await rt.createContext();
    const running = rt.send(ctx.id, "go");
    await inTool.promise;
    void rt.send(ctx.id, "change of plan");
    await eventually(
      async () => (await typesOf(rt, ctx.id)).includes("InterventionReceived"),
      5000,
      "the intervention",
    );
    release.open();
    await running;
    const msgs = model.requests[1]!.messages;
    expect(msgs.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content)).toEqual([
      "slow done",
      expect.stringContaining("Not run: a new message arrived"),
    ]);
    expect(msgs.at(-1)).toEqual({ role: "user", content: "change of plan" });
    await rt.close();
  });
});

describe("when a running context is paused", () => {
  it("holds the run at the next checkpoint until it is resumed", async () => {
    const inTool = gate();
    const release = gate();
    const step = defineTool({
      name: "step",
      description: "one step",
      input: z.object({}),
      run: async () => {
        inTool.open();
        await release.promise;
        return "stepped";
      },
    });
    let calls = 0;
    const { rt, model } = await runtimeWith(() => (++calls === 1 ? call("step", {}) : { text: "finished" }), {
      tools: [step],
    });
    const ctx = await rt.createContext();
    const running = rt.send(ctx.id, "go");
    await inTool.promise;
    await rt.pause(ctx.id);
    release.open();
    // Time for a run that ignored the pause to call the model again (the proof is the log's order below).
    await new Promise((r) => setTimeout(r, 150));
    expect(model.requests).toHaveLength(1);
    expect((await rt.context(ctx.id))!).toMatchObject({ status: "running", paused: true });
    await rt.resume(ctx.id);
    expect(await running).toMatchObject({ status: "completed", response: "finished" });
    expect(model.requests).toHaveLength(2);
    // The log's order proves the wait: the second model call comes after the resume, never between.
    const order = (await rt.events({ contextId: ctx.id }))
      .map((e) => e.type)
      .filter((t) => ["ContextPaused", "ModelCalled", "ContextResumed"].includes(t));
    expect(order).toEqual(["ModelCalled", "ContextPaused", "ContextResumed", "ModelCalled"]);
    expect((await rt.context(ctx.id))!.paused).toBe(false);
    await rt.close();
  });

  it("records each pause and resume once, and the machine, the log and the run agree after every step", async () => {
    const inTool = gate();
    const release = gate();
    const step = defineTool({
      name: "step",
      description: "one step",
      input: z.object({}),
      run: async () => {
        inTool.open();
        await release.promise;
        return "stepped";
      },
    });
    let calls = 0;
    const { rt, model } = await runtimeWith(() => (++calls === 1 ? call("step", {}) : { text: "finished" }), {
      tools: [step],
    });
    const ctx = await rt.createContext();
    const machinePaused = () => (rt.actor(ctx.id)!.getSnapshot().context as { paused: boolean }).paused;
    const agree = async (paused: boolean) => {
      expect(machinePaused()).toBe(paused);
      expect((await rt.context(ctx.id))!.paused).toBe(paused);
    };
    const running = rt.send(ctx.id, "go");
    await inTool.promise;
    await rt.pause(ctx.id);
    await rt.pause(ctx.id);
    await agree(true);
    await rt.resume(ctx.id);
    await rt.resume(ctx.id);
    await agree(false);
    await rt.pause(ctx.id);
    await agree(true);
    release.open();
    // An intervention resumes the paused run, and the model sees it with its next call.
    await rt.start(ctx.id, "carry on");
    expect(await running).toMatchObject({ status: "completed", response: "finished" });
    await agree(false);
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "carry on" });
    const types = await typesOf(rt, ctx.id);
    expect(types.filter((t) => t === "ContextPaused")).toHaveLength(2);
    expect(types.filter((t) => t === "ContextResumed")).toHaveLength(1);
    await rt.close();
  });
});

describe("when the model calls tools badly", () => {
  it("returns bad arguments, unknown tools and thrown errors to the model as tool results, and the run completes", async () => {
    const picky = defineTool({
      name: "picky",
      description: "needs a number",
      input: z.object({ n: z.number() }),
      run: ({ n }) => {
        if (n < 0) throw new RepairableToolError("n must not be negative");
        if (n === 0) throw new Error("division by zero");
        return `ok ${n}`;
      },
    });
    const script = [
      call("picky", { n: "seven" }, "c1"),
      call("picky", "{not json", "c2"),
      call("nosuchtool", {}, "c3"),
      call("picky", { n: -1 }, "c4"),
      call("picky", { n: 0 }, "c5"),
      call("picky", { n: 2 }, "c6"),
      { text: "all done" },
    ];
    let i = 0;
    const { rt, model } = await runtimeWith(() => script[i++]!, { tools: [picky] });
    const ctx = await rt.createContext();
    expect(await rt.send(ctx.id, "try things")).toMatchObject({ status: "completed", response: "all done" });
    const toolResults = model.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map((m) => (m as { content: string }).content);
    expect(toolResults).toEqual([
      expect.stringMatching(/^Invalid arguments for 'picky': n: /),
      expect.stringMatching(/^Invalid arguments for 'picky': not valid JSON/),
      expect.stringMatching(/^Tool 'nosuchtool' not found\. Available tools: .*picky/),
      "n must not be negative",
      "Tool 'picky' failed: division by zero",
      "ok 2",
    ]);
    await rt.close();
  });
});

describe("when the model repeats itself or replies with nothing", () => {
  it("warns once about a repeated reply, then fails the run", async () => {
    const { rt, model } = await runtimeWith(() => call("response_not", {}, "same"));
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "go");
    expect(r).toMatchObject({ status: "failed", failure: { reason: "repeated_reply" } });
    expect(model.requests[2]!.messages.at(-1)).toEqual({ role: "user", content: WARN_REPEATED });
    await rt.close();
  });

  it("warns once about an empty reply, then fails on the second in a row", async () => {
    const { rt, model } = await runtimeWith(() => ({ text: "  " }));
    const ctx = await rt.createContext();
    const r = await rt.send(ctx.id, "go");
    expect(r).toMatchObject({ status: "failed", failure: { reason: "unusable_replies" } });
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.at(-1)).toEqual({ role: "user", content: WARN_UNUSABLE });
    await rt.close();
  });
});
