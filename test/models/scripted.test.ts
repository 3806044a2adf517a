// The scripted model: replies from a function or a queue, recorded requests, stops, loud failures.
import { describe, expect, it } from "vitest";
import { ModelError, type ModelRequest } from "../../src/models/port.ts";
import { scriptedModel, scriptedTurns } from "../../src/models/scripted.ts";

const request = (text: string, signal: AbortSignal = new AbortController().signal): ModelRequest => ({
  contextId: "ctx-1",
  agentNumber: 1,
  profile: "default",
  model: "scripted",
  messages: [{ role: "user", content: text }],
  tools: [{ name: "response", description: "Answer.", parameters: { type: "object" } }],
  signal,
});

describe("given a handler", () => {
  it("replies with what the handler returns and records every request", async () => {
    const model = scriptedModel((req) => ({ text: `echo: ${req.messages.at(-1)?.content}` }));

    const first = await model.call(request("one"));
    const second = await model.call(request("two"));

    expect([first.text, second.text]).toEqual(["echo: one", "echo: two"]);
    expect(model.requests.map((r) => r.messages[0]?.content)).toEqual(["one", "two"]);
  });

  it("records the messages as they were at the call, not as the caller later changed them", async () => {
    const model = scriptedModel(() => ({ text: "ok" }));
    const req = request("before");
    await model.call(req);
    req.messages.push({ role: "assistant", content: "after" });
    expect(model.requests[0]?.messages).toHaveLength(1);
  });

  it("rejects with the handler's ModelError, thrown or rejected", async () => {
    const thrown = scriptedModel(() => {
      throw new ModelError("rate_limited", "slow down", true, { retryAfterMs: 10 });
    });
    const rejected = scriptedModel(async () => Promise.reject(new ModelError("server_error", "boom", true)));

    await expect(thrown.call(request("x"))).rejects.toMatchObject({ reason: "rate_limited", retryAfterMs: 10 });
    await expect(rejected.call(request("x"))).rejects.toMatchObject({ reason: "server_error" });
  });
});

describe("when the call is stopped", () => {
  it("rejects at once with aborted while the handler is still pending", async () => {
    const controller = new AbortController();
    const model = scriptedModel(() => new Promise(() => {})); // never settles
    const call = model.call(request("x", controller.signal));

    controller.abort();

    await expect(call).rejects.toMatchObject({ _tag: "ModelError", reason: "aborted", retryable: false });
  });

  it("rejects with aborted without asking the handler when already stopped", async () => {
    let asked = 0;
    const model = scriptedModel(() => {
      asked += 1;
      return { text: "no" };
    });
    await expect(model.call(request("x", AbortSignal.abort()))).rejects.toMatchObject({ reason: "aborted" });
    expect(asked).toBe(0);
  });
});

describe("given a queue of turns", () => {
  it("replies in order, calling turns that are functions of the request", async () => {
    const model = scriptedModel.fromTurns([
      { toolCalls: [{ id: "c1", name: "call_subordinate", arguments: '{"message":"go"}' }] },
      (req) => ({ text: `seen ${req.messages.length} message(s)` }),
    ]);

    const first = await model.call(request("a"));
    const second = await model.call(request("b"));

    expect(first.toolCalls?.[0]?.arguments).toBe('{"message":"go"}');
    expect(second.text).toBe("seen 1 message(s)");
    expect(model.remaining).toBe(0);
    expect(() => model.assertConsumed()).not.toThrow();
  });

  it("throws a queued error as the call's failure", async () => {
    const model = scriptedTurns([new ModelError("timeout", "slow", true), { text: "ok" }]);
    await expect(model.call(request("a"))).rejects.toMatchObject({ reason: "timeout" });
    await expect(model.call(request("a"))).resolves.toEqual({ text: "ok" });
  });

  it("fails loudly on a call past the end, naming the call and the context", async () => {
    const model = scriptedTurns([{ text: "only one" }]);
    await model.call(request("a"));

    await expect(model.call(request("again"))).rejects.toThrow(
      /unexpected model call #2 \(1 turn\(s\) scripted\) from context ctx-1 \(A1\).*again/,
    );
  });

  it("still fails assertConsumed after an unexpected call the caller swallowed", async () => {
    const model = scriptedTurns([]);
    await model.call(request("a")).catch(() => {});
    expect(() => model.assertConsumed()).toThrow(/unexpected model call #1/);
  });

  it("fails assertConsumed while turns remain", async () => {
    const model = scriptedTurns([{ text: "one" }, { text: "two" }]);
    await model.call(request("a"));
    expect(() => model.assertConsumed()).toThrow("1 of 2 scripted turn(s) were never requested");
  });

  it("does not consume a turn for a call stopped before it started", async () => {
    const model = scriptedTurns([{ text: "kept" }]);
    await expect(model.call(request("a", AbortSignal.abort()))).rejects.toMatchObject({ reason: "aborted" });
    expect(model.remaining).toBe(1);
  });
});
