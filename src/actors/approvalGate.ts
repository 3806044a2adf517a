// Tool calls that wait for a person: what the loop asks before a call runs, and where a parked run goes on from.
//
// Requirements:
// - The loop asks `needed` for each call whose tool exists and whose arguments parse; a call that needs
//   approval and has no decision yet is recorded as ApprovalRequested (not ToolCalled: it has not run)
//   and the loop goes on with the reply's other calls, then parks.
// - A parked run goes on from the log alone (any process, after a restart): the last reply's calls that
//   have no result yet, with the decision recorded for each (`parkedStepOf`). Decisions are bound to the
//   approval requested for that call at that step, never to an older call that reused its id. An open call
//   recorded as started (a `parallel` call whose jobs waited) goes on as a call a restart cut off.
// - A denial reaches the model as a repairable tool error with who denied it and why (`deniedText`).
import type { RecordedEvent, ToolCallRecord } from "../events/schema.ts";
import type { Decision } from "../tools/approval.ts";

export { type ApprovalPort, type Decision, deniedText } from "../tools/approval.ts";

/** Where a parked run goes on: the step whose calls waited, its reply, and the decisions for the calls still unanswered. */
export type ParkedStep = {
  step: number;
  text: string | null;
  /** Every call of that reply (for the repeated-reply check). */
  replyCalls: ToolCallRecord[];
  /** The calls of that reply with no result yet, in order. */
  open: ToolCallRecord[];
  /** Open calls recorded as started (ToolCalled): a restart cut them off while they ran (a `parallel` call waiting on its jobs). */
  started: ReadonlySet<string>;
  /** The decision for each open call, by tool call id. */
  decisions: ReadonlyMap<string, Decision>;
};

/** The last reply of run `runId` in these facts and what is left of it, or null when it has none. */
export const parkedStepOf = (facts: readonly RecordedEvent[], runId: string): ParkedStep | null => {
  let last: { step: number; text: string | null; calls: ToolCallRecord[] } | null = null;
  const answered = new Set<string>();
  const started = new Set<string>();
  const requested = new Map<string, string>(); // approval id -> tool call id, at the last step
  const decisions = new Map<string, Decision>();
  for (const f of facts) {
    if (!("runId" in f.data) || f.data.runId !== runId) continue;
    switch (f.type) {
      case "ModelReplied":
        last = { step: f.data.step, text: f.data.text, calls: f.data.toolCalls };
        answered.clear();
        started.clear();
        requested.clear();
        decisions.clear();
        break;
      case "ToolCalled":
        started.add(f.data.toolCallId);
        break;
      case "ToolReturned":
      case "ToolFailed":
        answered.add(f.data.toolCallId);
        break;
      case "ApprovalRequested":
        // A job's request is its job's to wait for (parallelJobs.ts), not a call of the reply.
        if (last && f.data.step === last.step && f.data.jobId === undefined)
          requested.set(f.data.approvalId, f.data.toolCallId);
        break;
      case "ApprovalGranted":
      case "ApprovalDenied": {
        const callId = requested.get(f.data.approvalId);
        if (callId === undefined || callId !== f.data.toolCallId) break;
        decisions.set(
          callId,
          f.type === "ApprovalGranted"
            ? { granted: true, by: f.data.by }
            : { granted: false, by: f.data.by, reason: f.data.reason },
        );
        break;
      }
      default:
        break;
    }
  }
  if (!last) return null;
  const open = last.calls.filter((c) => !answered.has(c.id));
  return {
    step: last.step,
    text: last.text,
    replyCalls: last.calls,
    open,
    started: new Set(open.filter((c) => started.has(c.id)).map((c) => c.id)),
    decisions,
  };
};
