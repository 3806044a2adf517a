// The approval port of one run: the policy every call of the run asks (the loop's and its `parallel` jobs'),
// and a job's request and wait for its decision.
//
// Requirements:
// - Calls need approval as the tool says, or as the runtime's, the profile's and the project's lists say.
// - A job's request is ApprovalRequested naming the job (`jobId`; its tool call id is the job id), appended at
//   once so a person can decide while the other jobs run. It expires after `approvals.timeoutMs` when that is
//   set: the runtime then denies it ("timed out"), as it does for a parked run's calls.
// - A job waits until the machine no longer counts its approval as pending (a decision recorded here or
//   read from another process, or the run's end), then reads the decision from the log.
import { setTimeout as sleep } from "node:timers/promises";
import { waitFor } from "xstate";
import { asApprovalId } from "../events/ids.ts";
import { callNeedsApproval, type Decision } from "../tools/approval.ts";
import type { RunApprovals } from "../tools/delegator.ts";
import type { RunHandle } from "../actors/runHandle.ts";
import type { ContextSession } from "./contextSession.ts";
import { approvalListFor } from "./approvalPolicy.ts";
import { type Approvals, TIMED_OUT, TIMEOUT_DECIDER } from "./approvals.ts";
import type { EventStore } from "../events/store.ts";
import type { RecordedEvent } from "../events/schema.ts";
import type { Configuration } from "./configuration.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** What a run's approval port uses of the runtime. */
export type RunApprovalParts = {
  readonly config: Configuration;
  readonly store: EventStore;
  readonly lifecycle: Lifecycle;
  readonly approvals: Approvals;
};

/** The run's approval port (see the requirements above). */
export const runApprovals = (parts: RunApprovalParts, ac: ContextSession, handle: RunHandle): RunApprovals => {
  const view = ac.view;
  const list = approvalListFor(
    parts.config.approvals,
    parts.config.profiles,
    parts.config.options.projects,
    view.profile,
    view.project,
  );
  const { timeoutMs } = parts.config.approvals;
  const request = () => ({
    approvalId: parts.config.clock.uuid(),
    expiresAt: timeoutMs === null ? null : new Date(parts.config.clock.now().getTime() + timeoutMs).toISOString(),
  });
  // The stream version each of this run's job requests was recorded at: a wait starts once the machine has it.
  const requestedAt = new Map<string, { version: number; expiresAt: string | null }>();
  return {
    needed: (tool, input, toolCallId) =>
      callNeedsApproval(
        tool,
        input,
        { contextId: ac.id, runId: handle.runId, agentNumber: view.agentNumber, profile: view.profile, toolCallId },
        list,
      ),
    request,
    async requestForJob({ jobId, tool, arguments: args, step }) {
      const { approvalId, expiresAt } = request();
      const data = {
        approvalId: asApprovalId(approvalId),
        runId: handle.runId,
        step,
        toolCallId: jobId,
        tool,
        arguments: args,
        contextId: ac.id,
        agentNumber: view.agentNumber,
        expiresAt,
        jobId,
      };
      const [recorded] = await ac.writer.append([{ type: "ApprovalRequested", data }], {
        correlationId: handle.correlationId,
        causationId: jobId,
      });
      requestedAt.set(approvalId, { version: recorded?.streamVersion ?? 0, expiresAt });
      return approvalId;
    },
    async decisionOn(approvalId, signal) {
      const mine = requestedAt.get(approvalId);
      const stopTimer = new AbortController();
      const onAbort = () => stopTimer.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      if (mine?.expiresAt) void expireLater(parts, approvalId, mine.expiresAt, stopTimer.signal);
      try {
        await waitFor(
          ac.actor,
          (s) => s.context.version >= (mine?.version ?? 0) && !s.context.jobApprovals.includes(approvalId),
          { timeout: Infinity, signal },
        );
      } finally {
        stopTimer.abort();
        signal.removeEventListener("abort", onAbort);
      }
      const decision = decisionIn(await parts.store.readStream(ac.id), approvalId);
      if (!decision) throw new Error("The run ended before a decision on this call.");
      return decision;
    },
  };
};

const decisionIn = (facts: readonly RecordedEvent[], approvalId: string): Decision | null => {
  for (const f of facts) {
    if (f.type === "ApprovalGranted" && f.data.approvalId === approvalId) return { granted: true, by: f.data.by };
    if (f.type === "ApprovalDenied" && f.data.approvalId === approvalId)
      return { granted: false, by: f.data.by, reason: f.data.reason };
  }
  return null;
};

/** Denies a job's request once it has waited past `expiresAt` (unless decided first). */
const expireLater = async (
  parts: RunApprovalParts,
  approvalId: string,
  expiresAt: string,
  signal: AbortSignal,
): Promise<void> => {
  const wait = Math.max(0, Date.parse(expiresAt) - parts.config.clock.now().getTime());
  try {
    await (parts.config.clock.sleep ? parts.config.clock.sleep(wait, signal) : sleep(wait, undefined, { signal }));
  } catch {
    return;
  }
  if (signal.aborted || parts.lifecycle.closed) return;
  await parts.approvals
    .decide(approvalId, { granted: false, by: TIMEOUT_DECIDER, reason: TIMED_OUT })
    .catch(() => undefined);
};
