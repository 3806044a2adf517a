// The test kit itself: turn builders and per-agent scripts fail loudly; each invariant check catches the broken log it exists for.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import type { ModelRequest } from "../../src/models/port.ts";
import { contextsProjection } from "../../src/projections/contexts.ts";
import { foldEvents } from "../../src/projections/projection.ts";
import {
  callTool,
  checkLogShape,
  checkNoRunOutlivesItsSuperior,
  checkNumbersAndDepths,
  checkOneRunAtATime,
  checkStatus,
  checkTranscript,
  delegate,
  delegationTreeArb,
  fail,
  jsonbStorable,
  lifecycleModel,
  initialModel,
  logBuilder,
  LogMemory,
  malformedTurnArb,
  reply,
  scriptByAgent,
  treeSize,
} from "../../src/testing/index.ts";

const req = (agentNumber: number): ModelRequest => ({
  contextId: `ctx-${agentNumber}`,
  agentNumber,
  profile: "default",
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
  signal: new AbortController().signal,
});

describe("given the turn builders", () => {
  it("sends arguments as the JSON string a model sends, with fresh ids", () => {
    const a = callTool("lookup", { word: "x" });
    const b = delegate({ message: "go", reset: true });
    expect(a.toolCalls![0]).toMatchObject({ name: "lookup", arguments: '{"word":"x"}' });
    expect(b.toolCalls![0]).toMatchObject({ name: "call_subordinate", arguments: '{"message":"go","reset":true}' });
    expect(a.toolCalls![0]!.id).not.toBe(b.toolCalls![0]!.id);
    expect(fail("rate_limited").retryable).toBe(true);
    expect(fail("authentication").retryable).toBe(false);
  });
});

describe("given a script by agent", () => {
  it("answers each agent from its own queue and records the requests per agent", async () => {
    const model = scriptByAgent({ A0: [reply("zero")], A1: [reply("one"), (r) => reply(`again ${r.contextId}`)] });
    expect((await model.call(req(1))).text).toBe("one");
    expect((await model.call(req(0))).text).toBe("zero");
    expect((await model.call(req(1))).text).toBe("again ctx-1");
    expect(model.requestsOf("A1")).toHaveLength(2);
    model.assertConsumed();
  });

  it("fails loudly on a call with no turn left, even when the caller swallowed the error", async () => {
    const model = scriptByAgent({ A0: [reply("only")] });
    await model.call(req(0));
    await model.call(req(2)).catch(() => undefined);
    expect(() => model.assertConsumed()).toThrow(/unexpected model call from A2/);
  });

  it("fails loudly when scripted turns were never requested", () => {
    const model = scriptByAgent({ A1: [reply("never")] });
    expect(() => model.assertConsumed()).toThrow(/A1: 1 of 1 turn\(s\) never requested/);
  });
});

const created = (id: string, parent: { id: string; n: number } | null, n = parent ? parent.n + 1 : 0): DomainEvent => ({
  type: "ContextCreated",
  data: {
    contextId: id as ContextId,
    name: id,
    label: id,
    profile: "default",
    project: null,
    agentNumber: n,
    depth: n,
    kind: parent ? "subordinate" : "root",
    parentContextId: (parent?.id ?? null) as ContextId | null,
    parentAgentNumber: parent?.n ?? null,
    rootContextId: "root" as ContextId,
    slot: parent ? "default" : null,
    modelOverride: null,
  },
});
const started = (runId: string, superior: { contextId: string; runId: string } | null = null): DomainEvent => ({
  type: "RunStarted",
  data: {
    runId: runId as RunId,
    model: "m",
    superior: superior
      ? { contextId: superior.contextId as ContextId, runId: superior.runId as RunId, toolCallId: "t", jobId: null }
      : null,
  },
});
const message = (runId: string, text = "hi"): DomainEvent => ({
  type: "MessageReceived",
  data: { runId: runId as RunId, text, sender: "user" },
});
const completed = (runId: string): DomainEvent => ({
  type: "RunCompleted",
  data: { runId: runId as RunId, response: "ok" },
});
const stopped = (runId: string): DomainEvent => ({ type: "RunStopped", data: { runId: runId as RunId, by: "user" } });
const streamsOf = (events: RecordedEvent[]) => {
  const m = new Map<string, RecordedEvent[]>();
  for (const e of events) m.set(e.streamId, [...(m.get(e.streamId) ?? []), e]);
  return m;
};

describe("given a log where a context runs twice at once", () => {
  it("reports one-run-at-a-time; a well-formed log reports nothing", () => {
    const log = logBuilder();
    for (const e of [
      created("root", null),
      message("r1"),
      started("r1"),
      message("r2"),
      started("r2"),
      completed("r2"),
    ])
      log.add("root", e);
    expect(checkOneRunAtATime("root", log.events).map((v) => v.invariant)).toContain("one-run-at-a-time");
    const good = logBuilder();
    for (const e of [
      created("root", null),
      message("r1"),
      started("r1"),
      completed("r1"),
      message("r2"),
      started("r2"),
    ])
      good.add("root", e);
    expect(checkOneRunAtATime("root", good.events)).toEqual([]);
  });

  it("reports a run that ends twice", () => {
    const log = logBuilder();
    for (const e of [created("root", null), message("r1"), started("r1"), completed("r1"), stopped("r1")])
      log.add("root", e);
    expect(checkOneRunAtATime("root", log.events)[0]?.detail).toMatch(/had already ended/);
  });
});

describe("given a log with a gap in a stream's versions", () => {
  it("reports log-shape", () => {
    const log = logBuilder();
    log.add("root", created("root", null));
    const e = log.add("root", message("r1"));
    const broken = [log.events[0]!, { ...e, streamVersion: 3 }];
    expect(
      checkLogShape(new Map([["root", broken]]))
        .map((v) => v.detail)
        .join(),
    ).toMatch(/versions must be 1..n/);
  });

  it("reports an event rewritten between two reads (append-only)", () => {
    const log = logBuilder();
    log.add("root", created("root", null));
    log.add("root", message("r1"));
    const memory = new LogMemory();
    expect(memory.check(streamsOf(log.events))).toEqual([]);
    const rewritten = [log.events[0]!, { ...log.events[1]!, type: "InterventionReceived" } as RecordedEvent];
    expect(memory.check(new Map([["root", rewritten]]))[0]?.invariant).toBe("append-only");
  });
});

describe("given views whose child is not one below its parent", () => {
  it("reports numbers-and-depths", () => {
    const log = logBuilder();
    log.add("root", created("root", null));
    log.add("kid", created("kid", { id: "root", n: 0 }, 2));
    const views = [...foldEvents(contextsProjection, log.events).values()];
    expect(checkNumbersAndDepths(views).map((v) => v.contextId)).toEqual(["kid"]);
  });
});

describe("given a superior's run that is stopped while its child's run goes on", () => {
  it("reports no-run-outlives-its-superior", () => {
    const log = logBuilder();
    log.add("root", created("root", null));
    log.add("root", message("r1"));
    log.add("root", started("r1"));
    log.add("kid", created("kid", { id: "root", n: 0 }));
    log.add("kid", message("k1"));
    log.add("kid", started("k1", { contextId: "root", runId: "r1" }));
    log.add("root", stopped("r1"));
    expect(checkNoRunOutlivesItsSuperior(log.events).map((v) => v.contextId)).toEqual(["kid", "kid"]);
  });
});

describe("given a projection whose status disagrees with the log", () => {
  it("reports status-follows-lifecycle", () => {
    const log = logBuilder();
    for (const e of [created("root", null), message("r1"), started("r1"), stopped("r1")]) log.add("root", e);
    const view = foldEvents(contextsProjection, log.events).get("root")!;
    expect(checkStatus(view, log.events)).toEqual([]);
    expect(checkStatus({ ...view, status: "idle" }, log.events)[0]?.detail).toMatch(
      /status is "idle", the log says "stopped"/,
    );
  });
});

describe("given a history that lost a message", () => {
  it("reports transcript", () => {
    const log = logBuilder();
    for (const e of [created("root", null), message("r1", "first"), started("r1"), completed("r1")]) log.add("root", e);
    expect(checkTranscript("root", log.events, [{ role: "user", content: "first" }])).toEqual([]);
    expect(checkTranscript("root", log.events, [])[0]?.invariant).toBe("transcript");
  });
});

describe("given the reference model", () => {
  it("stops a caller's running child first and gives a stopped child's caller its next step", () => {
    let m = lifecycleModel.send(initialModel({ maxDepth: 2, modelRetries: 1 }), 0);
    m = lifecycleModel.delegate(m, 0, { kind: "fresh" });
    expect(m.contexts.map((c) => [c.status, c.wait])).toEqual([
      ["running", "child"],
      ["running", "model"],
    ]);
    expect(lifecycleModel.stop(m, 0).contexts.map((c) => c.status)).toEqual(["stopped", "stopped"]);
    expect(lifecycleModel.stop(m, 1).contexts.map((c) => [c.status, c.wait])).toEqual([
      ["running", "model"],
      ["stopped", null],
    ]);
  });
});

describe("given the arbitraries", () => {
  it("generate malformed turns with at least one call, and trees whose size counts every node", () => {
    fc.assert(fc.property(malformedTurnArb(), (t) => Array.isArray(t.toolCalls) && t.toolCalls.length >= 1));
    fc.assert(
      fc.property(delegationTreeArb({ maxDepth: 2, maxChildren: 2 }), (t) => treeSize(t) >= 1 && treeSize(t) <= 7),
    );
    expect([jsonbStorable("fine"), jsonbStorable("a\u0000"), jsonbStorable("\uD800"), jsonbStorable("😀")]).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });
});
