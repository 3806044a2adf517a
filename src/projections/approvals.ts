// The `approvals` projection: the tool calls of a context that asked a person's leave, and what was decided.
//
// Requirements:
// - Pure and total: any order of facts folds without throwing; applying a fact twice changes nothing.
// - A decision is single-use: the first decision recorded for a pending approval settles it; a later one
//   changes nothing (the runtime refuses it before it is written, see `decisionRefusal`).
// - A decision is bound to its pending call: one naming another run or tool call changes nothing.
// - When the run ends while an approval is pending (stopped, failed, interrupted, completed), the
//   approval is closed with that ending and can no longer be decided.
import type { RecordedEvent } from "../events/schema.ts";
import { defineProjection, onceByPositionFresh } from "./projection.ts";

export type ApprovalStatus = "pending" | "granted" | "denied" | "closed";

export type ApprovalView = {
  approvalId: string;
  contextId: string;
  runId: string;
  step: number;
  toolCallId: string;
  tool: string;
  arguments: unknown;
  agentNumber: number;
  requestedAt: string;
  /** Global position of the request: approvals are listed in this order. */
  requestedPosition: number;
  /** When the runtime denies it by itself ("timed out"); null when it waits for ever. */
  expiresAt: string | null;
  status: ApprovalStatus;
  decidedAt: string | null;
  /** Who decided (granted or denied); null while pending or when closed by the run's end. */
  by: string | null;
  note: string | null;
  reason: string | null;
  /** How the run ended when that closed the approval undecided. */
  closedBy: "completed" | "stopped" | "failed" | "interrupted" | null;
};

export type ContextApprovals = {
  contextId: string;
  /** In the order they were requested. */
  approvals: ApprovalView[];
  position: number;
};

export const initContextApprovals = (contextId: string): ContextApprovals => ({
  contextId,
  approvals: [],
  position: 0,
});

const update = (
  s: ContextApprovals,
  approvalId: string,
  change: (a: ApprovalView) => ApprovalView,
): ContextApprovals => ({
  ...s,
  approvals: s.approvals.map((a) => (a.approvalId === approvalId ? change(a) : a)),
});

const closeRun = (
  s: ContextApprovals,
  runId: string,
  closedBy: NonNullable<ApprovalView["closedBy"]>,
  at: string,
): ContextApprovals =>
  s.approvals.some((a) => a.runId === runId && a.status === "pending")
    ? {
        ...s,
        approvals: s.approvals.map((a) =>
          a.runId === runId && a.status === "pending" ? { ...a, status: "closed", decidedAt: at, closedBy } : a,
        ),
      }
    : s;

const apply = (s: ContextApprovals, event: RecordedEvent): ContextApprovals => {
  const at = event.recordedAt;
  switch (event.type) {
    case "ApprovalRequested": {
      const d = event.data;
      if (s.approvals.some((a) => a.approvalId === d.approvalId)) return s;
      const view: ApprovalView = {
        approvalId: d.approvalId,
        contextId: d.contextId,
        runId: d.runId,
        step: d.step,
        toolCallId: d.toolCallId,
        tool: d.tool,
        arguments: d.arguments ?? null,
        agentNumber: d.agentNumber,
        requestedAt: at,
        requestedPosition: event.globalPosition,
        expiresAt: d.expiresAt,
        status: "pending",
        decidedAt: null,
        by: null,
        note: null,
        reason: null,
        closedBy: null,
      };
      return { ...s, approvals: [...s.approvals, view] };
    }
    case "ApprovalGranted":
    case "ApprovalDenied": {
      const d = event.data;
      const target = s.approvals.find((a) => a.approvalId === d.approvalId);
      if (!target || target.status !== "pending" || target.runId !== d.runId || target.toolCallId !== d.toolCallId)
        return s;
      return update(s, d.approvalId, (a) =>
        event.type === "ApprovalGranted"
          ? { ...a, status: "granted", decidedAt: at, by: event.data.by, note: event.data.note }
          : { ...a, status: "denied", decidedAt: at, by: event.data.by, reason: event.data.reason },
      );
    }
    case "RunCompleted":
      return closeRun(s, event.data.runId, "completed", at);
    case "RunStopped":
      return closeRun(s, event.data.runId, "stopped", at);
    case "RunFailed":
      return closeRun(s, event.data.runId, "failed", at);
    case "RunInterrupted":
      return closeRun(s, event.data.runId, "interrupted", at);
    default:
      return s;
  }
};

// Only the facts that can change an approval: a context that never asked for one gets a state only when a run ends.
const KEYED_TYPES: ReadonlySet<string> = new Set([
  "ApprovalRequested",
  "ApprovalGranted",
  "ApprovalDenied",
  "RunCompleted",
  "RunStopped",
  "RunFailed",
  "RunInterrupted",
]);

/** Key: the context id (its stream); group: the same, ordered by the first request. */
export const approvalsProjection = defineProjection<ContextApprovals>({
  name: "approvals",
  version: 1,
  keysOf: (event) => (KEYED_TYPES.has(event.type) ? [event.streamId] : []),
  init: initContextApprovals,
  evolve: onceByPositionFresh(apply),
  columns: (key, s) => ({ group: key, order: s.approvals[0]?.requestedPosition ?? 0 }),
});

/** Why a decision for `approvalId` cannot be recorded, or null when it can (the approval is pending). */
export type DecisionRefusal = { reason: "unknown_approval" | "already_decided" | "run_ended"; message: string };

export const decisionRefusal = (approvalId: string, view: ApprovalView | undefined): DecisionRefusal | null => {
  if (!view) return { reason: "unknown_approval", message: `No approval '${approvalId}' was requested.` };
  switch (view.status) {
    case "pending":
      return null;
    case "granted":
    case "denied":
      return {
        reason: "already_decided",
        message: `Approval '${approvalId}' was already ${view.status}${view.by ? ` by ${view.by}` : ""}; a decision is used once.`,
      };
    case "closed":
      return {
        reason: "run_ended",
        message: `Approval '${approvalId}' is closed: its run was ${view.closedBy ?? "ended"} before a decision.`,
      };
  }
};

/** The approvals of these contexts' states that wait for a decision, oldest first. */
export const pendingApprovals = (states: Iterable<ContextApprovals>): ApprovalView[] =>
  [...states]
    .flatMap((s) => s.approvals.filter((a) => a.status === "pending"))
    .sort((a, b) => a.requestedPosition - b.requestedPosition);

/** One approval of these states by id, whatever its status. */
export const findApproval = (states: Iterable<ContextApprovals>, approvalId: string): ApprovalView | undefined => {
  for (const s of states) {
    const a = s.approvals.find((x) => x.approvalId === approvalId);
    if (a) return a;
  }
  return undefined;
};
