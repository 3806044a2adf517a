// Example tests of the contexts fold: the lifecycle rules of DESIGN §4.
import { describe, expect, it } from "vitest";
import type { ContextId, RunId } from "../../src/events/ids.ts";
import type { DomainEvent } from "../../src/events/schema.ts";
import { contextsProjection, INTERRUPTED_MESSAGE, type ContextView } from "../../src/projections/contexts.ts";
import { foldEvents } from "../../src/projections/projection.ts";
import { logBuilder } from "../../src/testing/recorded.ts";

const A0 = "ctx-a0" as ContextId;
const r1 = "run-1" as RunId;
const r2 = "run-2" as RunId;

const created: DomainEvent = {
  type: "ContextCreated",
  data: {
    contextId: A0,
    name: "A0",
    label: "A0",
    profile: "default",
    project: "alpha",
    agentNumber: 0,
    depth: 0,
    kind: "root",
    parentContextId: null,
    parentAgentNumber: null,
    rootContextId: A0,
    slot: null,
    modelOverride: null,
  },
};

const viewAfter = (...events: DomainEvent[]): ContextView => {
  const log = logBuilder();
  for (const e of [created, ...events]) log.add(A0, e);
  return foldEvents(contextsProjection, log.events).get(A0)!;
};

const start = (runId: RunId): DomainEvent[] => [
  { type: "MessageReceived", data: { runId, text: "task", sender: "user" } },
  { type: "RunStarted", data: { runId, model: "m", superior: null } },
];

describe("the contexts fold", () => {
  it("shows a new context as idle, unpaused, with its creation facts", () => {
    const v = viewAfter();
    expect(v).toMatchObject({
      id: A0,
      name: "A0",
      label: "A0",
      project: "alpha",
      status: "idle",
      paused: false,
      failure: null,
      lastRun: null,
      currentRunId: null,
      version: 1,
      position: 1,
    });
    expect(v.createdAt).toBe(v.updatedAt);
  });

  it("is running with the current run id after RunStarted", () => {
    const v = viewAfter(...start(r1));
    expect(v).toMatchObject({
      status: "running",
      currentRunId: r1,
      lastRun: { runId: r1, status: "running", endedAt: null },
    });
  });

  it("is idle after RunCompleted, keeping the response of the last run", () => {
    const v = viewAfter(...start(r1), { type: "RunCompleted", data: { runId: r1, response: "done" } });
    expect(v).toMatchObject({
      status: "idle",
      currentRunId: null,
      failure: null,
      lastRun: { runId: r1, status: "completed", response: "done" },
    });
    expect(v.lastRun!.endedAt).toBe(v.updatedAt);
    expect(v.version).toBe(4);
  });

  it("is stopped after RunStopped, and the stop clears a pause", () => {
    const v = viewAfter(
      ...start(r1),
      { type: "ContextPaused", data: { runId: r1 } },
      { type: "RunStopped", data: { runId: r1, by: "user" } },
    );
    expect(v).toMatchObject({ status: "stopped", paused: false, currentRunId: null, lastRun: { status: "stopped" } });
  });

  it("is failed with the reason and message after RunFailed", () => {
    const v = viewAfter(...start(r1), {
      type: "RunFailed",
      data: { runId: r1, reason: "model_error", message: "502" },
    });
    expect(v).toMatchObject({
      status: "failed",
      failure: { reason: "model_error", message: "502" },
      lastRun: { status: "failed" },
    });
  });

  it("is failed with reason interrupted after RunInterrupted", () => {
    const v = viewAfter(...start(r1), { type: "RunInterrupted", data: { runId: r1 } });
    expect(v).toMatchObject({
      status: "failed",
      failure: { reason: "interrupted", message: INTERRUPTED_MESSAGE },
      lastRun: { status: "interrupted" },
    });
  });

  it("runs again after a failure, and the new run clears the failure", () => {
    const v = viewAfter(
      ...start(r1),
      { type: "RunFailed", data: { runId: r1, reason: "internal", message: "x" } },
      ...start(r2),
    );
    expect(v).toMatchObject({
      status: "running",
      failure: null,
      currentRunId: r2,
      lastRun: { runId: r2, status: "running" },
    });
  });

  describe("when paused", () => {
    const paused: DomainEvent[] = [...start(r1), { type: "ContextPaused", data: { runId: r1 } }];
    it("sets the flag without changing the status", () => {
      expect(viewAfter(...paused)).toMatchObject({ status: "running", paused: true });
    });
    it.each<[string, DomainEvent]>([
      ["a resume", { type: "ContextResumed", data: { runId: r1 } }],
      ["a new message", { type: "MessageReceived", data: { runId: r2, text: "more", sender: "user" } }],
      ["an intervention", { type: "InterventionReceived", data: { runId: r1, text: "more" } }],
      ["a stop", { type: "RunStopped", data: { runId: r1, by: "superior" } }],
    ])("is cleared by %s", (_what, event) => {
      expect(viewAfter(...paused, event).paused).toBe(false);
    });
    it("is not cleared by a model call", () => {
      expect(
        viewAfter(...paused, { type: "ModelCalled", data: { runId: r1, step: 0, attempt: 0, model: "m" } }).paused,
      ).toBe(true);
    });
  });

  it("renames (name and label) and sets the model override", () => {
    const v = viewAfter(
      { type: "ContextRenamed", data: { name: "n", label: "l" } },
      { type: "ModelOverrideSet", data: { modelOverride: { preset: "fast" } } },
    );
    expect(v).toMatchObject({ name: "n", label: "l", modelOverride: { preset: "fast" }, version: 3 });
  });

  it("records a terminal event of a run it never saw start as the last run", () => {
    const v = viewAfter({ type: "RunStopped", data: { runId: r1, by: "user" } });
    expect(v).toMatchObject({ status: "stopped", lastRun: { runId: r1, status: "stopped", startedAt: null } });
  });
});
