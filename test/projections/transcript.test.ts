// Example tests of the transcript fold: the messages exactly as the model is sent them.
import { describe, expect, it } from "vitest";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import type { DomainEvent } from "../../src/events/schema.ts";
import { ChatMessage } from "../../src/models/messages.ts";
import { NOT_RUN_RESULT, transcriptOf } from "../../src/projections/transcript.ts";
import { logBuilder } from "../../src/testing/recorded.ts";

const C = "ctx-1" as ContextId;
const r1 = "run-1" as RunId;
const r2 = "run-2" as RunId;

const transcriptAfter = (...events: DomainEvent[]): ChatMessage[] => {
  const log = logBuilder();
  for (const e of events) log.add(C, e);
  return transcriptOf(log.events);
};

const msg = (runId: RunId, text: string): DomainEvent => ({
  type: "MessageReceived",
  data: { runId, text, sender: "user" },
});
const started = (runId: RunId): DomainEvent => ({ type: "RunStarted", data: { runId, model: "m", superior: null } });
const called = (runId: RunId, step: number): DomainEvent => ({
  type: "ModelCalled",
  data: { runId, step, attempt: 0, model: "m" },
});
const replied = (
  runId: RunId,
  step: number,
  text: string | null,
  calls: { id: string; name: string; arguments: unknown }[] = [],
): DomainEvent => ({
  type: "ModelReplied",
  data: { runId, step, text, toolCalls: calls, usage: null },
});
const intervene = (runId: RunId, text: string): DomainEvent => ({
  type: "InterventionReceived",
  data: { runId, text },
});
const returned = (runId: RunId, id: string, result: string): DomainEvent => ({
  type: "ToolReturned",
  data: { runId, toolCallId: id, name: "search", result },
});

describe("the transcript", () => {
  it("renders a message, a reply with tool calls and their results in the chat shape", () => {
    const t = transcriptAfter(
      msg(r1, "find x"),
      started(r1),
      called(r1, 0),
      replied(r1, 0, null, [
        { id: "c1", name: "search", arguments: { q: "x" } },
        { id: "c2", name: "search", arguments: '{"q":"raw"' },
      ]),
      { type: "ToolCalled", data: { runId: r1, step: 0, toolCallId: "c1", name: "search", arguments: { q: "x" } } },
      returned(r1, "c1", "found"),
      {
        type: "ToolFailed",
        data: { runId: r1, toolCallId: "c2", name: "search", error: "bad json", repairable: true },
      },
      called(r1, 1),
      replied(r1, 1, "x is 1"),
      { type: "RunCompleted", data: { runId: r1, response: "x is 1" } },
    );
    expect(t).toEqual([
      { role: "user", content: "find x" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "search", arguments: '{"q":"x"}' } },
          { id: "c2", type: "function", function: { name: "search", arguments: '{"q":"raw"' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "found" },
      { role: "tool", tool_call_id: "c2", content: "bad json" },
      { role: "assistant", content: "x is 1" },
    ]);
    for (const m of t) expect(ChatMessage.safeParse(m).success).toBe(true);
    expect("tool_calls" in t[4]!).toBe(false);
  });

  it("adds nothing for a reply with neither text nor tool calls, and a warning as a user message", () => {
    const t = transcriptAfter(msg(r1, "hi"), started(r1), called(r1, 0), replied(r1, 0, null), {
      type: "ModelWarned",
      data: { runId: r1, step: 0, text: "say something" },
    });
    expect(t).toEqual([
      { role: "user", content: "hi" },
      { role: "user", content: "say something" },
    ]);
  });

  describe("when interventions arrive during a run", () => {
    it("holds them until the next model call, then delivers them in order", () => {
      const before = [
        msg(r1, "task"),
        started(r1),
        called(r1, 0),
        replied(r1, 0, null, [{ id: "c1", name: "search", arguments: {} }]),
        intervene(r1, "also y"),
        intervene(r1, "and z"),
      ];
      expect(transcriptAfter(...before).map((m) => m.content)).toEqual(["task", null]);
      const after = transcriptAfter(...before, returned(r1, "c1", "r"), called(r1, 1));
      expect(after.slice(2)).toEqual([
        { role: "tool", tool_call_id: "c1", content: "r" },
        { role: "user", content: "also y" },
        { role: "user", content: "and z" },
      ]);
    });

    it("delivers them at the run's end when no model call came", () => {
      const t = transcriptAfter(
        msg(r1, "task"),
        started(r1),
        called(r1, 0),
        replied(r1, 0, "done"),
        intervene(r1, "late"),
        { type: "RunCompleted", data: { runId: r1, response: "done" } },
      );
      expect(t.at(-1)).toEqual({ role: "user", content: "late" });
    });
  });

  describe.each<[string, DomainEvent]>([
    ["stopped", { type: "RunStopped", data: { runId: r1, by: "user" } }],
    ["failed", { type: "RunFailed", data: { runId: r1, reason: "model_error", message: "x" } }],
    ["interrupted", { type: "RunInterrupted", data: { runId: r1 } }],
  ])("when the run is %s with tool calls unfinished", (_how, end) => {
    it("closes each unanswered tool call, then delivers pending interventions, so the next request is valid", () => {
      const t = transcriptAfter(
        msg(r1, "task"),
        started(r1),
        called(r1, 0),
        replied(r1, 0, "working", [
          { id: "c1", name: "search", arguments: {} },
          { id: "c2", name: "call_subordinate", arguments: {} },
        ]),
        returned(r1, "c1", "ok"),
        intervene(r1, "stop that"),
        end,
      );
      expect(t.slice(2)).toEqual([
        { role: "tool", tool_call_id: "c1", content: "ok" },
        { role: "tool", tool_call_id: "c2", content: NOT_RUN_RESULT },
        { role: "user", content: "stop that" },
      ]);
    });
  });

  it("does not close tool calls when the run completes", () => {
    const t = transcriptAfter(
      msg(r1, "t"),
      started(r1),
      called(r1, 0),
      replied(r1, 0, null, [{ id: "c1", name: "response", arguments: {} }]),
      { type: "RunCompleted", data: { runId: r1, response: "x" } },
    );
    expect(t.filter((m) => m.role === "tool")).toEqual([]);
  });

  it("concatenates runs in the order they began", () => {
    const t = transcriptAfter(
      msg(r2, "first"),
      started(r2),
      called(r2, 0),
      replied(r2, 0, "one"),
      { type: "RunCompleted", data: { runId: r2, response: "one" } },
      msg(r1, "second"),
      started(r1),
      called(r1, 0),
      replied(r1, 0, "two"),
    );
    expect(t.map((m) => m.content)).toEqual(["first", "one", "second", "two"]);
  });
});
