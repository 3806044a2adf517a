// The approvals fold: pending and decided approvals, and the rules "single-use, bound to the pending call,
// refused after the run ended", by example and as properties over generated logs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ApprovalId, ContextId, RunId } from "../../src/events/ids.ts";
import type { DomainEvent, RecordedEvent } from "../../src/events/schema.ts";
import {
  approvalsProjection,
  decisionRefusal,
  findApproval,
  initContextApprovals,
  pendingApprovals,
  type ApprovalView,
  type ContextApprovals,
} from "../../src/projections/approvals.ts";
import { openProjections } from "../../src/projections/engine.ts";
import { foldEvents } from "../../src/projections/projection.ts";
import { logBuilder } from "../../src/testing/recorded.ts";
import { freshPgliteStore } from "../support/pglite.ts";

const A1 = "ctx-a1" as ContextId;
const ROOT = "ctx-a0" as ContextId;
const r1 = "run-1" as RunId;
const r2 = "run-2" as RunId;
const ID1 = "6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b" as ApprovalId;
const ID2 = "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d" as ApprovalId;

const requested = (approvalId: ApprovalId, runId: RunId, toolCallId: string): DomainEvent => ({
  type: "ApprovalRequested",
  data: {
    approvalId,
    runId,
    step: 1,
    toolCallId,
    tool: "deploy",
    arguments: { env: "prod" },
    contextId: A1,
    agentNumber: 1,
    expiresAt: null,
  },
});
const granted = (approvalId: ApprovalId, runId: RunId, toolCallId: string, by = "alice"): DomainEvent => ({
  type: "ApprovalGranted",
  data: { approvalId, runId, toolCallId, by, note: "fine" },
});
const denied = (approvalId: ApprovalId, runId: RunId, toolCallId: string, reason = "too risky"): DomainEvent => ({
  type: "ApprovalDenied",
  data: { approvalId, runId, toolCallId, by: "bob", reason },
});
const created: DomainEvent = {
  type: "ContextCreated",
  data: {
    contextId: A1,
    name: "A1",
    label: "A1",
    profile: "default",
    project: null,
    agentNumber: 1,
    depth: 1,
    kind: "subordinate",
    parentContextId: ROOT,
    parentAgentNumber: 0,
    rootContextId: ROOT,
    slot: null,
    modelOverride: null,
  },
};

const stateAfter = (...events: DomainEvent[]): ContextApprovals => {
  const log = logBuilder();
  for (const e of events) log.add(A1, e);
  return foldEvents(approvalsProjection, log.events).get(A1)!;
};
const only = (s: ContextApprovals, id: ApprovalId): ApprovalView => findApproval([s], id)!;

describe("given a context whose run asked for approval of a tool call", () => {
  it("when nothing is decided yet, then the approval is pending", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"));
    expect(pendingApprovals([s]).map((a) => [a.approvalId, a.tool, a.toolCallId, a.arguments])).toEqual([
      [ID1, "deploy", "call-1", { env: "prod" }],
    ]);
    expect(decisionRefusal(ID1, only(s, ID1))).toBeNull();
  });

  it("when it is granted, then it is no longer pending and records who granted it and the note", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"), granted(ID1, r1, "call-1"));
    expect(only(s, ID1)).toMatchObject({ status: "granted", by: "alice", note: "fine", reason: null });
    expect(pendingApprovals([s])).toEqual([]);
  });

  it("when it is denied and then granted, then the first decision stands and a further one is refused", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"), denied(ID1, r1, "call-1"), granted(ID1, r1, "call-1"));
    expect(only(s, ID1)).toMatchObject({ status: "denied", by: "bob", reason: "too risky" });
    expect(decisionRefusal(ID1, only(s, ID1))).toMatchObject({ reason: "already_decided" });
  });

  it("when a decision names another tool call or run, then it changes nothing", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"), granted(ID1, r1, "call-2"), granted(ID1, r2, "call-1"));
    expect(only(s, ID1).status).toBe("pending");
  });

  it("when the run is stopped while it waits, then it is closed and a decision is refused", () => {
    const s = stateAfter(
      created,
      requested(ID1, r1, "call-1"),
      { type: "RunStopped", data: { runId: r1, by: "user" } },
      granted(ID1, r1, "call-1"),
    );
    expect(only(s, ID1)).toMatchObject({ status: "closed", closedBy: "stopped", by: null });
    expect(decisionRefusal(ID1, only(s, ID1))).toMatchObject({ reason: "run_ended" });
  });

  it("when another run of the context ends, then the pending approval of this run stays pending", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"), {
      type: "RunCompleted",
      data: { runId: r2, response: "done" },
    });
    expect(only(s, ID1).status).toBe("pending");
  });

  it("when an id was never requested, then a decision for it is refused as unknown", () => {
    const s = stateAfter(created, requested(ID1, r1, "call-1"));
    expect(decisionRefusal(ID2, findApproval([s], ID2))).toMatchObject({ reason: "unknown_approval" });
  });

  it("when two calls of one reply wait, then both are listed in the order they were requested", () => {
    const s = stateAfter(created, requested(ID2, r1, "call-1"), requested(ID1, r1, "call-2"));
    expect(pendingApprovals([s]).map((a) => a.approvalId)).toEqual([ID2, ID1]);
  });
});

// Generated logs of one context: requests, decisions and run ends over small pools, so they refer to each other.
const ids = [ID1, ID2];
const runs = [r1, r2];
const calls = ["call-1", "call-2"];
const factArb: fc.Arbitrary<DomainEvent> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...runs), fc.constantFrom(...calls))
    .map(([a, r, c]) => requested(a, r, c)),
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...runs), fc.constantFrom(...calls))
    .map(([a, r, c]) => granted(a, r, c)),
  fc
    .tuple(fc.constantFrom(...ids), fc.constantFrom(...runs), fc.constantFrom(...calls))
    .map(([a, r, c]) => denied(a, r, c)),
  fc.constantFrom(...runs).map((runId): DomainEvent => ({ type: "RunStopped", data: { runId, by: "user" } })),
  fc.constantFrom(...runs).map((runId): DomainEvent => ({ type: "RunCompleted", data: { runId, response: "done" } })),
  fc.constantFrom(...runs).map((runId): DomainEvent => ({ type: "RunInterrupted", data: { runId } })),
);
const logArb = fc.array(factArb, { maxLength: 14 }).map((facts) => {
  const log = logBuilder();
  for (const f of [created, ...facts]) log.add(A1, f);
  return log.events;
});
const fold = (events: readonly RecordedEvent[]) =>
  foldEvents(approvalsProjection, events).get(A1) ?? initContextApprovals(A1);

describe("given any log of requests, decisions and run ends", () => {
  it("then an approval that left 'pending' never changes again (a decision is single-use)", () => {
    fc.assert(
      fc.property(logArb, (events) => {
        const settled = new Map<string, ApprovalView>();
        for (let n = 1; n <= events.length; n++) {
          for (const a of fold(events.slice(0, n)).approvals) {
            const before = settled.get(a.approvalId);
            if (before) expect(a).toEqual(before);
            else if (a.status !== "pending") settled.set(a.approvalId, a);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it("then every decision that took effect names the run and tool call of its request", () => {
    fc.assert(
      fc.property(logArb, (events) => {
        for (const a of fold(events).approvals.filter((x) => x.status === "granted" || x.status === "denied")) {
          const decision = events.find(
            (e) =>
              (e.type === "ApprovalGranted" || e.type === "ApprovalDenied") &&
              e.data.approvalId === a.approvalId &&
              e.recordedAt === a.decidedAt,
          );
          expect(decision).toBeDefined();
          expect(decision!.data).toMatchObject({ runId: a.runId, toolCallId: a.toolCallId });
        }
      }),
      { numRuns: 200 },
    );
  });

  it("then no approval of a run that ended is pending, and none is decided after its run ended", () => {
    fc.assert(
      fc.property(logArb, (events) => {
        const s = fold(events);
        for (const a of s.approvals) {
          const end = events.find(
            (e) =>
              (e.type === "RunStopped" || e.type === "RunCompleted" || e.type === "RunInterrupted") &&
              e.data.runId === a.runId &&
              e.globalPosition > a.requestedPosition,
          );
          if (!end) continue;
          expect(a.status).not.toBe("pending");
          if (a.status === "granted" || a.status === "denied") expect(a.decidedAt! < end.recordedAt).toBe(true);
          if (a.status === "closed") expect(decisionRefusal(a.approvalId, a)?.reason).toBe("run_ended");
        }
      }),
      { numRuns: 200 },
    );
  });

  it("then folding it twice, or in two halves, gives the state of folding it once", () => {
    fc.assert(
      fc.property(logArb, fc.nat(), (events, cut) => {
        const once = fold(events);
        const k = events.length === 0 ? 0 : cut % events.length;
        const halves = foldEvents(
          approvalsProjection,
          events.slice(k),
          foldEvents(approvalsProjection, events.slice(0, k)),
        );
        expect(halves.get(A1) ?? initContextApprovals(A1)).toEqual(once);
        expect(
          foldEvents(approvalsProjection, events, foldEvents(approvalsProjection, events)).get(A1) ??
            initContextApprovals(A1),
        ).toEqual(once);
      }),
      { numRuns: 100 },
    );
  });
});

describe("given approvals recorded in a PGlite log", () => {
  it("when the stored projection is queried, then it finds the context holding an id and lists only contexts that asked", async () => {
    const store = await freshPgliteStore();
    try {
      const other = "ctx-b1" as ContextId;
      await store.append(
        A1,
        [created, requested(ID1, r1, "call-1"), granted(ID1, r1, "call-1"), requested(ID2, r2, "call-2")],
        { expectedVersion: "any" },
      );
      await store.append(other, [{ type: "RunCompleted", data: { runId: "run-9" as RunId, response: "ok" } }], {
        expectedVersion: "any",
      });
      const projections = await openProjections(store);
      expect((await projections.approvals.holding(ID2))?.contextId).toBe(A1);
      expect(await projections.approvals.holding("00000000-0000-4000-8000-000000000000")).toBeNull();
      expect(pendingApprovals(await projections.approvals.of()).map((a) => a.approvalId)).toEqual([ID2]);
      expect(await projections.approvals.of([other])).toEqual([]);
      expect((await projections.approvals.of([A1])).map((s) => s.approvals.map((a) => a.status))).toEqual([
        ["granted", "pending"],
      ]);
    } finally {
      await store.close();
    }
  });
});
